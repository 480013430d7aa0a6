"""Fusion: merge channel rankings into one, over the *union* of their candidates."""

from __future__ import annotations

from ..model import Candidate, ChannelScore


def rrf(
    channel_results: dict[str, list[tuple[int, float]]],
    weights: dict[str, float],
    k: int = 60,
) -> list[Candidate]:
    """Weighted reciprocal rank fusion: score = sum_c weight_c / (k + rank_c).

    A row found by one channel only still gets that channel's share, so keyword-only hits
    survive. Each candidate keeps every channel's 1-based rank and raw score. Ties break on
    the best single-channel rank, then rowid, so the order is deterministic.
    """
    fused: dict[int, Candidate] = {}
    for channel, results in channel_results.items():
        weight = weights.get(channel, 1.0)
        for rank, (rowid, raw) in enumerate(results, start=1):
            cand = fused.get(rowid)
            if cand is None:
                cand = fused[rowid] = Candidate(rowid=rowid)
            cand.channels[channel] = ChannelScore(rank=rank, score=raw)
            cand.score += weight / (k + rank)
    return sorted(
        fused.values(),
        key=lambda c: (-c.score, min(cs.rank for cs in c.channels.values()), c.rowid),
    )


NORMALIZATIONS = ("zscore", "minmax", "none")


def _normalize(scores: list[float], how: str) -> list[float]:
    if how == "none" or not scores:
        return list(scores)
    lo, hi = min(scores), max(scores)
    if how == "minmax":
        span = hi - lo
        return [(s - lo) / span if span else 1.0 for s in scores]
    mean = sum(scores) / len(scores)
    std = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
    return [(s - mean) / std if std else 0.0 for s in scores]


def weighted(
    channel_results: dict[str, list[tuple[int, float]]],
    weights: dict[str, float],
    normalization: str = "zscore",
) -> list[Candidate]:
    """Weighted sum of per-channel normalised scores over the union of candidates.

    Each channel's raw scores (cosine, BM25, name matches) are normalised within that
    channel's own candidate list (z-score by default, as in distribution-based score
    fusion), so scales become comparable; a candidate a channel did not return counts as
    that channel's lowest normalised score. The list, not the requested k, defines the
    normalisation, so scores do not change with k or page size.
    """
    normalized: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    fused: dict[int, Candidate] = {}
    for channel, results in channel_results.items():
        raw_scores = [raw for _, raw in results]
        if normalization != "none" and raw_scores and min(raw_scores) == max(raw_scores):
            # A channel whose candidates all score the same (every entry in the time window,
            # every entry naming the person) still separates them from everything it did not
            # return: members count 1, the rest 0, instead of all collapsing to the mean.
            values, floor = [1.0] * len(raw_scores), 0.0
        else:
            values = _normalize(raw_scores, normalization)
            floor = min(values) if values else 0.0
        normalized[channel] = {rowid: v for (rowid, _), v in zip(results, values)}
        floors[channel] = floor
        for rank, (rowid, raw) in enumerate(results, start=1):
            cand = fused.get(rowid)
            if cand is None:
                cand = fused[rowid] = Candidate(rowid=rowid)
            cand.channels[channel] = ChannelScore(rank=rank, score=raw)
    for rowid, cand in fused.items():
        cand.score = sum(
            weights.get(channel, 1.0) * normalized[channel].get(rowid, floors[channel])
            for channel in channel_results
            if channel_results[channel]
        )
    return sorted(
        fused.values(),
        key=lambda c: (-c.score, min(cs.rank for cs in c.channels.values()), c.rowid),
    )
