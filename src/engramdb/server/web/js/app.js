// The page: which view the address names, the namespace picker, and the API key (asked for
// only when the server answers 401; kept in this browser's local storage, never in the URL).

import { forgetEntries, get, session } from "./api.js";
import { h, replace } from "./dom.js";
import { renderBrowse } from "./browse.js";
import { renderEntry } from "./entry.js";
import { renderOverview } from "./overview.js";
import { forgetLastSearch, renderSearch, setMaxK } from "./search.js";
import { renderSession, renderSessions } from "./sessions.js";
import { navigate, onNavigate, params } from "./url.js";

const VIEWS = { search: renderSearch, browse: renderBrowse, entry: renderEntry, sessions: renderSessions,
  session: renderSession, overview: renderOverview };
const NAV = { search: "search", browse: "browse", entry: "browse", sessions: "sessions", session: "sessions", overview: "overview" };

const $ = (id) => document.getElementById(id);
let ready = false;
let generation = 0;

function banner(text) {
  const el = $("banner");
  el.textContent = text || "";
  el.hidden = !text;
}

function showKeyPanel(message) {
  $("key-panel").hidden = false;
  const msg = $("key-message");
  msg.textContent = message || "";
  msg.hidden = !message;
  $("key-input").value = "";
  $("key-input").focus();
}

function hideKeyPanel() {
  $("key-panel").hidden = true;
}

function keyButton() {
  $("key-button").textContent = session.key ? "Key ✓" : "Key";
  $("key-button").title = session.key ? "An API key is saved in this browser" : "Paste an API key";
}

let notice = ""; // said once the view has drawn (the drawing clears the banner first)

async function fillNamespaces() {
  const select = $("namespace");
  const rows = await get("/v1/namespaces");
  const listed = rows.map((r) => r.namespace);
  // A key lists every namespace it may use: one it may not (a link's ns=, saved) is dropped,
  // or every later visit failed with 403.
  if (session.key && session.namespace && !listed.includes(session.namespace)) {
    notice = `This key may not use namespace ${JSON.stringify(session.namespace)}; showing its own.`;
    session.namespace = "";
  }
  // Without a choice, requests name no namespace: the server's default, or the key's own. A
  // key with several namespaces must name one: there is no "key's namespace" to offer.
  let implicit = session.key ? "key's namespace" : "default";
  if (session.key && rows.length > 1) {
    implicit = null;
    if (!session.namespace) session.namespace = rows[0].namespace;
  } else if (!session.namespace && session.key) {
    try {
      const probe = await get("/v1/memories", { limit: 1 });
      if (probe.results.length) implicit = probe.results[0].namespace;
    } catch (exc) {
      if (exc.status !== 400 || !rows.length) throw exc;
      session.namespace = rows[0].namespace; // a key with several namespaces must name one
      implicit = null;
    }
  }
  const names = rows.map((r) => r.namespace);
  const options = implicit === null ? [] : [h("option", { value: "" }, implicit)];
  for (const r of rows) {
    if (r.namespace !== implicit) options.push(h("option", { value: r.namespace }, `${r.namespace} (${r.count.toLocaleString()})`));
  }
  if (session.namespace && !names.includes(session.namespace)) options.push(h("option", { value: session.namespace }, session.namespace));
  replace(select, options);
  select.value = session.namespace === implicit ? "" : session.namespace;
  $("ns-pick").hidden = false;
}

async function render(p) {
  const ns = p.get("ns");
  if (ns !== null && ns !== session.namespace) {
    session.namespace = ns;
    forgetEntries();
    forgetLastSearch();
    if (ready) await fillNamespaces().catch(() => {}); // checked before the view asks in it
  }
  const view = VIEWS[p.get("view")] ? p.get("view") : "search";
  document.querySelectorAll(".tabs a").forEach((a) => {
    const current = a.dataset.nav === NAV[view];
    a.classList.toggle("active", current);
    if (current) a.setAttribute("aria-current", "page"); // what a screen reader says of the open view
    else a.removeAttribute("aria-current");
  });
  document.querySelectorAll(".view").forEach((el) => { el.hidden = el.id !== `view-${view}`; });
  if (!ready) return;
  banner(notice);
  notice = "";
  const mine = ++generation;
  const root = $(`view-${view}`);
  root.setAttribute("aria-busy", "true");
  // Each drawing gets a fresh container: one overtaken by a newer one (a quick second
  // search) finishes into a detached element instead of over the newer one.
  const holder = h("div", { class: "view-body" });
  replace(root, holder);
  try {
    await VIEWS[view](holder, p);
  } catch (exc) {
    if (mine === generation) banner(exc.display || String(exc));
  } finally {
    if (mine === generation) {
      root.setAttribute("aria-busy", "false");
      document.body.dataset.ready = view; // the views have drawn (tests wait for this)
    }
  }
}

async function boot() {
  ready = false;
  keyButton();
  try {
    setMaxK((await get("/healthz")).max_k); // the k field's limit follows the server's --max-k
  } catch {
    // an old server or a store down: the k field keeps 100 and the search says what is wrong
  }
  try {
    await fillNamespaces();
  } catch (exc) {
    if (exc.status === 401) {
      $("ns-pick").hidden = true;
      // A refused key is not kept: it showed "Key ✓", and after Close every view stayed blank.
      const refused = session.key;
      session.key = "";
      keyButton();
      showKeyPanel(refused ? `${exc.message} (the key was not saved)` : "");
      banner("This server needs an API key: press Key to give one.");
      document.body.dataset.ready = "key";
      return;
    }
    banner(exc.display || String(exc));
  }
  hideKeyPanel();
  ready = true;
  await render(params());
}

session.onUnauthorized((exc) => {
  if (ready) showKeyPanel(exc.message);
});

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("key-input").value.trim();
  if (!value) return;
  session.key = value;
  forgetEntries();
  forgetLastSearch();
  boot();
});
$("key-forget").addEventListener("click", () => {
  session.key = "";
  session.namespace = "";
  forgetEntries();
  forgetLastSearch();
  boot();
});
$("key-cancel").addEventListener("click", hideKeyPanel);
$("key-button").addEventListener("click", () => showKeyPanel(""));
$("namespace").addEventListener("change", (event) => {
  session.namespace = event.target.value;
  forgetEntries();
  forgetLastSearch();
  const p = params();
  p.delete("ns");
  if (session.namespace) p.set("ns", session.namespace);
  const view = p.get("view");
  if (view === "entry" || view === "session") { p.delete("id"); p.delete("session"); p.set("view", view === "entry" ? "browse" : "sessions"); }
  p.delete("cursor");
  p.delete("page");
  navigate(`/?${p.toString()}`.replace(/\?$/, ""));
});
document.querySelectorAll("[data-nav]").forEach((a) => a.addEventListener("click", (event) => {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  const target = a.dataset.nav;
  navigate(target === "search" ? {} : { view: target });
}));

onNavigate(render);
boot();
