"""One question through one pipeline: the stages a preset lists, in its order.

plan -> recall (channels in parallel) -> fuse -> neighbours -> recency -> gate -> group -> rerank -> diversify ->
reflect, then the top k. Each stage is a small callable (see `context.Stage`) that takes
candidates and returns candidates and records itself in the trace.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from datetime import datetime, timezone
from typing import Any

from ..embed.base import Embedder
from ..model import Candidate, ChannelScore, Hit, SearchResult
from ..plan.base import Planner
from ..plan.model import QueryPlan
from ..plan.rules import NoPlanner
from ..store.base import Filters, Store
from .context import Retrieve, SearchContext, Stage, attach_entries, merge_candidates
from .neighbours import NeighboursStage
from .recency import RecencyStage
from .presets import POST_FUSION, Preset
from .recall import FuseStage, RecallStage
from .stages import DiversifyStage, GateStage, GroupStage, PlanStage, RerankStage, ReflectStage
from .trace import Trace

_EXPLAIN_TOP = 20


class SearchPipeline:
    """Runs a preset against a store. Stateless apart from its collaborators, so thread-safe.

    ``planner`` reads the question into a `QueryPlan` (default: no planning); ``reflector``
    (an LLM) may ask for more recall when the preset allows reflection rounds; ``reranker``
    (a cross-encoder with ``score(query, texts)``) serves the rerank stage. Each search builds
    the preset's stages with what each needs; no stage reaches back into the pipeline.
    """

    def __init__(self, store: Store, embedder: Embedder | None, executor: Executor,
                 planner: Planner | None = None, reflector: Any = None, reranker: Any = None) -> None:
        self.store = store
        self.embedder = embedder
        self.executor = executor
        self.planner: Planner = planner or NoPlanner()
        self.reflector = reflector
        self.reranker = reranker

    def stages(self, preset: Preset) -> list[Stage]:
        """The preset's stages, in its order, each built with its section and collaborators."""
        recall = RecallStage(preset.channels, self.store, self.embedder, self.executor, preset.adapt)
        fuse = FuseStage(preset)

        def retrieve(ctx: SearchContext, plan: QueryPlan, label: str) -> list[Candidate]:
            """Recall and fuse once more for `plan` (a retry or a reflection gap), traced under
            `label`; the fused candidates also join ``ctx.fused`` (each row's best score)."""
            saved, ctx.plan = ctx.plan, plan
            try:
                found = self._run_stage(ctx, recall, [], label)
                fused = self._run_stage(ctx, fuse, found, label)
            finally:
                ctx.plan = saved
            ctx.fused = merge_candidates(ctx.fused, fused)
            return fused

        post = [self._post_fusion(name, preset, retry=None) for name in preset.stages if name in POST_FUSION]

        def after_fusion(ctx: SearchContext, candidates: list[Candidate], label: str) -> list[Candidate]:
            """The preset's post-fusion stages again (gates without a second retry), for reflection."""
            for stage in post:
                candidates = self._run_stage(ctx, stage, candidates, label)
            return candidates

        built: dict[str, Stage] = {
            "plan": PlanStage(self.planner, self.store.match_names), "recall": recall, "fuse": fuse,
            "reflect": ReflectStage(self.reflector, preset.reflect_rounds, self.store.fetch, retrieve, after_fusion,
                                    self.hits),
        }
        return [built[name] if name in built else self._post_fusion(name, preset, retry=retrieve)
                for name in preset.stages]

    def _post_fusion(self, name: str, preset: Preset, retry: Retrieve | None) -> Stage:
        if name == "neighbours":
            return NeighboursStage(preset.neighbours, self.store.turn_neighbours, self.store.fetch)
        if name == "recency":
            return RecencyStage(preset.recency, self.store.fetch, self.store.vectors_of)
        if name == "gate":
            return GateStage(preset.gate, self.store, retry)
        if name == "group":
            return GroupStage(preset.group, self.store.fetch)
        if name == "rerank":
            return RerankStage(preset.rerank, self.reranker, self.store.fetch)
        if name == "diversify":
            return DiversifyStage(preset.diversify, self.store)
        raise ValueError(f"unknown stage {name!r}")

    def run(
        self,
        query: str,
        k: int,
        preset: Preset,
        namespace: str | None,
        filters: Filters,
        group_by: str | None = None,
        now: datetime | None = None,
        explain: bool = False,
        reflect: bool = True,
        context: int = 0,
    ) -> SearchResult:
        """Search with `preset`. `now` is the reference time relative expressions ("last week",
        "上周") are resolved against; `explain` adds candidate lists to the trace; `reflect=False`
        skips reflection for this query."""
        started = time.perf_counter()
        trace = Trace()
        clients = _clients(self.planner, self.reflector)
        llm_before = {id(c): c.usage.calls for c in clients}
        ctx = SearchContext(query=query, k=k, namespace=namespace, filters=filters, trace=trace,
                            group_by=group_by, now=now, explain=explain, reflect=reflect,
                            plan=QueryPlan(query=query, planner="none"))
        trace.info = {"preset": preset.name, "pipeline": list(preset.stages), "namespace": namespace,
                      "filters": _filters_dict(filters)}
        candidates: list[Candidate] = []
        for stage in self.stages(preset):
            candidates = self._run_stage(ctx, stage, candidates)
            if stage.name == "fuse":
                ctx.fused = candidates
        with trace.stage("select", k=k) as rec:
            selected = attach_entries(self.store.fetch, candidates[:k])
            if len(selected) < k and len(candidates) > k:  # rows deleted since recall
                selected = attach_entries(self.store.fetch, candidates)[:k]
            rec["n"] = len(selected)
            if explain:
                rec["candidates"] = self.describe(selected)

        out = trace.to_dict()
        calls = _llm_calls_since(llm_before, clients)
        if calls:
            out["llm_calls"] = calls
        out["total_ms"] = round((time.perf_counter() - started) * 1000, 3)
        hits = self.hits(selected, ctx)
        if context:
            self._attach_context(hits, selected, context, namespace, filters)
        return SearchResult(query=query, hits=hits, trace=out)

    def _attach_context(self, hits: list[Hit], selected: list[Candidate], span: int, namespace: str | None,
                        filters: Filters) -> None:
        """Each turn hit's `span` neighbouring turns (LycheeMem's source windows), within scope."""
        around = self.store.turn_neighbours([c.rowid for c in selected], span, namespace, filters)
        entries = self.store.fetch(sorted({r for rows in around.values() for _, r in rows}))
        for hit, cand in zip(hits, [c for c in selected if c.entry is not None]):
            hit.context = [(offset, entries[r]) for offset, r in sorted(around.get(cand.rowid, [])) if r in entries]

    def _run_stage(self, ctx: SearchContext, stage: Stage, candidates: list[Candidate],
                   label: str = "") -> list[Candidate]:
        with ctx.trace.stage(stage.name + label) as rec:
            out = stage(ctx, candidates, rec)
            if "skipped" not in rec and stage.name != "plan":
                rec.setdefault("n", len(out))
                if ctx.explain and stage.name not in ("plan", "recall"):
                    rec["candidates"] = self.describe(out[:_EXPLAIN_TOP], rec.pop("contributions", None))
        return out

    # -- output ---------------------------------------------------------------------------
    @staticmethod
    def hits(selected: list[Candidate], ctx: SearchContext | None = None) -> list[Hit]:
        return [Hit(id=c.entry.id or "", text=c.entry.text, score=c.score, entry=c.entry,
                    channels=_evidence(c, ctx)) for c in selected if c.entry is not None]

    def describe(self, candidates: list[Candidate],
                 contributions: dict[int, dict[str, float]] | None = None) -> list[dict[str, Any]]:
        """Entry ids with scores and per-channel evidence, for the trace (only with explain);
        with a learned fusion, each candidate's largest feature contributions to its logit."""
        missing = [c.rowid for c in candidates if c.entry is None]
        entries = self.store.fetch(missing) if missing else {}
        out = []
        for c in candidates:
            entry = c.entry or entries.get(c.rowid)
            row: dict[str, Any] = {"id": entry.id if entry else None, "score": round(c.score, 6),
                                   "channels": {n: {"rank": cs.rank, "score": round(cs.score, 6)}
                                                for n, cs in c.channels.items()}}
            if contributions and c.rowid in contributions:
                row["contributions"] = contributions[c.rowid]
            out.append(row)
        return out


