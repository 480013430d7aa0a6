// The page's state lives in its address: /?q=…&k=5 is a search, /?view=entry&id=… an entry.
// Links are real links (open in a new tab works); clicks on them are handled in the page.

import { session } from "./api.js";
import { h } from "./dom.js";

const handlers = [];

export function params() {
  return new URLSearchParams(window.location.search);
}

export function href(values) {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (Array.isArray(value)) value.filter((v) => v !== "").forEach((v) => q.append(name, v));
    else if (value !== undefined && value !== null && value !== "" && value !== false) q.set(name, value === true ? "1" : String(value));
  }
  if (session.namespace && !q.has("ns")) q.set("ns", session.namespace); // a link names its namespace
  const text = q.toString();
  return text ? `/?${text}` : "/";
}

export function onNavigate(fn) {
  handlers.push(fn);
}

export function navigate(values, { replace = false } = {}) {
  const target = typeof values === "string" ? values : href(values);
  if (target !== window.location.pathname + window.location.search) {
    window.history[replace ? "replaceState" : "pushState"](null, "", target);
  }
  handlers.forEach((fn) => fn(params()));
}

// A link inside the page: a plain click navigates without reloading.
export function link(values, ...children) {
  const target = typeof values === "string" ? values : href(values);
  return h("a", {
    href: target,
    onclick: (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      navigate(target);
    },
  }, ...children);
}

export function entryLink(id, ...children) {
  return link({ view: "entry", id }, ...(children.length ? children : [id]));
}

export function sessionLink(sessionId, ...children) {
  return link({ view: "session", session: sessionId }, ...(children.length ? children : [sessionId]));
}

window.addEventListener("popstate", () => handlers.forEach((fn) => fn(params())));
