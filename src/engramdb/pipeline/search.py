"""One question through one pipeline: the stages a preset lists, in its order.

plan -> recall (channels in parallel) -> fuse -> neighbours -> gate -> group -> rerank -> diversify ->
reflect, then the top k. Each stage is a small callable (see `context.Stage`) that takes
candidates and returns candidates and records itself in the trace.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from datetime import datetime
from typing import Any

from ..embed.base import Embedder
from ..model import Candidate, Hit, SearchResult
from ..plan.base import Planner
from ..plan.model import QueryPlan
from ..plan.rules import NoPlanner
from ..store.base import Filters, Store
from .context import SearchContext, Stage, attach_entries
from .neighbours import NeighboursStage
from .presets import POST_FUSION, Preset
from .recall import FuseStage, RecallStage
from .stages import DiversifyStage, GateStage, GroupStage, PlanStage, RerankStage, ReflectStage
from .trace import Trace

STAGE_TYPES: dict[str, type] = {
    "plan": PlanStage, "recall": RecallStage, "fuse": FuseStage, "neighbours": NeighboursStage,
    "gate": GateStage, "group": GroupStage, "rerank": RerankStage, "diversify": DiversifyStage, "reflect": ReflectStage,
}
_EXPLAIN_TOP = 20


class SearchPipeline:
    """Runs a preset against a store. Stateless apart from its collaborators, so thread-safe.

    ``planner`` reads the question into a `QueryPlan` (default: no planning); ``reflector``
    (an LLM) may ask for more recall when the preset allows reflection rounds; ``reranker``
    (a cross-encoder with ``score(query, texts)``) serves the rerank stage.
    """

    def __init__(self, store: Store, embedder: Embedder | None, executor: Executor,
                 planner: Planner | None = None, reflector: Any = None, reranker: Any = None) -> None:
        self.store = store
        self.embedder = embedder
        self.executor = executor
        self.planner: Planner = planner or NoPlanner()
        self.reflector = reflector
        self.reranker = reranker

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
        ctx = SearchContext(query=query, k=k, preset=preset, namespace=namespace, filters=filters, trace=trace,
                            engine=self, group_by=group_by, now=now, explain=explain, reflect=reflect,
                            plan=QueryPlan(query=query, planner="none"))
        trace.info = {"preset": preset.name, "pipeline": list(preset.stages), "namespace": namespace,
                      "filters": _filters_dict(filters)}
        candidates: list[Candidate] = []
        for name in preset.stages:
            candidates = self._run_stage(ctx, STAGE_TYPES[name](), candidates)
        with trace.stage("select", k=k) as rec:
            selected = attach_entries(ctx, candidates[:k])
            if len(selected) < k and len(candidates) > k:  # rows deleted since recall
                selected = attach_entries(ctx, candidates)[:k]
            rec["n"] = len(selected)
            if explain:
                rec["candidates"] = self.describe(selected)

        out = trace.to_dict()
        calls = _llm_calls_since(llm_before, clients)
        if calls:
            out["llm_calls"] = calls
        out["total_ms"] = round((time.perf_counter() - started) * 1000, 3)
        hits = self.hits(selected)
        if context:
            self._attach_context(hits, selected, context, namespace, filters)
        return SearchResult(query=query, hits=hits, trace=out)

    def _attach_context(self, hits: list[Hit], selected: list[Candidate], span: int, namespace: str | None,
                        filters: Filters) -> None:
        """Each turn hit's `span` neighbouring turns (LycheeMem's source windows), within scope."""
        around = self.store.turn_neighbours([c.rowid for c in selected], span, namespace, filters)
        entries = self.store.fetch(sorted({r for rows in around.values() for r in rows}))
        for hit, cand in zip(hits, [c for c in selected if c.entry is not None]):
            rows = sorted(around.get(cand.rowid, []))
            before = [r for r in rows if r < cand.rowid]
            after = [r for r in rows if r > cand.rowid]
            hit.context = [(i - len(before), entries[r]) for i, r in enumerate(before) if r in entries] + \
                          [(i + 1, entries[r]) for i, r in enumerate(after) if r in entries]

    def _run_stage(self, ctx: SearchContext, stage: Stage, candidates: list[Candidate],
                   label: str = "") -> list[Candidate]:
        with ctx.trace.stage(stage.name + label) as rec:
            out = stage(ctx, candidates, rec)
            if "skipped" not in rec and stage.name != "plan":
                rec.setdefault("n", len(out))
                if ctx.explain and stage.name not in ("plan", "recall"):
                    rec["candidates"] = self.describe(out[:_EXPLAIN_TOP])
        return out

    # -- callbacks for stages that recall again (gate retry, reflection) ------------------
    def retrieve(self, ctx: SearchContext, plan: QueryPlan, label: str) -> list[Candidate]:
        """Recall and fuse once more for `plan` (a retry or a reflection gap), traced under `label`."""
        saved, ctx.plan = ctx.plan, plan
        try:
            found = self._run_stage(ctx, RecallStage(), [], label)
            return self._run_stage(ctx, FuseStage(), found, label)
        finally:
            ctx.plan = saved

    def after_fusion(self, ctx: SearchContext, candidates: list[Candidate], label: str) -> list[Candidate]:
        """The preset's post-fusion stages again (gates without a second retry), for reflection."""
        for name in ctx.preset.stages:
            if name in POST_FUSION:
                stage = GateStage(retry=False) if name == "gate" else STAGE_TYPES[name]()
                candidates = self._run_stage(ctx, stage, candidates, label)
        return candidates

    # -- output ---------------------------------------------------------------------------
    @staticmethod
    def hits(selected: list[Candidate]) -> list[Hit]:
        return [Hit(id=c.entry.id or "", text=c.entry.text, score=c.score, entry=c.entry, channels=c.channels)
                for c in selected if c.entry is not None]

    def describe(self, candidates: list[Candidate]) -> list[dict[str, Any]]:
        """Entry ids with scores and per-channel evidence, for the trace (only with explain)."""
        missing = [c.rowid for c in candidates if c.entry is None]
        entries = self.store.fetch(missing) if missing else {}
        out = []
        for c in candidates:
            entry = c.entry or entries.get(c.rowid)
            out.append({"id": entry.id if entry else None, "score": round(c.score, 6),
                        "channels": {n: {"rank": cs.rank, "score": round(cs.score, 6)} for n, cs in c.channels.items()}})
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

    return {k: v for k, v in asdict(filters).items() if v not in (None, [], {})}