def _clients(*parts: Any) -> list[Any]:
    """The distinct LLM clients behind the planner and the reflector (none without an LLM)."""
    found: dict[int, Any] = {}
    for part in parts:
        client = getattr(part, "client", None)
        if client is not None and hasattr(client, "calls"):
            found[id(client)] = client
    return list(found.values())


def _llm_calls_since(before: dict[int, int], clients: list[Any]) -> list[dict[str, Any]]:
    """The calls each client logged since `before` (its count of logical calls then)."""
    out: list[dict[str, Any]] = []
    for client in clients:
        n = client.usage.calls - before.get(id(client), 0)
        if n > 0:
            out.extend(client.calls[-n:])
    return out


def _filters_dict(filters: Filters) -> dict[str, object]:
    from dataclasses import asdict

    out = {k: v for k, v in asdict(filters).items() if v not in (None, [], {})}
    if isinstance(out.get("visible_at"), float):  # the clock expiry is read against, as every other trace time: ISO
        out["visible_at"] = datetime.fromtimestamp(out["visible_at"], timezone.utc).isoformat(timespec="seconds")
    return out


def _evidence(cand: Candidate, ctx: SearchContext | None) -> dict[str, ChannelScore]:
    """The channels that found a hit, as the user should read them: fusion ranks lexical
    matches and translated ones on one BM25 list, but a hit matched only through the
    query's translations shares no word with it, so its evidence says `translated`, with its
    rank and score among the translations (and `lexical` too if its own words matched, with
    its rank among the word matches)."""
    lexical = cand.channels.get("lexical")
    if ctx is None or lexical is None or not ctx.translated:
        return cand.channels
    out: dict[str, ChannelScore] = {}
    for name, score in cand.channels.items():
        if name != "lexical":
            out[name] = score
            continue
        if cand.rowid in ctx.worded:
            out["lexical"] = ChannelScore(*ctx.worded[cand.rowid])
        if cand.rowid in ctx.translated:
            out["translated"] = ChannelScore(*ctx.translated[cand.rowid])
        if not out.keys() & {"lexical", "translated"}:  # found in an earlier recall round
            out["lexical"] = lexical
    return out
