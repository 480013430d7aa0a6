// Search: the query and its options live in the address (/?q=…&k=5&person=Alice), so a
// search is a link; the page runs it on load and keeps the address in step.

import { api, session } from "./api.js";
import { fmtMs, fmtTime, h, notice, plural, replace } from "./dom.js";
import { channelScale, hitCard } from "./evidence.js";
import { renderExplain } from "./explain.js";
import * as filters from "./filters.js";
import { href, navigate } from "./url.js";

// The shipped presets (src/engramdb/pipeline/presets/*.toml; a test keeps this list in step).
export const PRESETS = ["default", "learned", "lexical", "lychee", "molore", "ping", "rrf", "semantic", "simplemem", "symbolic",
  "unplanned"];

let last = null; // {key, result} of the search shown, so switching tabs does not search again

function options(p) {
  return {
    q: p.get("q") || "", k: p.get("k") || "10", preset: p.get("preset") || "default", now: p.get("now") || "",
    context: p.get("context") || "0", group: p.get("group") || "", superseded: p.get("superseded") === "1",
    expired: p.get("expired") === "1", tab: p.get("tab") === "explain" ? "explain" : "results",
    filters: filters.fromParams(p),
  };
}

export function searchParams(opts) {
  return {
    q: opts.q, k: opts.k === "10" ? "" : opts.k, preset: opts.preset === "default" ? "" : opts.preset,
    ...filters.toParams(opts.filters), now: opts.now, context: opts.context === "0" ? "" : opts.context,
    group: opts.group, superseded: opts.superseded, expired: opts.expired, tab: opts.tab === "explain" ? "explain" : "",
  };
}

// The largest k the server takes (`engram serve --max-k`, read from /healthz at boot).
let maxK = 100;

export function setMaxK(value) {
  if (Number.isInteger(value) && value > 0) maxK = value;
}

function form(opts) {
  // A text area, not a one-line input: a dialogue context ("User: …" / "Assistant: …" per line)
  // keeps its lines, which an input drops when it is pasted. Enter searches, Shift+Enter adds a
  // line; the box grows with what it holds.
  const q = h("textarea", { id: "q", name: "q", rows: "1", value: opts.q,
    placeholder: "Ask your memory… e.g. where does Alice live? / 项目代号是什么？ (Shift+Enter: a new line, for a dialogue)",
    autocomplete: "off", spellcheck: "false", "aria-label": "Query" });
  const fit = () => { q.style.height = "auto"; q.style.height = `${q.scrollHeight + 2}px`; };
  q.addEventListener("input", fit);
  q.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      q.form.requestSubmit();
    }
  });
  requestAnimationFrame(fit);
  const k = h("input", { id: "k", name: "k", type: "number", min: "1", max: String(maxK), value: opts.k });
  const preset = h("select", { id: "preset", name: "preset" },
    PRESETS.map((name) => h("option", { value: name, selected: name === opts.preset }, name)));
  if (!PRESETS.includes(opts.preset)) preset.append(h("option", { value: opts.preset, selected: true }, opts.preset));
  const now = h("input", { id: "now", name: "now", value: opts.now, placeholder: "newest entry", autocomplete: "off" });
  const context = h("input", { id: "context", name: "context", type: "number", min: "0", max: "10", value: opts.context });
  const group = h("select", { id: "group", name: "group" }, ["", "doc", "path", "session"].map((g) =>
    h("option", { value: g, selected: g === opts.group }, g ? `best per ${g}` : "no grouping")));
  const superseded = h("input", { type: "checkbox", id: "superseded", checked: opts.superseded });
  const expired = h("input", { type: "checkbox", id: "expired", checked: opts.expired });
  const fields = filters.filterFields(opts.filters, "sf");
  const open = !filters.isEmpty(opts.filters) || opts.now || opts.context !== "0" || opts.group || opts.superseded || opts.expired;
  const field = (label, control, id) => h("label", { class: "field", for: id }, h("span", {}, label), control);
  const el = h("form", { class: "searchbar", id: "search-form", role: "search" },
    h("div", { class: "query-row" }, q, h("button", { type: "submit", class: "primary", id: "search-button" }, "Search")),
    h("div", { class: "option-row" }, field("k", k, "k"), field("Preset", preset, "preset"),
      h("details", { class: "more", open: open || undefined, id: "more-options" },
        h("summary", {}, "Filters & options"),
        h("div", { class: "grid" }, fields.fields, field("Now (reference time)", now, "now"),
          field("Context turns", context, "context"), field("Group", group, "group"),
          h("div", { class: "checks" },
            h("label", { for: "superseded" }, superseded, " include superseded"),
            h("label", { for: "expired" }, expired, " show expired"))))));
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = {
      q: q.value.trim(), k: k.value || "10", preset: preset.value, now: now.value.trim(), context: context.value || "0",
      group: group.value, superseded: superseded.checked, expired: expired.checked, tab: opts.tab, filters: fields.read(),
    };
    if (!next.q) { q.focus(); return; }
    navigate(searchParams(next));
  });
  return el;
}

