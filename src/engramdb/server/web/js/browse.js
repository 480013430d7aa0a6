// Browse: the namespace's entries, newest first, a page at a time (the API's cursors: a
// page never repeats or skips an entry while others are written), with the search filters.

import { get } from "./api.js";
import { clipped, expired, fmtTime, h, kindBadge, langOf, notice, replace, shortId } from "./dom.js";
import { derivedFrom, provenance, tagChips } from "./evidence.js";
import * as filters from "./filters.js";
import { entryLink, href, navigate } from "./url.js";

const previous = new Map(); // cursor -> the cursor of the page before it (for "Newer")

function options(p) {
  return {
    filters: filters.fromParams(p), order: p.get("order") === "oldest" ? "oldest" : "newest",
    limit: p.get("limit") || "20", cursor: p.get("cursor") || "", superseded: p.get("superseded") === "1",
    expired: p.get("expired") === "1", page: Number(p.get("page") || "1"),
  };
}

function browseParams(o) {
  return { view: "browse", ...filters.toParams(o.filters), order: o.order === "newest" ? "" : o.order,
    limit: o.limit === "20" ? "" : o.limit, superseded: o.superseded, expired: o.expired,
    cursor: o.cursor, page: o.page > 1 ? String(o.page) : "" };
}

function form(o) {
  const fields = filters.filterFields(o.filters, "bf");
  const order = h("select", { id: "bf-order" }, h("option", { value: "newest", selected: o.order === "newest" }, "newest first"),
    h("option", { value: "oldest", selected: o.order === "oldest" }, "oldest first"));
  const limit = h("select", { id: "bf-limit" }, ["10", "20", "50", "100"].map((n) => h("option", { value: n, selected: n === o.limit }, `${n} per page`)));
  const superseded = h("input", { type: "checkbox", id: "bf-superseded", checked: o.superseded });
  const expired = h("input", { type: "checkbox", id: "bf-expired", checked: o.expired });
  // Open when filters are in use, and on a wide screen; on a phone the list comes first.
  const open = !filters.isEmpty(o.filters) || o.superseded || o.expired || window.matchMedia("(min-width: 721px)").matches;
  const el = h("form", { class: "card filters", id: "browse-form" }, h("details", { open: open || undefined, id: "browse-filters" },
    h("summary", {}, "Filters"),
    h("div", { class: "grid" }, fields.fields,
      h("label", { class: "field", for: "bf-order" }, h("span", {}, "Order"), order),
      h("label", { class: "field", for: "bf-limit" }, h("span", {}, "Page size"), limit)),
    h("div", { class: "row" }, h("label", { for: "bf-superseded" }, superseded, " include superseded"),
      h("label", { for: "bf-expired" }, expired, " show expired"), h("span", { class: "grow" }),
      h("a", { href: href({ view: "browse" }), class: "button ghost", onclick: (e) => { e.preventDefault(); navigate({ view: "browse" }); } }, "Clear"),
      h("button", { type: "submit", class: "primary", id: "browse-apply" }, "Apply"))));
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(browseParams({ filters: fields.read(), order: order.value, limit: limit.value, superseded: superseded.checked,
      expired: expired.checked, cursor: "", page: 1 }));
  });
  return el;
}

export function entryRow(entry) {
  return h("li", { class: "entry-row", dataset: { id: entry.id } },
    h("div", { class: "row-head" }, kindBadge(entry.kind), provenance(entry), h("span", { class: "grow" }),
      entry.superseded_by ? h("span", { class: "badge superseded" }, "superseded") : null,
      expired(entry) ? h("span", { class: "badge superseded expired", title: entry.expires_at }, `expired ${fmtTime(entry.expires_at, { date: true })}`)
        : entry.expires_at ? h("span", { class: "badge expires", title: entry.expires_at }, `expires ${fmtTime(entry.expires_at, { date: true })}`) : null),
    h("p", { class: "row-text", lang: langOf(entry.text) }, clipped(entry.text, (text) => entryLink(entry.id, text))),
    h("div", { class: "row-foot" }, derivedFrom(entry), tagChips(entry), h("span", { class: "grow" }),
      h("span", { class: "muted small", title: `added ${entry.created_at}` }, `added ${fmtTime(entry.created_at)}`),
      h("span", { class: "mono muted small" }, shortId(entry.id))));
}

export async function renderBrowse(root, p) {
  const o = options(p);
  const list = h("div", { id: "browse-output" }, h("p", { class: "muted loading" }, "Loading…"));
  replace(root, h("div", { class: "view-head" }, h("h1", {}, "Browse"),
    h("p", { class: "muted" }, "Every entry of the namespace, a page at a time. Open one to edit, supersede or delete it and to see its history.")),
  form(o), list);
  document.title = "Browse — Engram";
  let page;
  try {
    page = await get("/v1/memories", { limit: o.limit, order: o.order, cursor: o.cursor || undefined,
      filter: filters.listFilters(o.filters), include_superseded: o.superseded || undefined, show_expired: o.expired || undefined });
  } catch (exc) {
    replace(list, notice(exc.display || String(exc)));
    return;
  }
  if (page.next_cursor) previous.set(page.next_cursor, o.cursor);
  const older = page.next_cursor ? { ...o, cursor: page.next_cursor, page: o.page + 1 } : null;
  const newer = o.cursor ? { ...o, cursor: previous.get(o.cursor) || "", page: previous.has(o.cursor) ? o.page - 1 : 1 } : null;
  const go = (target, label, id) => target
    ? h("a", { class: "button", id, href: href(browseParams(target)), onclick: (e) => { e.preventDefault(); navigate(browseParams(target)); } }, label)
    : h("span", { class: "button disabled", id, "aria-disabled": "true" }, label);
  const pager = h("nav", { class: "pager", "aria-label": "Pages" }, go(newer, o.order === "newest" ? "‹ Newer" : "‹ Earlier", "page-prev"),
    h("span", { class: "muted", id: "page-label" }, `page ${o.page} · ${page.results.length} ${page.results.length === 1 ? "entry" : "entries"}`),
    go(older, o.order === "newest" ? "Older ›" : "Later ›", "page-next"));
  if (!page.results.length) {
    // the hint for an empty namespace, not for filters that leave nothing out of a full one
    const filtered = !filters.isEmpty(o.filters);
    replace(list, h("div", { class: "empty" }, h("p", {}, o.cursor ? "No more entries." : "No entries match."),
      o.cursor ? null : h("p", { class: "muted" }, filtered ? "No entry matches these filters: loosen or clear them."
        : "Add some with engram add, engram import or POST /v1/memories.")), pager);
    return;
  }
  replace(list, h("ul", { class: "entries", id: "entries" }, page.results.map(entryRow)), pager);
}
