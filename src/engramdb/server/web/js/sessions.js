// Conversation sessions: the list (GET /v1/sessions), and one session as a thread of its
// turns, each with the facts derived from it (a fact's `derived_from` names its turns).

import { get, listAll } from "./api.js";
import { fmtTime, h, langOf, notice, plural, replace, spoken, timeEl } from "./dom.js";
import { tagChips } from "./evidence.js";
import { entryLink, link, sessionLink } from "./url.js";

export async function renderSessions(root) {
  document.title = "Sessions — Engram";
  const out = h("div", { id: "sessions-output" }, h("p", { class: "muted loading" }, "Loading…"));
  replace(root, h("div", { class: "view-head" }, h("h1", {}, "Sessions"),
    h("p", { class: "muted" }, "Conversations stored turn by turn, most recently written first.")), out);
  let sessions;
  try {
    sessions = await get("/v1/sessions", { limit: 200 });
  } catch (exc) {
    replace(out, notice(exc.display || String(exc)));
    return;
  }
  if (!sessions.length) {
    replace(out, h("div", { class: "empty" }, h("p", {}, "No conversation sessions in this namespace."),
      h("p", { class: "muted" }, "Store turns with POST /v1/conversations/{session}/turns, Memory.add_turn or engram import.")));
    return;
  }
  replace(out, h("ul", { class: "sessions", id: "sessions" }, sessions.map((s) => h("li", { class: "card session-row", dataset: { session: s.session_id } },
    h("div", { class: "row-head" }, sessionLink(s.session_id, h("strong", {}, s.session_id)), h("span", { class: "grow" }),
      h("span", { class: "muted small" }, s.start ? [timeEl(s.start), s.end && s.end !== s.start ? [" – ", timeEl(s.end)] : null] : "")),
    h("p", { class: "muted" }, `${plural(s.turns, "turn")} · ${plural(s.facts, "fact")}`,
      s.speakers.length ? ` · ${s.speakers.join(", ")}` : "")))));
}

function order(a, b) {
  const ta = a.timestamp || "";
  const tb = b.timestamp || "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  const na = Number((a.source?.turn_id || "").split(":").pop());
  const nb = Number((b.source?.turn_id || "").split(":").pop());
  return Number.isFinite(na) && Number.isFinite(nb) ? na - nb : 0;
}

export async function renderSession(root, p) {
  const sid = p.get("session") || "";
  document.title = `Session ${sid} — Engram`;
  replace(root, h("p", { class: "muted loading" }, "Loading…"));
  let entries;
  try {
    entries = await listAll({ filter: [`session_id=${sid}`], order: "oldest" });
  } catch (exc) {
    replace(root, notice(exc.display || String(exc)));
    return;
  }
  const turns = entries.filter((e) => e.kind === "turn").sort(order);
  const facts = entries.filter((e) => e.kind === "fact");
  const byTurn = new Map(turns.map((t) => [t.id, []]));
  const loose = [];
  for (const fact of facts) {
    const from = (fact.derived_from || []).filter((id) => byTurn.has(id));
    if (from.length) byTurn.get(from[from.length - 1]).push(fact);
    else loose.push(fact);
  }
  const speakers = [...new Set(turns.map((t) => t.source?.speaker).filter(Boolean))];
  const side = (speaker) => (speakers.indexOf(speaker) % 2 === 1 ? "right" : "left");
  const factItem = (f) => h("li", { class: "fact" }, h("span", { class: "badge kind-fact" }, "fact"), " ", entryLink(f.id, f.text), tagChips(f));
  const thread = turns.map((t) => h("li", { class: `turn ${side(t.source?.speaker)}`, dataset: { id: t.id } },
    h("div", { class: "bubble" },
      h("div", { class: "turn-head" }, h("strong", { class: "speaker" }, t.source?.speaker || "?"), timeEl(t.timestamp),
        h("span", { class: "grow" }), entryLink(t.id, h("span", { class: "muted small" }, t.source?.turn_id || "open"))),
      h("p", { class: "turn-text", lang: langOf(t.text) }, spoken(t.text, t.source?.speaker))),
    byTurn.get(t.id).length ? h("ul", { class: "facts" }, byTurn.get(t.id).map(factItem)) : null));
  const [from, to] = turns.length ? [fmtTime(turns[0].timestamp), fmtTime(turns[turns.length - 1].timestamp)] : ["", ""];
  const span = from === to ? from : `${from} – ${to}`;
  replace(root, h("p", { class: "crumbs" }, link({ view: "sessions" }, "‹ Sessions")),
    h("div", { class: "view-head" }, h("h1", {}, `Session ${sid}`),
      h("p", { class: "muted", id: "session-summary" }, [plural(turns.length, "turn"), plural(facts.length, "fact"), speakers.join(", "), span]
        .filter(Boolean).join(" · "))),
    turns.length || facts.length ? null : h("div", { class: "empty" }, h("p", {}, "Nothing stored for this session in this namespace.")),
    h("ol", { class: "thread", id: "thread" }, thread),
    loose.length ? h("section", { class: "card" }, h("h2", {}, "Other facts of this session"), h("ul", { class: "facts" }, loose.map(factItem))) : null);
}
