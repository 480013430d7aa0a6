"""The recall and fuse stages: channels run in parallel, then one ranking over their union."""

from __future__ import annotations

import time
from typing import Any, Callable

from ..model import Candidate
from ..plan.model import QueryPlan
from ..text.patterns import exact_patterns
from ..text.tokenize import query_terms
from .adapt import adapted_weights, query_length
from .context import SearchContext
from .fuse import candidates_from, max_score, route, route_slots, rrf, union, weighted
from .translated import translated_search

Rows = list[tuple[int, float]]


def channel_jobs(ctx: SearchContext, plan: QueryPlan) -> dict[str, Callable[[], Rows]]:
    """One job per channel the plan gives work to, and one semantic job per sub-query."""
    store, embedder = ctx.engine.store, ctx.engine.embedder
    namespace, filters = ctx.namespace, ctx.filters
    text = " ".join([plan.query, *plan.keywords])
    terms = query_terms(text)
    names = plan.names()
    jobs: dict[str, Callable[[], Rows]] = {}
    for name in ctx.preset.channels:
        depth = channel_depth(ctx, name)
        if name == "semantic" and embedder is not None:
            for i, text in enumerate(plan.sub_queries):
                jobs[f"semantic#{i}"] = (lambda k=depth, text=text:
                                         store.semantic(embedder.embed_query(text), k, namespace, filters))
        elif name == "lexical":
            jobs[name] = lambda k=depth: store.lexical(terms, k, namespace, filters)
        elif name == "symbolic" and names:
            jobs[name] = lambda k=depth: store.symbolic(plan.query, terms, k, namespace, filters, names=names)
        elif name == "temporal" and plan.has_window:
            span = (plan.time_start.timestamp(), plan.time_end.timestamp())  # type: ignore[union-attr]
            jobs[name] = lambda k=depth, span=span: store.temporal(span[0], span[1], terms, k, namespace, filters)
        elif name == "substring" and (patterns := exact_patterns(plan.query)):
            jobs[name] = lambda k=depth, patterns=patterns: store.substring(patterns, k, namespace, filters)
        elif name == "dated" and plan.intent == "temporal" and not plan.has_window:
            # "When did ...?" names no time but asks for one: entries that state their
            # event's time are the ones that can answer it.
            jobs[name] = lambda k=depth: store.dated(terms, k, namespace, filters)
        elif name == "translated" and terms and "lexical" in ctx.preset.channels:
            # The query's terms through a Chinese-English dictionary, BM25 on the lexical
            # channel's scale, merged into its list (pipeline/translated.py).
            scale = ctx.preset.channels[name].weight
            jobs["lexical#translated"] = (lambda k=depth, scale=scale:
                                          translated_search(store, text, k, namespace, filters, scale))
    return jobs


def channel_depth(ctx: SearchContext, channel: str) -> int:
    """How many candidates a channel returns: its preset ``k``, or the search's ``k`` when
    more results are asked for than that (so ``k=250`` can return 250 hits)."""
    return max(ctx.preset.channels[channel].k, ctx.k)


class RecallStage:
    """Every channel of the preset, in parallel, each with its own top-k.

    Returns the union of what they found, unscored: each candidate carries every channel's
    1-based rank and raw score, which is all fusion needs.
    """

    name = "recall"

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        executor = ctx.engine.executor
        futures = {name: executor.submit(_timed, job) for name, job in channel_jobs(ctx, ctx.plan).items()}
        results: dict[str, Rows] = {}
        rec["channels"] = {}
        for name, future in futures.items():
            rows, ms = future.result()
            channel = name.split("#")[0]
            k = channel_depth(ctx, channel)
            if channel in results:  # semantic sub-queries, lexical translations: one list each
                rows = _merge_max(results[channel], rows, k)
                ms = max(ms, rec["channels"][channel]["ms"])
            results[channel] = rows
            rec["channels"][channel] = {"k": k, "n": len(rows), "ms": ms,
                                        "top_score": round(rows[0][1], 6) if rows else None}
        if "semantic" in rec["channels"]:
            rec["channels"]["semantic"]["queries"] = len(ctx.plan.sub_queries)
        found = candidates_from(results)
        rec["n"] = len(found)
        return list(found.values())


def channel_lists(candidates: list[Candidate]) -> dict[str, Rows]:
    """Each channel's result list (best first) rebuilt from the candidates' evidence."""
    lists: dict[str, list[tuple[int, int, float]]] = {}
    for c in candidates:
        for channel, cs in c.channels.items():
            lists.setdefault(channel, []).append((cs.rank, c.rowid, cs.score))
    return {channel: [(rowid, score) for _, rowid, score in sorted(rows)] for channel, rows in lists.items()}


class FuseStage:
    """One ranking over the union of the channels' candidates, by the preset's method.

    Every method scores a candidate from its channels' ranks and scores alone, so a score does
    not change with k or page size; route slots alone depend on k (they reserve places in it).
    """

    name = "fuse"

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        preset = ctx.preset
        lists = channel_lists(candidates)
        results = {name: lists[name] for name in preset.channels if name in lists}  # preset order
        weights = {name: conf.weight for name, conf in preset.channels.items()}
        if preset.adapt.enabled:
            terms = query_length(ctx.plan.query or ctx.query)
            weights, share = adapted_weights(weights, preset.adapt, terms)
            rec["adapt"] = {"query_terms": terms, "share": share}
        rec["method"] = preset.fusion
        if preset.fusion == "weighted":
            fused = weighted(results, weights, preset.normalization, preset.calibration)
            rec["normalization"] = preset.normalization
            if preset.calibration is not None:
                rec["calibration"] = list(preset.calibration)
        elif preset.fusion == "union":
            fused = union(results, list(preset.channels))
        elif preset.fusion == "max":
            fused = max_score(results)
        elif preset.fusion == "route":
            fused = route(results, k=preset.rrf_k)
            if preset.route_slots:
                fused, promoted = route_slots(fused, ctx.k)
                rec["route_slots"] = promoted
        else:
            fused = rrf(results, weights, preset.rrf_k)
            rec["k"] = preset.rrf_k
        if preset.fusion in ("weighted", "rrf"):
            rec["weights"] = weights
        rec["n"] = len(fused)
        for c in fused:
            if c.score > ctx.fused_scores.get(c.rowid, float("-inf")):
                ctx.fused_scores[c.rowid] = c.score
        return fused


def _merge_max(a: Rows, b: Rows, k: int) -> Rows:
    """Two result lists of one channel as one: each row's best score, best first, top k."""
    best: dict[int, float] = dict(a)
    for rowid, score in b:
        if score > best.get(rowid, float("-inf")):
            best[rowid] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


def _timed(job: Callable[[], Rows]) -> tuple[Rows, float]:
    start = time.perf_counter()
    rows = job()
    return rows, round((time.perf_counter() - start) * 1000, 3)
