"""One question through one pipeline: plan -> recall channels (parallel) -> fuse -> gate -> select -> reflect."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import replace
from datetime import datetime
from typing import Any, Callable

from ..embed.base import Embedder
from ..model import Candidate, Hit, SearchResult
from ..store.base import Filters, Store
from ..plan.base import PlanContext, Planner
from ..plan.model import QueryPlan
from ..plan.rules import NoPlanner
from ..text.patterns import exact_patterns
from ..text.tokenize import query_terms
from .fuse import max_score, route, rrf, union, weighted
from .diversify import mmr
from .group import cap, collapse
from .presets import Preset
from .trace import Trace


class SearchPipeline:
    """Runs a preset against a store: plan -> recall (parallel) -> fuse -> gate -> select -> reflect.

    Stateless apart from its collaborators, so thread-safe. ``planner`` reads the question
    into a `QueryPlan` (default: no planning); ``reflector`` (an LLM) may ask for more recall
    when the preset allows reflection rounds.
    """

    def __init__(self, store: Store, embedder: Embedder | None, executor: Executor,
                 planner: Planner | None = None, reflector: Any = None) -> None:
        self.store = store
        self.embedder = embedder
        self.executor = executor
        self.planner: Planner = planner or NoPlanner()
        self.reflector = reflector

    # -- recall --------------------------------------------------------------------------
    def _jobs(self, plan: QueryPlan, preset: Preset, namespace: str | None,
              filters: Filters) -> dict[str, Callable[[], list[tuple[int, float]]]]:
        """One job per channel, and one semantic job per sub-query (merged after)."""
        terms = query_terms(" ".join([plan.query, *plan.keywords]))
        names = plan.names()
        jobs: dict[str, Callable[[], list[tuple[int, float]]]] = {}
        for name, conf in preset.channels.items():
            if name == "semantic" and self.embedder is not None:
                for i, text in enumerate(plan.sub_queries):
                    jobs[f"semantic#{i}"] = (lambda k=conf.k, text=text, embedder=self.embedder:
                                             self.store.semantic(embedder.embed_query(text), k, namespace, filters))
            elif name == "lexical":
                jobs[name] = lambda k=conf.k: self.store.lexical(terms, k, namespace, filters)
            elif name == "symbolic" and names:
                jobs[name] = lambda k=conf.k: self.store.symbolic(plan.query, terms, k, namespace, filters,
                                                                  names=names)
            elif name == "temporal" and plan.has_window:
                span = (plan.time_start.timestamp(), plan.time_end.timestamp())  # type: ignore[union-attr]
                jobs[name] = lambda k=conf.k, span=span: self.store.temporal(span[0], span[1], terms, k,
                                                                            namespace, filters)
            elif name == "substring" and (patterns := exact_patterns(plan.query)):
                jobs[name] = lambda k=conf.k, patterns=patterns: self.store.substring(patterns, k, namespace, filters)
            elif name == "dated" and plan.intent == "temporal" and not plan.has_window:
                # "When did ...?" names no time but asks for one: entries that state their
                # event's time are the ones that can answer it.
                jobs[name] = lambda k=conf.k: self.store.dated(terms, k, namespace, filters)
        return jobs

    def _recall(self, plan: QueryPlan, preset: Preset, namespace: str | None, filters: Filters,
                rec: dict[str, Any]) -> dict[str, list[tuple[int, float]]]:
        futures = {name: self.executor.submit(_timed, job)
                   for name, job in self._jobs(plan, preset, namespace, filters).items()}
        results: dict[str, list[tuple[int, float]]] = {}
        rec["channels"] = {}
        for name, future in futures.items():
            rows, ms = future.result()
            channel = name.split("#")[0]
            if channel == "semantic" and channel in results:
                rows = _merge_max(results[channel], rows, preset.channels[channel].k)
                ms = max(ms, rec["channels"][channel]["ms"])
            results[channel] = rows
            rec["channels"][channel] = {"k": preset.channels[channel].k, "n": len(rows), "ms": ms,
                                        "top_score": round(rows[0][1], 6) if rows else None}
        if "semantic" in rec["channels"]:
            rec["channels"]["semantic"]["queries"] = len(plan.sub_queries)
        return results

    def _fuse(self, results: dict[str, list[tuple[int, float]]], preset: Preset, rec: dict[str, Any]) -> list[Candidate]:
        weights = {name: conf.weight for name, conf in preset.channels.items()}
        if preset.fusion == "weighted":
            fused = weighted(results, weights, preset.normalization)
            rec["normalization"] = preset.normalization
        elif preset.fusion == "union":
            fused = union(results, list(preset.channels))
        elif preset.fusion == "max":
            fused = max_score(results)
        elif preset.fusion == "route":
            fused = route(results, k=preset.rrf_k)
        else:
            fused = rrf(results, weights, preset.rrf_k)
            rec["k"] = preset.rrf_k
        rec["weights"] = weights
        rec["n"] = len(fused)
        return fused

    def _retrieve(self, plan: QueryPlan, preset: Preset, namespace: str | None, filters: Filters,
                  trace: Trace, explain: bool, label: str = "") -> list[Candidate]:
        with trace.stage(f"recall{label}") as rec:
            results = self._recall(plan, preset, namespace, filters, rec)
        with trace.stage(f"fuse{label}", method=preset.fusion) as rec:
            fused = self._fuse(results, preset, rec)
            if explain:
                rec["candidates"] = self._describe(fused[:_EXPLAIN_TOP])
        return fused

    # -- the whole search ----------------------------------------------------------------
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
    ) -> SearchResult:
        """Search with `preset`. `now` is the reference time relative expressions ("last week",
        "上周") are resolved against; `explain` adds candidate lists to the trace; `reflect=False`
        skips reflection for this query."""
        started = time.perf_counter()
        trace = Trace()
        clients = _clients(self.planner, self.reflector)
        llm_before = {id(c): c.usage.calls for c in clients}
        with trace.stage("plan", query=query) as rec:
            context = PlanContext(now=now, match_names=lambda text: self.store.gazetteer.match(self.store, namespace,
                                                                                             text))
            plan = self.planner.plan(query, context)
            rec["planner"] = plan.planner
            rec["plan"] = plan.to_dict()
            rec["time_window"] = (
                {"start": plan.time_start.isoformat(), "end": plan.time_end.isoformat(),  # type: ignore[union-attr]
                 "expression": plan.time_expression} if plan.has_window else None
            )
            rec["preset"] = preset.name
            rec["namespace"] = namespace
            rec["filters"] = _filters_dict(filters)

        fused = self._retrieve(plan, preset, namespace, filters, trace, explain)
        fused = self._gate(fused, preset, trace, query)
        if not fused and preset.gate.active:
            # CRAG-style: nothing passed the relevance gates. Retry once, gates relaxed and no
            # sub-query expansion, so a too-strict floor or a bad expansion cannot lose everything.
            simple = replace(plan, sub_queries=[plan.query], routes=[])
            fused = self._retrieve(simple, preset, namespace, filters, trace, explain, label=" (retry)")
            fused = self._gate(fused, preset, trace, query, relaxed=True)

        with trace.stage("select", k=k, group_by=group_by) as rec:
            selected = self._select(fused, k, group_by, preset)
            rec["n"] = len(selected)
            if preset.mmr_lambda is not None:
                rec["mmr"] = {"lambda": preset.mmr_lambda, "pool": max(k, preset.mmr_pool)}
            if explain:
                rec["candidates"] = self._describe(selected)

        rounds = preset.reflect_rounds if (reflect and self.reflector is not None) else 0
        for round_ in range(rounds):
            with trace.stage("reflect", round=round_ + 1) as rec:
                judgement = self.reflector.judge(query, plan, _hits(selected))
                rec.update(judgement.to_dict())
            if judgement.complete or not judgement.gap_queries:
                break
            gap_plan = replace(plan, query=judgement.gap_queries[0], sub_queries=judgement.gap_queries,
                               keywords=[], routes=[])
            more = self._retrieve(gap_plan, preset, namespace, filters, trace, explain, label=f" (gap {round_ + 1})")
            with trace.stage("select", k=k, group_by=group_by, round=round_ + 1) as rec:
                fused = _merge_candidates(fused, more)
                selected = self._select(fused, k, group_by, preset)
                rec["n"] = len(selected)

        out = trace.to_dict()
        calls = _llm_calls_since(llm_before, clients)
        if calls:
            out["llm_calls"] = calls
        out["total_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return SearchResult(query=query, hits=_hits(selected), trace=out)

    def _gate(self, fused: list[Candidate], preset: Preset, trace: Trace, query: str,
              relaxed: bool = False) -> list[Candidate]:
        gate = preset.gate
        if not gate.active:
            return fused
        with trace.stage("gate", relaxed=relaxed) as rec:
            if not relaxed:  # coverage reads the entries' text
                entries = self.store.fetch([c.rowid for c in fused if c.entry is None])
                for c in fused:
                    c.entry = c.entry or entries.get(c.rowid)
            kept = fused if relaxed else gate.apply(fused, query)
            rec["n_in"], rec["n_out"] = len(fused), len(kept)
        return kept

    def _describe(self, candidates: list[Candidate]) -> list[dict[str, Any]]:
        """Entry ids with fused and per-channel scores, for the trace (only with explain)."""
        missing = [c.rowid for c in candidates if c.entry is None]
        entries = self.store.fetch(missing) if missing else {}
        out = []
        for c in candidates:
            entry = c.entry or entries.get(c.rowid)
            out.append({"id": entry.id if entry else None, "score": round(c.score, 6),
                        "channels": {n: {"rank": cs.rank, "score": round(cs.score, 6)} for n, cs in c.channels.items()}})
        return out

    def _select(self, fused: list[Candidate], k: int, group_by: str | None,
                preset: Preset | None = None) -> list[Candidate]:
        """Attach entries to the best candidates; with grouping, fetch more until k groups fill.
        With MMR in the preset, the k are chosen from a deeper pool for relevance and variety."""
        lam = preset.mmr_lambda if preset is not None else None
        per_doc = preset.per_doc if preset is not None else None
        if group_by is None:
            depth = k
            if per_doc and preset:
                depth = k * preset.pool_factor  # Molore: a deep pool, capped per document
            if lam is not None and preset:
                depth = max(depth, preset.mmr_pool)
            top = fused[:depth]
            entries = self.store.fetch([c.rowid for c in top])
            for c in top:
                c.entry = entries.get(c.rowid)
            top = [c for c in top if c.entry is not None]
            if per_doc:
                top = cap(top, "doc", per_doc)
            if lam is not None:
                top = mmr(top, k, lam, self.store.vectors_of([c.rowid for c in top]))
            return top[:k]
        window = max(k * 4, 20)
        start = 0
        chosen: list[Candidate] = []
        while start < len(fused):
            batch = fused[start : start + window]
            entries = self.store.fetch([c.rowid for c in batch])
            for c in batch:
                c.entry = entries.get(c.rowid)
            chosen = collapse([c for c in fused[: start + window] if c.entry is not None], group_by)
            if len(chosen) >= k:
                break
            start += window
        return chosen[:k]


_EXPLAIN_TOP = 20


def _hits(selected: list[Candidate]) -> list[Hit]:
    return [Hit(id=c.entry.id or "", text=c.entry.text, score=c.score, entry=c.entry, channels=c.channels)
            for c in selected if c.entry is not None]


def _merge_max(a: list[tuple[int, float]], b: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """Two result lists of one channel as one: each row's best score, best first, top k."""
    best: dict[int, float] = dict(a)
    for rowid, score in b:
        if score > best.get(rowid, float("-inf")):
            best[rowid] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


def _merge_candidates(old: list[Candidate], new: list[Candidate]) -> list[Candidate]:
    """Reflection's extra recall joins the first: a row keeps its best fused score."""
    merged = {c.rowid: c for c in old}
    for c in new:
        if c.rowid not in merged or c.score > merged[c.rowid].score:
            merged[c.rowid] = c
    return sorted(merged.values(), key=lambda c: (-c.score, c.rowid))


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


def _timed(job: Callable[[], list[tuple[int, float]]]) -> tuple[list[tuple[int, float]], float]:
    start = time.perf_counter()
    rows = job()
    return rows, round((time.perf_counter() - start) * 1000, 3)


def _filters_dict(filters: Filters) -> dict[str, object]:
    from dataclasses import asdict

    return {k: v for k, v in asdict(filters).items() if v not in (None, [], {})}