function body(opts) {
  const body = { query: opts.q, k: Number(opts.k), preset: opts.preset, filters: filters.searchFilters(opts.filters),
    explain: true };
  if (opts.now) body.now = opts.now;
  if (opts.context !== "0") body.context = Number(opts.context);
  if (opts.group) body.group_by = opts.group;
  if (opts.superseded) body.include_superseded = true;
  if (opts.expired) body.show_expired = true;
  return body;
}

function summary(result, opts) {
  const t = result.trace;
  const recall = (t.stages || []).find((s) => s.stage === "recall");
  const bits = [plural(result.hits.length, "hit"), recall ? `${plural(recall.n ?? 0, "candidate")} recalled` : null,
    fmtMs(t.total_ms), `preset ${t.preset}`, t.namespace ? `namespace ${t.namespace}` : null,
    t.now ? `now ${fmtTime(t.now.value)} (${t.now.from})` : null];
  const tab = (name, label) => h("a", {
    class: `tab${opts.tab === name ? " active" : ""}`, id: `tab-${name}`,
    "aria-current": opts.tab === name ? "page" : undefined,
    href: href(searchParams({ ...opts, tab: name })),
    onclick: (event) => { event.preventDefault(); navigate(searchParams({ ...opts, tab: name })); },
  }, label);
  return h("div", { class: "result-bar" }, h("p", { class: "muted", id: "result-summary" }, bits.filter(Boolean).join(" · ")),
    h("div", { class: "subtabs" }, tab("results", "Results"), tab("explain", "Explain")));
}

export async function renderSearch(root, p) {
  const opts = options(p);
  const out = h("div", { id: "search-output", "aria-live": "polite" });
  replace(root, h("h1", { class: "sr-only" }, "Search"), form(opts), out);  // a heading for screen readers
  document.title = opts.q ? `${opts.q} — Engram` : "Search — Engram";
  if (!opts.q) {
    last = null;
    out.append(h("div", { class: "empty" }, h("p", {}, "Search finds entries by meaning, words, names and time at once, and shows which of those found each hit."),
      h("p", { class: "muted" }, "Try a question, a name, or a time: “what did Alice do last week?”")));
    root.querySelector("#q").focus();
    return;
  }
  const requestBody = body(opts);
  const key = JSON.stringify([session.namespace, requestBody]);
  let result = last && last.key === key ? last.result : null;
  if (!result) {
    out.append(h("p", { class: "muted loading" }, "Searching…"));
    try {
      result = await api("POST", "/v1/memories/search", { body: requestBody });
    } catch (exc) {
      replace(out, notice(exc.display || String(exc)));
      return;
    }
    last = { key, result };
  }
  replace(out, summary(result, opts));
  if (opts.tab === "explain") {
    out.append(renderExplain(result));
    return;
  }
  if (!result.hits.length) {
    out.append(h("div", { class: "empty" }, h("p", {}, "No entries matched."),
      h("p", { class: "muted" }, "Loosen the filters, or open Explain to see what each channel found.")));
    return;
  }
  const scale = channelScale(result);
  out.append(h("div", { class: "hits", id: "hits" }, result.hits.map((hit, i) => hitCard(hit, i, scale))));
}

export function forgetLastSearch() {
  last = null;
}
