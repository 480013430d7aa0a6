// Overview: counts per namespace and kind (any key), the model and schema (an admin key;
// others see why not; the store's size and file only on a server without keys: a key sees
// its own namespaces only), and a chart of entries over time (GET /v1/timeline).

import { get } from "./api.js";
import { fmtBytes, h, notice, replace, svg } from "./dom.js";
import { href, navigate } from "./url.js";

const KINDS = ["fact", "turn", "chunk"];

function namespaceTable(rows) {
  return h("table", { class: "counts", id: "namespace-counts" },
    h("thead", {}, h("tr", {}, h("th", {}, "namespace"), h("th", { class: "num" }, "entries"),
      KINDS.map((k) => h("th", { class: "num" }, `${k}s`)))),
    h("tbody", {}, rows.map((r) => h("tr", { dataset: { namespace: r.namespace } }, h("th", { scope: "row" }, r.namespace),
      h("td", { class: "num" }, r.count.toLocaleString()), KINDS.map((k) => h("td", { class: "num" }, (r.kinds[k] || 0).toLocaleString()))))));
}

// A period as a number (days, Monday weeks, months or years since the epoch) and back, from
// and to the API's "YYYY-MM-DD" starts; years 1 to 9999 included.
const DAY_MS = 86400000;
const MONDAY = 4; // 1970-01-05, day 4, was a Monday

function periodOf(bucket, start) {
  const [year, month] = start.split("-").map(Number);
  if (bucket === "year") return year;
  if (bucket === "month") return year * 12 + month - 1;
  const day = Math.round(new Date(`${start}T00:00:00Z`).getTime() / DAY_MS);
  return bucket === "week" ? Math.round((day - MONDAY) / 7) : day;
}

function startOf(bucket, n) {
  const pad = (x, width) => String(x).padStart(width, "0");
  if (bucket === "year") return `${pad(n, 4)}-01-01`;
  if (bucket === "month") return `${pad(Math.floor(n / 12), 4)}-${pad((n % 12) + 1, 2)}-01`;
  const day = bucket === "week" ? n * 7 + MONDAY : n;
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

// The smallest of 1, 2, 5, 10, 20, 50… that is at least x.
function niceAtLeast(x) {
  for (let scale = 1; ; scale *= 10) {
    for (const f of [1, 2, 5]) if (f * scale >= x) return f * scale;
  }
}

export const MAX_BARS = 200;

// Every period from the first to the last, the empty ones as 0; when there are more than
// MAX_BARS of them, each bar sums `span` periods (aligned: years 2000–2049, 2050–2099…), so
// no entry is ever left out of the chart.
export function bars(timeline) {
  const points = timeline.points;
  if (!points.length) return { span: 1, bars: [] };
  const bucket = timeline.bucket;
  const first = periodOf(bucket, points[0].start);
  const last = periodOf(bucket, points[points.length - 1].start);
  const span = niceAtLeast((last - first + 1) / MAX_BARS);
  const base = Math.floor(first / span) * span;
  const out = [];
  for (let n = base; n <= last; n += span) {
    out.push({ start: startOf(bucket, Math.max(n, first)), end: startOf(bucket, Math.min(n + span - 1, last)), count: 0 });
  }
  for (const pt of points) out[Math.floor((periodOf(bucket, pt.start) - base) / span)].count += pt.count;
  return { span, bars: out };
}

function label(bucket, start) {
  const d = new Date(`${start}T00:00:00Z`);
  const opts = bucket === "year" ? { year: "numeric" } : bucket === "month" ? { year: "numeric", month: "short" }
    : { month: "short", day: "numeric" };
  return new Intl.DateTimeFormat(undefined, { timeZone: "UTC", ...opts }).format(d);
}

// Whole-number grid lines from 0 to a round top at or above the tallest bar.
export function gridValues(most) {
  const step = niceAtLeast(most / 4);
  const top = Math.max(step, Math.ceil(most / step) * step);
  const out = [];
  for (let n = 0; n <= top; n += step) out.push(n);
  return out;
}

export function chart(timeline, width = 720) {
  const { span, bars: points } = bars(timeline);
  if (!points.length) return h("p", { class: "muted" }, "Nothing to draw yet.");
  const W = Math.max(280, Math.round(width));
  const H = 190;
  const pad = { l: 36, r: 8, t: 10, b: 26 };
  const values = gridValues(Math.max(...points.map((pt) => pt.count)));
  const top = values[values.length - 1];
  const step = (W - pad.l - pad.r) / points.length;
  const y = (n) => pad.t + (H - pad.t - pad.b) * (1 - n / top);
  const grid = values.map((n) => svg("g", { class: "grid" }, svg("line", { x1: pad.l, x2: W - pad.r, y1: y(n), y2: y(n) }),
    svg("text", { x: pad.l - 6, y: y(n) + 4, "text-anchor": "end" }, n.toLocaleString())));
  const barWidth = Math.max(1, Math.min(step * 0.76, 36));
  const name = (pt) => (pt.start === pt.end ? label(timeline.bucket, pt.start)
    : `${label(timeline.bucket, pt.start)} – ${label(timeline.bucket, pt.end)}`);
  const drawn = points.map((pt, i) => svg("rect", {
    class: "bar", x: (pad.l + i * step + (step - barWidth) / 2).toFixed(2), width: barWidth.toFixed(2), rx: Math.min(3, barWidth / 4).toFixed(2),
    y: y(pt.count).toFixed(2), height: (H - pad.b - y(pt.count)).toFixed(2), "data-count": pt.count,
  }, svg("title", {}, `${name(pt)}: ${pt.count}`)));
  const every = Math.max(1, Math.ceil(points.length / 8));
  const ticks = points.map((pt, i) => (i % every === 0 ? svg("text", { class: "tick", x: (pad.l + i * step + step / 2).toFixed(2), y: H - 8,
    "text-anchor": "middle" }, label(timeline.bucket, pt.start)) : null)).filter(Boolean);
  return svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", id: "timeline-chart", "data-span": span,
    "aria-label": span === 1 ? `entries per ${timeline.bucket}` : `entries per ${span} ${timeline.bucket}s` }, grid, drawn, ticks);
}

