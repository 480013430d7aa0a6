"""One question through one pipeline: analyse -> recall channels (parallel) -> fuse -> group -> top k."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from datetime import datetime
from typing import Callable

from ..embed.base import Embedder
from ..model import Candidate, Hit, SearchResult
from ..store.base import Filters, Store
from ..text.timeparse import TimeWindow, parse_time_window
from ..text.tokenize import query_terms
from .fuse import rrf, weighted
from .group import collapse
from .presets import Preset
from .trace import Trace


class SearchPipeline:
    """Runs a preset against a store. Stateless apart from its collaborators, so thread-safe."""

    def __init__(self, store: Store, embedder: Embedder | None, executor: Executor) -> None:
        self.store = store
        self.embedder = embedder
        self.executor = executor

    def _channel_jobs(
        self, query: str, terms: list[str], preset: Preset, namespace: str | None, filters: Filters,
        window: TimeWindow | None = None,
    ) -> dict[str, Callable[[], list[tuple[int, float]]]]:
        jobs: dict[str, Callable[[], list[tuple[int, float]]]] = {}
        for name, conf in preset.channels.items():
            if name == "semantic":
                if self.embedder is None:
                    continue

                def semantic(k: int = conf.k, embedder: Embedder = self.embedder) -> list[tuple[int, float]]:
                    return self.store.semantic(embedder.embed_query(query), k, namespace, filters)

                jobs[name] = semantic
            elif name == "lexical":
                jobs[name] = lambda k=conf.k: self.store.lexical(terms, k, namespace, filters)
            elif name == "symbolic":
                jobs[name] = lambda k=conf.k: self.store.symbolic(query, terms, k, namespace, filters)
            elif name == "temporal" and window is not None:
                span = (window.start.timestamp(), window.end.timestamp())
                jobs[name] = lambda k=conf.k, span=span: self.store.temporal(span[0], span[1], terms, k, namespace,
                                                                            filters)
        return jobs

    def run(
        self,
        query: str,
        k: int,
        preset: Preset,
        namespace: str | None,
        filters: Filters,
        group_by: str | None = None,
        now: datetime | None = None,
    ) -> SearchResult:
        """Search with `preset`; `now` is the reference time that relative expressions
        ("last week", "上周") in the query are resolved against."""
        started = time.perf_counter()
        trace = Trace()
        with trace.stage("plan", query=query) as rec:
            terms = query_terms(query)
            window = parse_time_window(query, now) if now is not None else None
            rec["terms"] = terms
            rec["time_window"] = (
                {"start": window.start.isoformat(), "end": window.end.isoformat(), "expression": window.expression}
                if window else None
            )
            rec["preset"] = preset.name
            rec["namespace"] = namespace
            rec["filters"] = {k_: v for k_, v in _filters_dict(filters).items()}

        results: dict[str, list[tuple[int, float]]] = {}
        with trace.stage("recall") as rec:
            jobs = self._channel_jobs(query, terms, preset, namespace, filters, window)
            timed = {name: self.executor.submit(_timed, job) for name, job in jobs.items()}
            rec["channels"] = {}
            for name, future in timed.items():
                rows, ms = future.result()
                results[name] = rows
                rec["channels"][name] = {
                    "k": preset.channels[name].k,
                    "n": len(rows),
                    "ms": ms,
                    "top_score": round(rows[0][1], 6) if rows else None,
                }

        with trace.stage("fuse", method=preset.fusion) as rec:
            weights = {name: conf.weight for name, conf in preset.channels.items()}
            if preset.fusion == "weighted":
                fused = weighted(results, weights, preset.normalization)
                rec["normalization"] = preset.normalization
            else:
                fused = rrf(results, weights, preset.rrf_k)
                rec["k"] = preset.rrf_k
            rec["weights"] = weights
            rec["n"] = len(fused)

        with trace.stage("select", k=k, group_by=group_by) as rec:
            selected = self._select(fused, k, group_by)
            rec["n"] = len(selected)

        hits = [
            Hit(id=c.entry.id or "", text=c.entry.text, score=c.score, entry=c.entry, channels=c.channels)
            for c in selected
            if c.entry is not None
        ]
        out = trace.to_dict()
        out["total_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return SearchResult(query=query, hits=hits, trace=out)

    def _select(self, fused: list[Candidate], k: int, group_by: str | None) -> list[Candidate]:
        """Attach entries to the best candidates; with grouping, fetch more until k groups fill."""
        if group_by is None:
            top = fused[:k]
            entries = self.store.fetch([c.rowid for c in top])
            for c in top:
                c.entry = entries.get(c.rowid)
            return [c for c in top if c.entry is not None]
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


def _timed(job: Callable[[], list[tuple[int, float]]]) -> tuple[list[tuple[int, float]], float]:
    start = time.perf_counter()
    rows = job()
    return rows, round((time.perf_counter() - start) * 1000, 3)


def _filters_dict(filters: Filters) -> dict[str, object]:
    from dataclasses import asdict

    return {k: v for k, v in asdict(filters).items() if v not in (None, [], {})}
