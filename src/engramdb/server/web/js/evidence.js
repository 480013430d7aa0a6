// How a hit was found and where it came from: per-channel bars (rank and score in each
// channel), provenance (file › heading, or session › turn with speaker and time), and the
// turns a fact was derived from.

import { getEntry } from "./api.js";
import { chips, clipped, fmtScore, fmtTime, h, kindBadge, langOf, shortId, spoken, timeEl } from "./dom.js";
import { entryLink, sessionLink } from "./url.js";

export const CHANNEL_HELP = {
  semantic: "meaning: the embedding model's cosine similarity",
  lexical: "words: BM25 over the text",
  translated: "words in the other language: BM25 over the question's English ↔ Chinese translations",
  feedback: "like what was found: the question's embedding moved towards the best first hits",
  symbolic: "names: people, entities and keywords the question names (a tagged Chinese name in either script)",
  names: "a Chinese person the question names, written in the other script (王芳 / Wang Fang)",
  temporal: "time: overlap with the time window the question names",
  dated: "stated time: entries that say when their event happened",
  substring: "exact text: the question's literal fragments",
  neighbour: "lifted by a neighbouring turn of a strong hit",
  recency: "asked about now (or before): newer (older) than, and most like, a better match, so it took its place (rank: where it was)",
  rerank: "the cross-encoder's reading of question and entry together",
};

// The channels to show for a result, in the pipeline's order, and each one's best score
// (bars are drawn relative to it: the channel's strongest candidate fills the bar).
export function channelScale(result) {
  const order = [];
  const top = {};
  for (const stage of result.trace.stages || []) {
    if (!stage.stage.startsWith("recall") || !stage.channels) continue;
    for (const [name, info] of Object.entries(stage.channels)) {
      if (!order.includes(name)) order.push(name);
      if (typeof info.top_score === "number") top[name] = Math.max(top[name] ?? -Infinity, info.top_score);
    }
  }
  const low = {};
  for (const hit of result.hits) {
    for (const [name, ev] of Object.entries(hit.channels)) {
      if (!order.includes(name)) order.push(name);
      top[name] = Math.max(top[name] ?? -Infinity, ev.score);
      low[name] = Math.min(low[name] ?? Infinity, ev.score);
    }
  }
  return { order, top, low };
}

function share(scale, name, score) {
  const top = scale.top[name];
  if (!(top > 0)) return 0.5;
  if (score >= 0 && (scale.low[name] ?? 0) >= 0) return Math.max(0.04, Math.min(1, score / top));
  const low = Math.min(scale.low[name], 0);
  return Math.max(0.04, (score - low) / (top - low || 1)); // negative raw scores (a cross-encoder's logits)
}

export function evidenceBars(hit, scale) {
  const rows = scale.order.map((name) => {
    const ev = hit.channels[name];
    const fill = ev ? h("span", { class: `fill ch-${name}` }) : null;
    if (fill) fill.style.width = `${(share(scale, name, ev.score) * 100).toFixed(1)}%`;
    return h("div", { class: `channel${ev ? "" : " absent"}`, dataset: { channel: name },
      title: `${name} — ${CHANNEL_HELP[name] || "a recall channel"}${ev ? "" : " (did not find this hit)"}` },
    h("span", { class: "ch-name" }, name),
    h("span", { class: "track" }, fill),
    h("span", { class: "ch-rank" }, ev ? `#${ev.rank}` : "–"),
    h("span", { class: "ch-score" }, ev ? fmtScore(ev.score) : ""));
  });
  return h("div", { class: "evidence", "aria-label": "Evidence per channel" }, rows);
}

// "notes/alpha.md › Goals › Timeline" or "session trip › turn trip:3 · Alice · 14 Mar 2024".
export function provenance(entry) {
  const src = entry.source || {};
  const parts = [];
  if (src.path || src.doc_id) {
    parts.push(h("span", { class: "path" }, src.path || src.doc_id));
    for (const heading of src.heading_path || []) parts.push(h("span", { class: "sep" }, "›"), h("span", {}, heading));
  }
  if (src.session_id) {
    if (parts.length) parts.push(h("span", { class: "sep" }, "·"));
    parts.push(sessionLink(src.session_id, `session ${src.session_id}`));
    if (src.turn_id) parts.push(h("span", { class: "sep" }, "›"), h("span", {}, `turn ${src.turn_id}`));
  }
  const sep = () => (parts.length ? h("span", { class: "sep" }, "·") : null);
  if (src.speaker) parts.push(sep(), h("span", { class: "speaker" }, src.speaker));
  if (entry.timestamp) parts.push(sep(), timeEl(entry.timestamp));
  return parts.length ? h("div", { class: "provenance" }, parts) : null;
}

// The turns a fact came from, each as a link with the turn's words (fetched once).
export function derivedFrom(entry) {
  if (!entry.derived_from || !entry.derived_from.length) return null;
  const box = h("div", { class: "derived" }, h("span", { class: "muted" }, "from "));
  entry.derived_from.forEach((id, i) => {
    const quote = h("span", { class: "quote" });
    const label = entry.derived_from.length === 1 && entry.source?.turn_id ? `turn ${entry.source.turn_id}` : `turn ${shortId(id)}`;
    box.append(i ? ", " : "", entryLink(id, label), " ", quote);
    getEntry(id).then((turn) => {
      const who = turn.source?.speaker;
      quote.textContent = `“${turn.text.length > 140 ? `${turn.text.slice(0, 140)}…` : turn.text}”${who ? ` — ${who}` : ""}`;
      if (turn.timestamp) quote.title = fmtTime(turn.timestamp);
    }).catch(() => { quote.textContent = "(no longer stored)"; quote.classList.add("muted"); });
  });
  return box;
}

export function tagChips(entry) {
  const persons = chips(entry.persons, "chip person");
  const entities = chips(entry.entities, "chip entity");
  return persons.length || entities.length ? h("div", { class: "chips" }, persons, entities) : null;
}

export function contextTurns(hit) {
  if (!hit.context || !hit.context.length) return null;
  const before = hit.context.filter((t) => t.offset < 0);
  const after = hit.context.filter((t) => t.offset > 0);
  const line = (t) => h("li", { class: "ctx-turn" }, h("span", { class: "speaker" }, t.speaker || "?"), " ",
    clipped(spoken(t.text, t.speaker), (text) => entryLink(t.id, text), 300));
  return h("ol", { class: "context" }, before.map(line),
    h("li", { class: "ctx-turn self" }, h("span", { class: "speaker" }, hit.source?.speaker || ""), " ",
      clipped(spoken(hit.text, hit.source?.speaker), undefined, 300)),
    after.map(line));
}

export function hitCard(hit, index, scale) {
  return h("article", { class: "card hit", dataset: { id: hit.id } },
    h("div", { class: "hit-main" },
      h("div", { class: "hit-head" },
        h("span", { class: "rank" }, String(index + 1)), kindBadge(hit.kind), provenance(hit)),
      h("p", { class: "hit-text", lang: langOf(hit.text) }, clipped(hit.text)),
      derivedFrom(hit), contextTurns(hit),
      h("div", { class: "hit-foot" }, tagChips(hit), h("span", { class: "grow" }),
        entryLink(hit.id, h("span", { class: "mono" }, shortId(hit.id)), " open ›"))),
    h("div", { class: "hit-side" },
      h("div", { class: "score", title: "final score" }, h("span", { class: "label" }, "score"), fmtScore(hit.score)),
      evidenceBars(hit, scale)));
}
