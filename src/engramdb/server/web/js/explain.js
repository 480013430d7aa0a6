// Explain: a search's trace as a timeline of its stages, in words: what the planner read,
// what each channel found and how fast, how fusion weighed them, and what every later stage
// kept. Fields this page does not know yet are still listed, as they came.

import { getEntry } from "./api.js";
import { chips, fmtMs, fmtScore, fmtTime, h, shortId } from "./dom.js";
import { CHANNEL_HELP } from "./evidence.js";
import { entryLink } from "./url.js";

const COMMON = ["stage", "ms", "n", "candidates"];

function kv(rows) {
  const items = rows.filter(([, v]) => v !== undefined && v !== null && v !== "" && !(Array.isArray(v) && !v.length));
  return items.length ? h("dl", { class: "kv" }, items.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null;
}

function show(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") return Number.isInteger(value) ? value.toLocaleString() : fmtScore(value);
  if (typeof value === "string") return value;
  // a list of words or numbers reads as a list (translations, counted channels), not as JSON
  if (Array.isArray(value) && value.every((v) => ["string", "number"].includes(typeof v))) {
    return value.map((v) => (typeof v === "number" ? show(v) : v)).join(", ");
  }
  // a small record ({"terms": ["alic"], "off_topic": 2, "factor": 0.25}) as its fields, in words
  if (value && typeof value === "object" && !Array.isArray(value) &&
      Object.values(value).every((v) => v === null || typeof v !== "object" || Array.isArray(v))) {
    return Object.entries(value).map(([k, v]) => `${k.replace(/_/g, " ")} ${show(v)}`).join(" · ");
  }
  return JSON.stringify(value);
}

function bar(share, cls) {
  const fill = h("span", { class: `fill ${cls || ""}` });
  fill.style.width = `${Math.max(2, Math.min(100, share * 100)).toFixed(1)}%`;
  return h("span", { class: "track" }, fill);
}

function plan(rec) {
  const p = rec.plan || {};
  const names = [...(p.persons || []), ...(p.entities || [])];
  const window = rec.time_window;
  const summary = `read by the ${rec.planner || p.planner} planner${p.intent ? ` · intent: ${p.intent}` : ""}` +
    (window ? ` · time window “${window.expression}”` : "");
  const body = kv([
    ["terms", p.keywords && p.keywords.length ? h("span", { class: "chips" }, chips(p.keywords)) : "none"],
    ["names", names.length ? h("span", { class: "chips" }, chips(p.persons, "chip person"), chips(p.entities, "chip entity")) : "none"],
    ["location", p.location],
    ["time window", window ? `${window.expression}: ${fmtTime(window.start)} → ${fmtTime(window.end)}` : "none named"],
    ["intent", p.intent],
    ["sub-queries", (p.sub_queries || []).length > 1 ? h("ul", { class: "plain" }, p.sub_queries.map((q) => h("li", {}, q))) : null],
    ["routes", (p.routes || []).length ? show(p.routes) : null],
    ["notes", (p.notes || []).length ? h("ul", { class: "plain" }, p.notes.map((n) => h("li", {}, n))) : null],
  ]);
  return { summary, body, used: ["query", "planner", "plan", "time_window"] };
}

function recall(rec) {
  const channels = Object.entries(rec.channels || {});
  const most = Math.max(1, ...channels.map(([, c]) => c.k || c.n || 0));
  const slowest = Math.max(0.001, ...channels.map(([, c]) => c.ms || 0));
  const rows = channels.map(([name, c]) => h("tr", { dataset: { channel: name } },
    h("th", { scope: "row", title: CHANNEL_HELP[name] || "" }, h("span", { class: `dot ch-${name}` }), name),
    h("td", { class: "num" }, `${c.n ?? 0}`, h("span", { class: "muted" }, ` / ${c.k ?? "?"}`)),
    h("td", { class: "barcell" }, bar((c.n || 0) / most, `ch-${name}`)),
    h("td", { class: "num" }, c.top_score === null || c.top_score === undefined ? "–" : fmtScore(c.top_score)),
    h("td", { class: "num" }, fmtMs(c.ms)), h("td", { class: "barcell thin" }, bar((c.ms || 0) / slowest, "time")),
    h("td", { class: "muted small" }, Object.entries(c).filter(([k]) => !["k", "n", "ms", "top_score"].includes(k))
      .map(([k, v]) => `${k} ${show(v)}`).join(" · "))));
  const found = channels.filter(([, c]) => c.n).length;
  return {
    summary: `${rec.n ?? 0} distinct candidates; ${found} of ${channels.length} channels found something`,
    body: h("table", { class: "channels" },
      h("thead", {}, h("tr", {}, h("th", {}, "channel"), h("th", { class: "num" }, "found / asked"), h("th", {}, ""),
        h("th", { class: "num" }, "best score"), h("th", { class: "num" }, "time"), h("th", {}, ""), h("th", {}, ""))),
      h("tbody", {}, rows)),
    used: ["channels"],
  };
}

function fuse(rec) {
  const weights = Object.entries(rec.weights || {});
  const most = Math.max(0.001, ...weights.map(([, w]) => w));
  const adapt = rec.adapt ? Object.entries(rec.adapt).map(([k, v]) => `${k.replace(/_/g, " ")} ${show(v)}`).join(" · ") : null;
  const scaled = { zscore: "z-scored", dbsf: "DBSF-normalised", minmax: "min–max scaled", none: "raw" }[rec.normalization] || rec.normalization;
  const how = { rrf: `reciprocal-rank fusion (k ${rec.k})`, union: "union of the channels' lists", max: "best channel score",
    route: "routed fusion" }[rec.method] || `${rec.method || "?"} fusion of ${scaled || "raw"} channel scores`;
  return {
    summary: `${how} over ${rec.n ?? "?"} candidates`,
    body: h("div", {},
      weights.length ? h("div", { class: "weights" }, weights.map(([name, w]) => h("div", { class: "channel" },
        h("span", { class: "ch-name" }, name), bar(w / most, `ch-${name}`), h("span", { class: "ch-score" }, String(w))))) : null,
      kv([["adaptive", adapt],
        ["calibration", rec.calibration ? `p = 1 / (1 + e^−(${rec.calibration[0]}·m ${rec.calibration[1] < 0 ? "−" : "+"} ${Math.abs(rec.calibration[1])})): a score reads as the chance the hit is relevant` : null]])),
    used: ["weights", "method", "normalization", "adapt", "calibration", ...(rec.method === "rrf" ? ["k"] : [])],
  };
}

const SIMPLE = {
  neighbours: (r) => `lifted ${r.lifted ?? 0}, added ${r.added ?? 0} neighbouring turns of the top ${r.top ?? "?"} (±${r.span ?? "?"} turns, lift ${r.lift ?? "?"}; ${
    { or: "lift × score combined with a turn's own as probabilities", max: "a turn scores at least lift × score" }[r.combine] || `combined by ${r.combine ?? "?"}`})`,
  recency: (r) => `asked about ${r.asks === "before" ? "before" : "now"}: ${r.moved?.length
    ? `moved ${r.moved.map((m) => `${m.from} → ${m.to}`).join(", ")}, each the ${r.asks === "before" ? "older" : "newer"} entry most like the one it went above`
    : "nothing took the best one's place"} (${r.compared ?? 0} comparably relevant of the top ${r.pool ?? "?"}${
    r.someone_else ? `; ${r.someone_else} about someone else left alone` : ""})`,
  gate: (r) => `${r.n_in ?? "?"} → ${r.n_out ?? "?"} passed the relevance floors${r.retry ? ` · retried with gates ${r.retry.gates}: ${r.retry.n_out} kept` : ""}`,
  group: (r) => `grouped by ${r.by}${r.per_group ? `, at most ${r.per_group} per group` : ""}: ${r.n_in ?? "?"} → ${r.n_out ?? "?"}`,
  rerank: (r) => `${r.model} re-read the top ${r.pool} (weight ${r.weight})`,
  diversify: (r) => `MMR (λ ${r.mmr_lambda}) over the top ${r.pool}: ${r.moved} moved`,
  select: (r) => `kept the top ${r.k}: ${r.n} ${r.n === 1 ? "hit" : "hits"}`,
};
const SIMPLE_USED = { neighbours: ["lifted", "added", "top", "span", "lift", "combine"],
  recency: ["asks", "moved", "nothing_newer", "nothing_older", "compared", "pool", "someone_else"], gate: ["n_in", "n_out", "retry"],
  group: ["by", "per_group", "n_in", "n_out"], rerank: ["model", "pool", "weight"], diversify: ["mmr_lambda", "pool", "moved"],
  select: ["k"] };

function reflect(rec) {
  const rounds = rec.rounds || [];
  return {
    summary: `${rounds.length} reflection ${rounds.length === 1 ? "round" : "rounds"}`,
    body: h("ol", { class: "plain" }, rounds.map((r) => h("li", {}, `round ${r.round}: `,
      r.ok === false ? `the judgement failed: ${r.reason || "no reason given"}`
        : r.complete ? "the hits answer the question" : `gaps: ${(r.gap_queries || []).join("; ") || "none named"}`))),
    used: ["rounds"],
  };
}

function describe(rec) {
  const base = rec.stage.split(" (")[0];
  if (rec.skipped) return { summary: `skipped: ${rec.skipped}`, body: null, used: ["skipped"] };
  if (base === "plan") return plan(rec);
  if (base === "recall") return recall(rec);
  if (base === "fuse") return fuse(rec);
  if (base === "reflect") return reflect(rec);
  if (SIMPLE[base]) return { summary: SIMPLE[base](rec), body: null, used: SIMPLE_USED[base] };
  return { summary: "", body: null, used: [] };
}

function candidateTable(candidates, before, known) {
  const rows = candidates.map((c, i) => {
    const text = h("span", { class: "cand-text" });
    if (c.id && known.has(c.id)) text.textContent = known.get(c.id);
    else if (c.id) getEntry(c.id).then((e) => { text.textContent = e.text; }).catch(() => { text.textContent = "(gone)"; });
    const was = before ? before.get(c.id) : undefined;
    const move = before === null ? "" : was === undefined ? "new" : was === i ? "" : was > i ? `↑${was - i}` : `↓${i - was}`;
    return h("tr", {}, h("td", { class: "num" }, String(i + 1)), h("td", { class: `move ${move.startsWith("↑") || move === "new" ? "up" : "down"}` }, move),
      h("td", {}, c.id ? entryLink(c.id, h("span", { class: "mono" }, shortId(c.id))) : "?"), h("td", {}, text),
      h("td", { class: "num" }, fmtScore(c.score)),
      h("td", { class: "ranks" }, Object.entries(c.channels || {}).map(([n, ev]) => h("span", { class: "rk", title: `${n}: rank ${ev.rank}, score ${fmtScore(ev.score)}` },
        h("span", { class: `dot ch-${n}` }), `${ev.rank}`))));
  });
  return h("table", { class: "candidates" }, h("tbody", {}, rows));
}

export function renderExplain(result) {
  const t = result.trace;
  const stages = t.stages || [];
  const known = new Map(result.hits.map((hit) => [hit.id, hit.text]));
  const slowest = Math.max(0.001, ...stages.map((s) => s.ms || 0));
  let before = null;
  const items = stages.map((rec) => {
    const { summary, body, used } = describe(rec);
    const rest = Object.entries(rec).filter(([k]) => !COMMON.includes(k) && !used.includes(k));
    let cands = null;
    if (rec.candidates) {
      cands = h("details", { class: "cands" }, h("summary", {}, `${rec.candidates.length} candidates after this stage`),
        candidateTable(rec.candidates, before, known));
      before = new Map(rec.candidates.map((c, i) => [c.id, i]));
    }
    return h("li", { class: `stage${rec.skipped ? " skipped" : ""}`, dataset: { stage: rec.stage } },
      h("div", { class: "stage-head" }, h("span", { class: "stage-dot" }), h("strong", { class: "stage-name" }, rec.stage),
        h("span", { class: "stage-summary" }, summary), h("span", { class: "grow" }),
        rec.n !== undefined && !rec.skipped ? h("span", { class: "pill" }, `n ${rec.n}`) : null,
        h("span", { class: "stage-ms" }, fmtMs(rec.ms)), h("span", { class: "msbar" }, bar((rec.ms || 0) / slowest, "time"))),
      body ? h("div", { class: "stage-body" }, body) : null,
      rest.length ? h("div", { class: "stage-body" }, kv(rest.map(([k, v]) => [k.replace(/_/g, " "), show(v)]))) : null,
      cands);
  });
  const head = kv([
    ["query", t.stages?.[0]?.query || result.query],
    ["preset", `${t.preset} — ${(t.pipeline || []).join(" → ")}`],
    ["namespace", t.namespace],
    ["filters", Object.keys(t.filters || {}).filter((k) => !["include_superseded", "visible_at"].includes(k)).length
      ? show(Object.fromEntries(Object.entries(t.filters).filter(([k]) => !["include_superseded", "visible_at"].includes(k)))) : "none"],
    ["now", t.now ? `${fmtTime(t.now.value)} (${t.now.from})` : null],
    ["threshold", t.threshold ? `${t.threshold.value}: dropped ${t.threshold.dropped}` : null],
    ["LLM calls", t.llm_calls ? String(t.llm_calls.length) : null],
    ["total", fmtMs(t.total_ms)],
  ]);
  return h("div", { class: "explain", id: "explain" }, h("div", { class: "card" }, head),
    h("ol", { class: "timeline" }, items));
}
