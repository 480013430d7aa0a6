"""The stages around recall and fusion: plan, gate, group, rerank, diversify, reflect.

Each is a small callable ``(ctx, candidates, rec) -> candidates`` (see `context.Stage`), built
with its preset section and the collaborators it calls; a preset lists which run and in what
order. A stage with nothing configured passes its input
through and says why in its trace record.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..conversation.extract import is_small_talk
from ..model import Candidate, ChannelScore, Hit, timestamp_epoch
from ..plan.base import PlanContext, Planner
from ..store.base import Store
from ..text.tokenize import query_terms
from .context import AfterFusion, Fetch, Retrieve, SearchContext, attach_entries
from .diversify import mmr
from .gates import GateConfig
from .group import cap, collapse
from .presets import DiversifyConfig, GroupConfig, RerankConfig


class PlanStage:
    """Reads the question into `ctx.plan` (keywords, names, time window, intent, sub-queries).

    Built with the planner and the store's ``match_names(namespace, text)`` (the names it knows)."""

    name = "plan"

    def __init__(self, planner: Planner, match_names: Callable[[str | None, str], list[tuple[str, str]]]) -> None:
        self.planner, self.match_names = planner, match_names

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        context = PlanContext(now=ctx.now, match_names=lambda text: self.match_names(ctx.namespace, text))
        plan = ctx.plan = self.planner.plan(ctx.query, context)
        rec["query"] = ctx.query
        rec["planner"] = plan.planner
        rec["plan"] = plan.to_dict()
        rec["time_window"] = (
            {"start": plan.time_start.isoformat(), "end": plan.time_end.isoformat(),  # type: ignore[union-attr]
             "expression": plan.time_expression} if plan.has_window else None
        )
        past = plan.has_window and ctx.now is not None and plan.time_end <= ctx.now  # type: ignore[operator]
        if (plan.former or past) and not ctx.filters.include_superseded:
            # "Where did I live before?", "Where did I live in 2023?": what a `supersedes` link
            # retired was true then, and is the answer, so such a question searches the
            # superseded entries too (a question about now, or with no time, does not).
            ctx.filters = replace(ctx.filters, include_superseded=True)
            rec["include_superseded"] = "a question about a former state" if plan.former else "a past time window"
        return candidates


class GateStage:
    """Relevance floors (`gates.GateConfig`). When nothing passes, one CRAG-style retry:
    recall and fusion again without sub-query expansion, and the gates relaxed."""

    name = "gate"

    def __init__(self, gate: GateConfig, store: Store, retrieve: Retrieve | None) -> None:
        """`retrieve` recalls and fuses again for the retry (None: no retry)."""
        self.gate, self.store, self.retrieve = gate, store, retrieve

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        gate = self.gate
        if not gate.active:
            rec["skipped"] = "no gates set"
            return candidates
        if gate.cross_lingual:  # the only floor that reads the entries' text (their script)
            candidates = attach_entries(self.store.fetch, candidates)
        kept = gate.apply(candidates, ctx.query, self._coverage(ctx, candidates))
        rec["n_in"], rec["n_out"] = len(candidates), len(kept)
        if kept or not candidates or self.retrieve is None:
            return kept
        # A too-strict floor or a bad expansion must not lose everything.
        simple = replace(ctx.plan, sub_queries=[ctx.plan.query], routes=[])
        again = self.retrieve(ctx, simple, " (retry)")
        relaxed = gate.relaxed()
        if relaxed is not None and again:
            if gate.cross_lingual:
                again = attach_entries(self.store.fetch, again)
            again = relaxed.apply(again, ctx.query, self._coverage(ctx, again))
        rec["retry"] = {"gates": "relaxed" if relaxed is not None else "off", "n_out": len(again)}
        return again

    def _coverage(self, ctx: SearchContext, candidates: list[Candidate]) -> dict[int, int]:
        """Distinct query terms per candidate, from the store's term index (no re-analysis of text)."""
        return self.store.term_coverage(query_terms(ctx.query), [c.rowid for c in candidates])


