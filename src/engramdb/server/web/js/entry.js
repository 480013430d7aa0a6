// One entry: every field, its history (ADD / UPDATE / DELETE with what changed), and the
// curation actions — edit text, metadata and expiry; supersede with a new text; delete.
// Each action is one API call made with the user's key; a refusal shows the API's message.

import { api, forgetEntry, get, listAll } from "./api.js";
import { chips, expired, h, kindBadge, langOf, notice, replace, timeEl } from "./dom.js";
import { derivedFrom, provenance } from "./evidence.js";
import { forgetLastSearch } from "./search.js";
import { entryLink, link, navigate, sessionLink } from "./url.js";

const FIELDS = ["text", "kind", "timestamp", "timestamp_end", "persons", "entities", "keywords", "location", "topic",
  "metadata", "expires_at", "supersedes", "superseded_by", "derived_from", "source"];

const TIMES = ["timestamp", "timestamp_end", "expires_at"];

function value(v, name) {
  if (v === null || v === undefined || (Array.isArray(v) && !v.length)) return h("span", { class: "muted" }, "–");
  if (TIMES.includes(name) && typeof v === "string") return timeEl(v);
  if (typeof v === "object") return h("code", { class: "json" }, JSON.stringify(v));
  return String(v);
}

function fields(entry) {
  const rows = [
    ["time", entry.timestamp ? [timeEl(entry.timestamp), entry.timestamp_end ? [" → ", timeEl(entry.timestamp_end)] : null] : null],
    ["source", provenance({ ...entry, timestamp: null })],
    ["persons", entry.persons.length ? h("span", { class: "chips" }, chips(entry.persons, "chip person")) : null],
    ["entities", entry.entities.length ? h("span", { class: "chips" }, chips(entry.entities, "chip entity")) : null],
    ["keywords", entry.keywords.length ? h("span", { class: "chips" }, chips(entry.keywords)) : null],
    ["location", entry.location], ["topic", entry.topic],
    ["metadata", Object.keys(entry.metadata || {}).length ? h("dl", { class: "kv meta" }, Object.entries(entry.metadata)
      .flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, typeof v === "string" ? v : h("code", {}, JSON.stringify(v)))])) : null],
    ["derived from", derivedFrom(entry)],
    ["supersedes", entry.supersedes.length ? entry.supersedes.map((id, i) => [i ? ", " : "", entryLink(id)]) : null],
    ["superseded by", entry.superseded_by ? entryLink(entry.superseded_by) : null],
    ["expires", entry.expires_at ? timeEl(entry.expires_at) : null],
    ["added", timeEl(entry.created_at)],
    ["namespace", entry.namespace],
    ["id", h("code", { id: "entry-id" }, entry.id)],
  ];
  return h("dl", { class: "kv fields" }, rows.filter(([, v]) => v !== null && v !== undefined && v !== "")
    .flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function changes(event) {
  if (event.event === "ADD") return h("p", { class: "change" }, "added: ", h("q", {}, event.new?.text ?? ""));
  if (event.event === "DELETE") return h("p", { class: "change" }, "deleted");
  const out = [];
  for (const name of FIELDS) {
    const a = event.old?.[name];
    const b = event.new?.[name];
    if (JSON.stringify(a ?? null) === JSON.stringify(b ?? null)) continue;
    out.push(h("div", { class: "change" }, h("span", { class: "field-name" }, name.replace(/_/g, " ")),
      h("del", {}, value(a, name)), h("span", { class: "arrow" }, "→"), h("ins", {}, value(b, name))));
  }
  return out.length ? out : h("p", { class: "change muted" }, "no visible change");
}

// The facts extracted from a turn (they name it in `derived_from`).
async function derivedFacts(entry) {
  if (entry.kind !== "turn" || !entry.source?.session_id) return null;
  try {
    const facts = (await listAll({ filter: [`session_id=${entry.source.session_id}`, "kind=fact"] }))
      .filter((f) => (f.derived_from || []).includes(entry.id));
    return h("section", { class: "card", id: "derived-facts" }, h("h2", {}, "Facts from this turn"),
      facts.length ? h("ul", { class: "facts" }, facts.map((f) => h("li", { class: "fact" }, h("span", { class: "badge kind-fact" }, "fact"), " ",
        entryLink(f.id, f.text)))) : h("p", { class: "muted" }, "None were extracted."));
  } catch {
    return null;
  }
}

async function history(id) {
  const box = h("section", { class: "card history", id: "history" }, h("h2", {}, "History"));
  try {
    const events = await get(`/v1/memories/${encodeURIComponent(id)}/history`);
    if (!events.length) box.append(h("p", { class: "muted" }, "No events recorded (an entry written before history was kept)."));
    box.append(h("ol", { class: "events" }, events.map((e) => h("li", { class: `event ev-${e.event.toLowerCase()}` },
      h("div", { class: "event-head" }, h("span", { class: `badge ev ${e.event.toLowerCase()}` }, e.event), timeEl(e.at),
        e.actor ? h("span", { class: "muted" }, `by ${e.actor}`) : null), changes(e)))));
  } catch (exc) {
    box.append(notice(exc.display || String(exc)));
  }
  return box;
}

function toLocalInput(iso) {
  return iso ? iso.replace("+00:00", "Z") : "";
}

function editForm(entry, onDone, message) {
  const text = h("textarea", { id: "edit-text", rows: "4" }, entry.text);
  const metadata = h("textarea", { id: "edit-metadata", rows: "3", class: "mono", spellcheck: "false" },
    JSON.stringify(entry.metadata || {}, null, 2));
  const expires = h("input", { id: "edit-expires", value: toLocalInput(entry.expires_at), placeholder: "never (e.g. 2025-01-31)" });
  const form = h("form", { class: "card form", id: "edit-form" }, h("h2", {}, "Edit"),
    h("label", { class: "field", for: "edit-text" }, h("span", {}, "Text"), text),
    h("label", { class: "field", for: "edit-metadata" }, h("span", {}, "Metadata (JSON object, replaced whole)"), metadata),
    h("label", { class: "field", for: "edit-expires" }, h("span", {}, "Expires (ISO 8601; empty: never)"), expires),
    h("div", { class: "row end" }, h("button", { type: "button", class: "ghost", onclick: () => onDone(false) }, "Cancel"),
      h("button", { type: "submit", class: "primary", id: "edit-save" }, "Save")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {};
    if (text.value !== entry.text) body.text = text.value;
    try {
      const parsed = JSON.parse(metadata.value || "{}");
      if (JSON.stringify(parsed) !== JSON.stringify(entry.metadata || {})) body.metadata = parsed;
    } catch (exc) {
      replace(message, notice(`metadata is not JSON: ${exc.message}`));
      return;
    }
    const expiry = expires.value.trim() || null;
    if (expiry !== toLocalInput(entry.expires_at || null) && !(expiry === null && !entry.expires_at)) body.expires_at = expiry;
    if (!Object.keys(body).length) { onDone(false); return; }
    try {
      await api("PATCH", `/v1/memories/${encodeURIComponent(entry.id)}`, { body });
      onDone(true);
    } catch (exc) {
      replace(message, notice(exc.display || String(exc)));
    }
  });
  return form;
}

const listOf = (value) => value.split(/[,，]/).map((s) => s.trim()).filter(Boolean);

// The new entry starts with the old one's people, things, place, topic and metadata, to edit:
// they were dropped (only the text was sent), so the current fact left every person, place
// and metadata filter its old version was found by.
function supersedeForm(entry, onDone, message) {
  const text = h("textarea", { id: "supersede-text", rows: "3", placeholder: "What is true now…" }, "");
  const input = (id, label, value, placeholder) => {
    const control = h("input", { id, value: value || "", placeholder, autocomplete: "off" });
    return [control, h("label", { class: "field", for: id }, h("span", {}, label), control)];
  };
  const [persons, personsField] = input("supersede-persons", "Persons (comma-separated)", entry.persons.join(", "), "Alice, 王伟");
  const [entities, entitiesField] = input("supersede-entities", "Entities", entry.entities.join(", "), "Lisbon");
  const [location, locationField] = input("supersede-location", "Location", entry.location, "");
  const [topic, topicField] = input("supersede-topic", "Topic", entry.topic, "");
  const metadata = h("textarea", { id: "supersede-metadata", rows: "3", class: "mono", spellcheck: "false" },
    JSON.stringify(entry.metadata || {}, null, 2));
  const form = h("form", { class: "card form", id: "supersede-form" }, h("h2", {}, "Supersede"),
    h("p", { class: "muted" }, "Store a new entry as the truth now; this one stays in the history, out of search and lists. " +
      "The new entry starts with this one's people, things, place, topic and metadata: change what changed."),
    h("label", { class: "field", for: "supersede-text" }, h("span", {}, "New text"), text),
    personsField, entitiesField, locationField, topicField,
    h("label", { class: "field", for: "supersede-metadata" }, h("span", {}, "Metadata (JSON object)"), metadata),
    h("div", { class: "row end" }, h("button", { type: "button", class: "ghost", onclick: () => onDone(null) }, "Cancel"),
      h("button", { type: "submit", class: "primary", id: "supersede-save" }, "Supersede")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!text.value.trim()) { text.focus(); return; }
    const item = { text: text.value, persons: listOf(persons.value), entities: listOf(entities.value) };
    if (location.value.trim()) item.location = location.value.trim();
    if (topic.value.trim()) item.topic = topic.value.trim();
    try {
      item.metadata = JSON.parse(metadata.value || "{}");
    } catch (exc) {
      replace(message, notice(`metadata is not JSON: ${exc.message}`));
      return;
    }
    try {
      const added = await api("POST", "/v1/memories", { body: { entry: item, supersedes: [entry.id] } });
      onDone(added.results[0]?.id || null);
    } catch (exc) {
      replace(message, notice(exc.display || String(exc)));
    }
  });
  return form;
}

