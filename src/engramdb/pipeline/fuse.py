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