class GroupStage:
    """Grouping by source: the caller's ``group_by`` keeps the best entry per group; a preset's
    ``[group]`` takes Molore's deep pool (``k · pool_factor``), drops repeated text when
    ``dedupe``, keeps at most ``per_group`` per source and the best ``k · keep_factor``."""

    name = "group"

    def __init__(self, conf: GroupConfig, fetch: Fetch) -> None:
        self.conf, self.fetch = conf, fetch

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        conf = self.conf
        if ctx.group_by is not None:
            rec["by"], rec["per_group"] = ctx.group_by, 1
            return self._collapse(ctx, candidates, rec)
        if not conf.active:
            rec["skipped"] = "no [group] settings and no group_by"
            return candidates
        depth = ctx.k * conf.pool_factor
        pool = attach_entries(self.fetch, candidates[:depth])
        if conf.small_talk is not None:
            pool, rec["small_talk"] = _small_talk_down(pool, conf.small_talk)
        if conf.dedupe:
            pool = _dedupe(pool)
        if conf.derived:
            if ctx.plan.has_window and ctx.plan.time_start is not None and ctx.plan.time_end is not None:
                pool, rec["dated_elsewhere"] = _dated_by_their_facts(pool, ctx.plan.time_start.timestamp(),
                                                                     ctx.plan.time_end.timestamp())
            before = len(pool)
            pool = _one_per_evidence(pool)
            rec["derived_dropped"] = before - len(pool)
        if conf.per_group is not None:
            pool = cap(pool, conf.by, conf.per_group)
        if conf.per_group is None and not conf.dedupe:
            kept = pool + candidates[depth:]  # `derived` alone filters the pool; it cuts nothing
        else:
            kept = pool[: ctx.k * conf.keep_factor]  # Molore's pool
        rec.update(by=conf.by, per_group=conf.per_group, pool=depth, n_in=len(candidates), n_out=len(kept))
        return kept

    def _collapse(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        """Fetch in windows until k groups fill, so a long tail of one source is not all loaded."""
        assert ctx.group_by is not None
        window = max(ctx.k * 4, 20)
        chosen: list[Candidate] = []
        end = 0
        while end < len(candidates):
            end += window
            loaded = attach_entries(self.fetch, candidates[:end])
            chosen = collapse(loaded, ctx.group_by)
            if len(chosen) >= ctx.k:
                break
        rec["n_in"], rec["n_out"] = len(candidates), len(chosen)
        return chosen


_SPACE = re.compile(r"\s+")


def _small_talk_down(pool: list[Candidate], factor: float) -> tuple[list[Candidate], int]:
    """`pool` with each small-talk turn's score times `factor`, re-sorted; how many were scaled.

    A "👍" or "haha yes" turn inside a time window gets the window's boost like any turn, and
    nothing else tells it from what happened then; it answers no question by itself. (The
    rows past the pool keep their place after it.)"""
    scaled = 0
    out: list[Candidate] = []
    for c in pool:
        if c.entry is not None and c.entry.kind == "turn" and is_small_talk(c.entry.text, c.entry.source.speaker):
            c = replace(c, score=c.score * factor)
            scaled += 1
        out.append(c)
    if not scaled:
        return pool, 0
    return sorted(out, key=lambda c: -c.score), scaled


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """The first (best) of each text, compared case- and whitespace-insensitively."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for c in candidates:
        key = _SPACE.sub(" ", c.entry.text if c.entry else "").strip().casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
    return out


def _dated_by_their_facts(pool: list[Candidate], start: float, end: float) -> tuple[list[Candidate], int]:
    """`pool` without the turns inside the question's window only by when they were said, whose
    facts in the pool date what they tell outside it: "I went to the dentist yesterday", said on
    11 March, is about 10 March, which its fact says; asked what happened on the 11th, the turn
    took the window's boost and the fact's place. A turn with a fact inside the window, or one
    undated, stays."""
    outside: dict[str, bool] = {}  # turn id -> every dated fact of it in the pool is outside
    for c in pool:
        entry = c.entry
        if entry is None or entry.kind != "fact" or not entry.derived_from:
            continue
        # Only a fact that resolved a time the turn said ("yesterday") dates its event apart.
        begin = timestamp_epoch(entry.timestamp) if entry.metadata.get("time_expression") else None
        if begin is None:
            away = False
        else:
            finish = timestamp_epoch(entry.timestamp_end) or begin
            inside = begin < end and (finish > start if finish > begin else begin >= start)
            away = not inside
        for turn in entry.derived_from:
            outside[turn] = outside.get(turn, True) and away
    kept = [c for c in pool if not (c.entry is not None and c.entry.kind == "turn" and outside.get(c.entry.id or "")
                                    and _said_inside(c.entry.timestamp, start, end))]
    return kept, len(pool) - len(kept)


def _said_inside(timestamp: str | None, start: float, end: float) -> bool:
    said = timestamp_epoch(timestamp)
    return said is not None and start <= said < end


def _one_per_evidence(candidates: list[Candidate]) -> list[Candidate]:
    """A fact and the turns it was derived from are one piece of evidence: going best first,
    drop a turn that a better fact came from, and a fact whose every source turn (or a
    better fact from the same turns) is already above it; a fact that says more than the
    turns above it (a question's and its answer's) takes the place of the first. So ten hits are ten things said,
    not a turn and its restatement; the fact keeps its `derived_from` ids for the turn."""
    shown: set[str] = set()
    out: list[Candidate] = []
    for c in candidates:
        assert c.entry is not None  # the pool's entries are attached
        stands_for = _stands_for(c)
        if stands_for <= shown:
            continue
        if c.entry.derived_from and stands_for & shown:
            # A fact restated from a question and its answer, below the question's turn: the
            # question alone does not answer, the fact says both, so it takes the turn's place
            # (and rank) rather than a second one.
            at = next((i for i, o in enumerate(out) if _stands_for(o) <= stands_for), None)
            if at is not None:
                out[at] = replace(c, score=out[at].score)
                out = [o for i, o in enumerate(out) if i <= at or not _stands_for(o) <= stands_for]
                shown |= stands_for
                continue
        shown |= stands_for
        out.append(c)
    return out


def _stands_for(c: Candidate) -> set[str]:
    """The turns a candidate says: a fact's sources, else the entry itself."""
    assert c.entry is not None
    return set(c.entry.derived_from) or {c.entry.id or str(c.rowid)}


def _minmax(values: np.ndarray) -> np.ndarray:
    span = float(values.max() - values.min()) if values.size else 0.0
    return (values - values.min()) / span if span else np.ones_like(values)


class RerankStage:
    """A cross-encoder reads question and entry together for the best ``[rerank] pool``.

    The pool's new score is ``weight · rerank + (1 − weight) · fused`` (each min-max
    normalised over the pool); the cross-encoder's raw score joins the evidence as channel
    ``rerank``. Candidates below the pool keep their order after it.
    """

    name = "rerank"

    def __init__(self, conf: RerankConfig, reranker: Any, fetch: Fetch) -> None:
        self.conf, self.reranker, self.fetch = conf, reranker, fetch

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        reranker = self.reranker
        if reranker is None:
            rec["skipped"] = "no cross-encoder (set [rerank] model or ENGRAM_RERANKER)"
            return candidates
        conf = self.conf
        pool = attach_entries(self.fetch, candidates[: max(conf.pool, ctx.k)])
        if not pool:
            return candidates
        raw = np.asarray(reranker.score(ctx.query, [c.entry.text for c in pool if c.entry]), dtype=np.float64)
        fused = np.asarray([c.score for c in pool], dtype=np.float64)
        combined = conf.weight * _minmax(raw) + (1 - conf.weight) * _minmax(fused)
        order = sorted(range(len(pool)), key=lambda i: (-combined[i], -raw[i], pool[i].rowid))
        by_raw = {i: r for r, i in enumerate(sorted(range(len(pool)), key=lambda i: -raw[i]), start=1)}
        rescored = [replace(c, score=float(combined[i]),
                            channels={**c.channels, "rerank": ChannelScore(rank=by_raw[i], score=float(raw[i]))})
                    for i, c in enumerate(pool)]
        rec.update(model=getattr(reranker, "name", type(reranker).__name__), pool=len(pool), weight=conf.weight)
        pool_ids = {c.rowid for c in pool}
        return [rescored[i] for i in order] + [c for c in candidates if c.rowid not in pool_ids]


class DiversifyStage:
    """MMR over the best ``[diversify] pool``: the k chosen first, the rest of the pool after."""

    name = "diversify"

    def __init__(self, conf: DiversifyConfig, store: Store) -> None:
        self.conf, self.store = conf, store

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        conf = self.conf
        if conf.mmr_lambda is None:
            rec["skipped"] = "no [diversify] mmr_lambda"
            return candidates
        pool = attach_entries(self.store.fetch, candidates[: max(ctx.k, conf.pool)])
        chosen = mmr(pool, ctx.k, conf.mmr_lambda, self.store.vectors_of([c.rowid for c in pool]))
        chosen_ids = {c.rowid for c in chosen}
        rec.update(mmr_lambda=conf.mmr_lambda, pool=len(pool),
                   moved=sum(1 for a, b in zip(chosen, pool) if a.rowid != b.rowid))
        return chosen + [c for c in candidates if c.rowid not in chosen_ids]


class ReflectStage:
    """Bounded LLM reflection: judge the top k; for each gap, recall the missing pieces, merge
    them into the fused ranking and run the preset's post-fusion stages again.

    Built with the reflector (None: no LLM), the preset's number of rounds, the entry loader,
    a retriever (recall + fuse for a gap plan) and the post-fusion stages to run again."""

    name = "reflect"

    def __init__(self, reflector: Any, rounds: int, fetch: Fetch, retrieve: Retrieve, after_fusion: AfterFusion,
                 to_hits: Callable[[list[Candidate]], list[Hit]]) -> None:
        self.reflector, self.rounds, self.fetch = reflector, rounds, fetch
        self.retrieve, self.after_fusion, self.to_hits = retrieve, after_fusion, to_hits

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        rounds = self.rounds if (ctx.reflect and self.reflector is not None) else 0
        if not rounds:
            rec["skipped"] = ("reflection off for this query" if not ctx.reflect else
                              "no LLM configured" if self.reflector is None else "reflect_rounds = 0")
            return candidates
        rec["rounds"] = []
        for round_ in range(rounds):
            top = attach_entries(self.fetch, candidates[: ctx.k])
            judgement = self.reflector.judge(ctx.query, ctx.plan, self.to_hits(top))
            rec["rounds"].append({"round": round_ + 1, **judgement.to_dict()})
            if judgement.complete or not judgement.gap_queries:
                break
            gap_plan = replace(ctx.plan, query=judgement.gap_queries[0], sub_queries=judgement.gap_queries,
                               keywords=[], routes=[])
            # The retriever merges the gap's fused candidates into ctx.fused (each row's best
            # fused score); the post-fusion stages (rerank among them) run again over it, so
            # old and new candidates compete on one scale.
            self.retrieve(ctx, gap_plan, f" (gap {round_ + 1})")
            candidates = self.after_fusion(ctx, list(ctx.fused), f" (gap {round_ + 1})")
        return candidates