export async function renderOverview(root, p) {
  document.title = "Overview — Engram";
  const field = p.get("time") === "event" ? "event" : "created";
  const counts = h("section", { class: "card" }, h("h2", {}, "Entries"), h("p", { class: "muted loading" }, "Loading…"));
  const store = h("section", { class: "card", id: "store-card" }, h("h2", {}, "Store"), h("p", { class: "muted loading" }, "Loading…"));
  const time = h("section", { class: "card wide", id: "timeline-card" }, h("h2", {}, "Entries over time"), h("p", { class: "muted loading" }, "Loading…"));
  replace(root, h("div", { class: "view-head" }, h("h1", {}, "Overview")), h("div", { class: "cards" }, counts, store, time));

  const [namespaces, stats, timeline] = await Promise.allSettled([get("/v1/namespaces"), get("/v1/stats"),
    get("/v1/timeline", { field })]);
  if (namespaces.status === "fulfilled") {
    const rows = namespaces.value;
    const total = rows.reduce((n, r) => n + r.count, 0);
    replace(counts, h("h2", {}, "Entries"), h("p", { class: "big", id: "total-count" }, total.toLocaleString(),
      h("span", { class: "muted" }, ` in ${rows.length} ${rows.length === 1 ? "namespace" : "namespaces"}`)),
    rows.length ? namespaceTable(rows) : h("p", { class: "muted" }, "The store is empty."));
  } else {
    replace(counts, h("h2", {}, "Entries"), notice(namespaces.reason.display || String(namespaces.reason)));
  }
  if (stats.status === "fulfilled") {
    const s = stats.value;
    // A key sees its own namespaces only: the store-wide size, vectors and file are null for it.
    const wide = s.path !== null;
    replace(store, h("h2", {}, "Store"), h("dl", { class: "kv" },
      h("dt", {}, "model"), h("dd", { id: "store-model" }, s.embedder || "none yet", s.dim ? h("span", { class: "muted" }, ` · ${s.dim} dims`) : null),
      wide ? [h("dt", {}, "size"), h("dd", { id: "store-size" }, fmtBytes(s.file_bytes)),
        h("dt", {}, "vectors"), h("dd", {}, s.vectors.toLocaleString()),
        h("dt", {}, "file"), h("dd", { class: "mono small" }, s.path)] : null,
      h("dt", {}, "schema"), h("dd", {}, `v${s.schema_version} · ${s.server_version || "SQLite " + s.sqlite_version}`)),
    wide ? null : h("p", { class: "muted small", id: "store-scoped" },
      "The store's size, vector count and file are store-wide, so a key, which sees only its own namespaces, is not shown them (engram stats shows them to the operator)."));
  } else {
    const why = stats.reason;
    replace(store, h("h2", {}, "Store"), h("p", { class: "muted", id: "store-restricted" },
      why.status === 403 ? "The model, file size and other store details need an admin key." : "", " "),
    notice(why.display || String(why), why.status === 403 ? "info" : "error"));
  }
  const toggle = (value, text) => h("a", { class: `tab${field === value ? " active" : ""}`, href: href({ view: "overview", time: value === "event" ? "event" : "" }),
    onclick: (e) => { e.preventDefault(); navigate({ view: "overview", time: value === "event" ? "event" : "" }, { replace: true }); } }, text);
  const head = h("div", { class: "row" }, h("h2", {}, "Entries over time"), h("span", { class: "grow" }),
    h("div", { class: "subtabs" }, toggle("created", "when added"), toggle("event", "event time")));
  if (timeline.status === "fulfilled") {
    const t = timeline.value;
    const { span } = bars(t);
    const per = span === 1 ? `per ${t.bucket} (UTC)`
      : `each bar is ${span.toLocaleString()} ${t.bucket}s (UTC): the entries span too many ${t.bucket}s for one bar each`;
    replace(time, head, chart(t, time.clientWidth - 40), h("p", { class: "muted small", id: "timeline-note" }, per,
      t.undated ? ` · ${t.undated.toLocaleString()} without an event time` : ""));
  } else {
    replace(time, head, notice(timeline.reason.display || String(timeline.reason)));
  }
}
