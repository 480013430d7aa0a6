// Small DOM and formatting helpers. Text from the store is only ever set as text
// (textContent), never parsed as HTML.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "value") el.value = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

// Times are stored in UTC; naive conversation times were taken as UTC wall-clock times, so
// they are shown in UTC too (converting them to the browser's zone would move them).
const DATE = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", year: "numeric", month: "short", day: "numeric" });
const DATETIME = new Intl.DateTimeFormat(undefined, {
  timeZone: "UTC", year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
});

export function fmtTime(iso, { date = false } = {}) {
  if (!iso) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const midnight = t.getUTCHours() === 0 && t.getUTCMinutes() === 0 && t.getUTCSeconds() === 0;
  return (date || midnight ? DATE : DATETIME).format(t);
}

export function timeEl(iso, opts) {
  return iso ? h("time", { datetime: iso, title: iso }, fmtTime(iso, opts)) : null;
}

export function fmtScore(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  const a = Math.abs(x);
  if (a !== 0 && (a < 0.001 || a >= 10000)) return x.toExponential(2);
  return a >= 100 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
}

export function fmtMs(ms) {
  if (ms === undefined || ms === null) return "";
  return ms >= 100 ? `${Math.round(ms)} ms` : ms >= 1 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n >= 10 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

export function shortId(id) {
  return id ? id.slice(0, 8) : "";
}

export function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

export function kindBadge(kind) {
  return h("span", { class: `badge kind-${kind}` }, kind);
}

export function chips(values, cls = "chip") {
  return (values || []).map((v) => h("span", { class: cls }, v));
}

// A long text as its first `limit` characters (cut at a space when one is near) and a button
// that shows all of it, and hides it again; `wrap` puts the shown text in a link or the like.
export const CLIP_CHARS = 600;

export function clipped(text, wrap = (node) => node, limit = CLIP_CHARS) {
  if (text.length <= limit) return [wrap(text)];
  let cut = text.lastIndexOf(" ", limit);
  if (cut < limit * 0.8) cut = limit;
  if (/[\ud800-\udbff]/.test(text[cut - 1])) cut -= 1; // never half of a surrogate pair
  const short = `${text.slice(0, cut).trimEnd()}…`;
  const shown = h("span", { class: "clipped" }, short);
  const more = `show all ${text.length.toLocaleString()} characters`;
  const button = h("button", { type: "button", class: "clip-toggle", "aria-expanded": "false" }, more);
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    shown.textContent = open ? text : short;
    button.textContent = open ? "show less" : more;
    button.setAttribute("aria-expanded", String(open));
  });
  return [wrap(shown), " ", button];
}

// A message box for a view: error (the API's message), or info.
export function notice(text, kind = "error") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

// Past its expiry (out of search and lists, readable by id until purged), as `engram list` marks it.
export const expired = (entry) => Boolean(entry.expires_at) && Date.parse(entry.expires_at) <= Date.now();

// A turn's text without the "Speaker: " it is stored with, where the speaker is shown beside it
// (the context lines read "Priya Priya: Hi Marco!").
export function spoken(text, speaker) {
  const prefix = `${speaker || ""}: `;
  return speaker && text.startsWith(prefix) ? text.slice(prefix.length) : text;
}

// "zh" for a text with Chinese characters (screen readers and fonts read it as Chinese; the
// page itself is lang="en"), else undefined: no attribute.
export const langOf = (text) => (/[\u3400-\u9fff]/.test(text || "") ? "zh" : undefined);