function deleteConfirm(entry, onDone, message) {
  return h("div", { class: "card form danger", id: "delete-confirm" }, h("h2", {}, "Delete this entry?"),
    h("p", { class: "muted" }, "It leaves search and lists at once; its history stays readable here."),
    h("div", { class: "row end" }, h("button", { type: "button", class: "ghost", onclick: () => onDone(false) }, "Cancel"),
      h("button", { type: "button", class: "danger", id: "delete-yes", onclick: async () => {
        try {
          await api("DELETE", `/v1/memories/${encodeURIComponent(entry.id)}`);
          onDone(true);
        } catch (exc) {
          replace(message, notice(exc.display || String(exc)));
        }
      } }, "Delete")));
}

export async function renderEntry(root, p) {
  const id = p.get("id") || "";
  document.title = `Entry ${id.slice(0, 8)} — Engram`;
  if (!id) {
    replace(root, h("p", { class: "crumbs" }, link({ view: "browse" }, "‹ Browse")), h("div", { class: "card" },
      h("h1", {}, "No entry named"), h("p", { id: "entry-missing" }, "The address gives no entry id (…?view=entry&id=…). Open an entry from Browse or a search.")));
    return;
  }
  replace(root, h("p", { class: "muted loading" }, "Loading…"));
  let entry = null;
  let missing = null;
  try {
    entry = await get(`/v1/memories/${encodeURIComponent(id)}`);
  } catch (exc) {
    if (exc.status !== 404) { replace(root, notice(exc.display || String(exc))); return; }
    missing = exc;
  }
  const message = h("div", { id: "entry-message", "aria-live": "polite" });
  const panel = h("div", { id: "entry-panel" });
  const back = h("p", { class: "crumbs" }, link({ view: "browse" }, "‹ Browse"),
    entry?.source?.session_id ? [" · ", sessionLink(entry.source.session_id, `session ${entry.source.session_id}`)] : null);
  const done = p.get("done");
  const flash = { saved: "Saved.", deleted: "Deleted.", superseded: "Stored; the old entry is superseded." }[done];
  if (!entry) {
    replace(root, back, flash ? notice(flash, "ok") : null, h("div", { class: "card" }, h("h1", {}, "Not here"),
      h("p", { id: "entry-missing" }, `This entry is not in the namespace (deleted, or never there): ${missing.message}`)),
    await history(id));
    return;
  }
  const refresh = (flash) => {
    forgetEntry(id);
    forgetLastSearch();
    navigate({ view: "entry", id, done: flash }, { replace: true });
  };
  const close = () => replace(panel);
  const actions = h("div", { class: "actions" },
    h("button", { type: "button", id: "edit-button", onclick: () => { replace(message); replace(panel, editForm(entry, (saved) => saved ? refresh("saved") : close(), message)); } }, "Edit"),
    // a superseded entry is an old version: supersede the newer one (the server refuses this one)
    entry.superseded_by ? null : h("button", { type: "button", id: "supersede-button", onclick: () => { replace(message); replace(panel, supersedeForm(entry, (newId) => {
      if (!newId) { close(); return; }
      forgetEntry(id); forgetLastSearch();
      navigate({ view: "entry", id: newId, done: "superseded" });
    }, message)); } }, "Supersede"),
    h("button", { type: "button", class: "danger-ghost", id: "delete-button", onclick: () => { replace(message); replace(panel, deleteConfirm(entry, (gone) => gone ? refresh("deleted") : close(), message)); } }, "Delete"));
  replace(root, back, flash ? notice(flash, "ok") : null,
    h("article", { class: "card entry", id: "entry" },
      h("div", { class: "entry-head" }, kindBadge(entry.kind),
        entry.superseded_by ? h("span", { class: "badge superseded" }, "superseded") : null,
        expired(entry) ? h("span", { class: "badge superseded", id: "expired-badge" }, "expired") : null,
        h("span", { class: "grow" }), actions),
      h("p", { class: "entry-text", id: "entry-text", lang: langOf(entry.text) }, entry.text), fields(entry)),
    message, panel, await derivedFacts(entry), await history(id));
}
