"""Fusion: merge channel rankings into one, over the *union* of their candidates."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model import Candidate, ChannelScore


def candidates_from(channel_results: dict[str, list[tuple[int, float]]]) -> dict[int, Candidate]:
    """Every row any channel found, each with every channel's 1-based rank and raw score."""
    fused: dict[int, Candidate] = {}
    for channel, results in channel_results.items():
        for rank, (rowid, raw) in enumerate(results, start=1):
            fused.setdefault(rowid, Candidate(rowid=rowid)).channels[channel] = ChannelScore(rank=rank, score=raw)
    return fused


def ordered(fused: dict[int, Candidate]) -> list[Candidate]:
    """Best score first; ties on the best single-channel rank, then rowid (deterministic)."""
    return sorted(fused.values(), key=lambda c: (-c.score, min(cs.rank for cs in c.channels.values()), c.rowid))


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
    fused = candidates_from(channel_results)
    for cand in fused.values():
        cand.score = sum(weights.get(channel, 1.0) / (k + cs.rank) for channel, cs in cand.channels.items())
    return ordered(fused)


NORMALIZATIONS = ("zscore", "dbsf", "minmax", "none")


def _normalize(scores: list[float], how: str) -> list[float]:
    """Per-channel normalisation: ``zscore`` (mean 0, sd 1), ``dbsf`` (distribution-based score
    fusion: [mean − 3 sd, mean + 3 sd] mapped to [0, 1], clipped), ``minmax`` or ``none``."""
    if how == "none" or not scores:
        return list(scores)
    lo, hi = min(scores), max(scores)
    if how == "minmax":
        span = hi - lo
        return [(s - lo) / span if span else 1.0 for s in scores]
    mean = sum(scores) / len(scores)
    std = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
    if how == "dbsf":
        return [min(1.0, max(0.0, (s - mean + 3 * std) / (6 * std))) if std else 0.5 for s in scores]
    return [(s - mean) / std if std else 0.0 for s in scores]


def channel_values(raw_scores: list[float], normalization: str = "zscore") -> tuple[list[float], float]:
    """One channel's normalised scores (list order) and the value a row it did not return gets.

    A channel whose candidates all score the same (every entry in the time window, every entry
    naming the person) still separates them from everything it did not return: members count
    1, the rest 0, instead of all collapsing to the mean."""
    if normalization != "none" and raw_scores and min(raw_scores) == max(raw_scores):
        return [1.0] * len(raw_scores), 0.0
    values = _normalize(raw_scores, normalization)
    return values, (min(values) if values else 0.0)


def size_scale(n: int, full_depth: int) -> float:
    """How much smaller z-scores over n scores are than over `full_depth` at most (>= 1)."""
    if n < 2 or n >= full_depth:
        return 1.0
    return math.sqrt((full_depth - 1) / (n - 1))


BASE_CHANNELS = ("semantic", "lexical")
BONUS_CHANNELS = ("names",)  # added to a candidate's sum, not counted in the divisor


def weighted(
    channel_results: dict[str, list[tuple[int, float]]],
    weights: dict[str, float],
    normalization: str = "zscore",
    calibration: tuple[float, float] | None = None,
    full_depth: int | None = None,
    explain: WeightedExplanation | None = None,
    scales: Mapping[str, Mapping[int, float]] | None = None,
) -> list[Candidate]:
    """Weighted sum of per-channel normalised scores over the union of candidates.

    Each channel's raw scores (cosine, BM25, name matches) are normalised within that
    channel's own candidate list (z-score by default, as in distribution-based score
    fusion), so scales become comparable; a candidate a channel did not return counts as
    that channel's lowest normalised score. The list, not the requested k, defines the
    normalisation, so scores do not change with k or page size.

    With ``calibration = (a, b)`` the sum is divided by the total weight of the channels that
    returned something, and of the semantic and lexical channels if they ran and found nothing
    — a weighted mean of per-channel z-scores, whatever number of cue channels ran — and
    mapped to ``1 / (1 + exp(-(a · mean + b)))``: a fitted probability that the entry is
    relevant (docs/PRESETS.md, "Calibrated score"). The map is monotone and the divisor is the
    same for every candidate of a query, so the order does not change.

    ``full_depth`` is the list length the calibration was fitted on (the channels' preset
    depth). A z-score over n scores cannot exceed sqrt(n - 1), so in a store (or a filtered
    scope) of a few dozen entries even the one right answer has a small mean, and its p would
    read far too low; the mean is scaled by sqrt((full_depth - 1) / (n - 1)), n the longest
    list, before the map (`size_scale`). The same factor for every candidate: order unchanged.
    A lone candidate (every list one row long) reads p = 0.5: there is nothing to compare it with.

    ``scales`` (channel -> rowid -> factor) scales a row's term in a channel (the time window's
    weight for an entry that shows nothing of the question's topic: `window_topic`).

    With `explain`, it is filled with what each candidate's score is made of: every fused
    channel's term (weight x normalised score, a channel that did not return the row at its
    floor), the divisor (the counted weights over the size scale) and the calibration, so
    ``score = 1 / (1 + exp(-(a * sum(terms) / divisor + b)))`` can be checked by hand.
    """
    normalized: dict[str, dict[int, float]] = {}
    floors: dict[str, float] = {}
    fused = candidates_from(channel_results)
    for channel, results in channel_results.items():
        values, floor = channel_values([raw for _, raw in results], normalization)
        normalized[channel] = {rowid: v for (rowid, _), v in zip(results, values)}
        floors[channel] = floor
    active = [channel for channel in channel_results if channel_results[channel]]
    # The channels every query runs count in the mean even when they found nothing: no stored
    # entry shares a word with "quantum chromodynamics", and that is evidence against every
    # candidate the embedding brought, not a reason to read the best of them as certain.
    # Channels that run only on a cue (a name, a time) count only when they found something.
    # A name the question gives (the names channel) is a bonus for the entries naming that
    # person, not one more view to average over: its weight in the divisor would pull every
    # candidate's mean down alike, and the calibrated p of the right note with it (names sets:
    # the top hit read p 0.10 where 0.66-0.90 were relevant; docs/BENCHMARKS.md).
    counted = [c for c in active if c not in BONUS_CHANNELS]
    counted += [c for c in BASE_CHANNELS if c in channel_results and not channel_results[c]]
    total = sum(weights.get(channel, 1.0) for channel in counted) or 1.0
    if calibration is not None and full_depth:
        total /= size_scale(max((len(channel_results[c]) for c in active), default=0), full_depth)
    # One candidate in every list (a scope of one entry): a z-score compares a row with the
    # others, and there are none, so its p is the even odds of knowing nothing either way
    # rather than what a list's mean row would read (p 0.04).
    lone = calibration is not None and len(fused) == 1
    for rowid, cand in fused.items():
        terms = {channel: weights.get(channel, 1.0) * normalized[channel].get(rowid, floors[channel])
                 for channel in active}
        for channel, factors in (scales or {}).items():
            if channel in terms and rowid in factors:
                terms[channel] *= factors[rowid]
        cand.score = sum(terms.values())
        if explain is not None:
            explain.terms[rowid] = terms
        if calibration is not None:
            a, b = calibration
            cand.score = 0.5 if lone else 1.0 / (1.0 + math.exp(-(a * cand.score / total + b)))
    if explain is not None:
        explain.counted = counted
        explain.divisor = total if calibration is not None else 1.0
        explain.lone = lone
    return ordered(fused)


@dataclass(slots=True)
class WeightedExplanation:
    """What `weighted` made each score of (filled when asked: the trace of an explained search)."""

    terms: dict[int, dict[str, float]] = field(default_factory=dict)  # rowid -> channel -> weight x normalised
    counted: list[str] = field(default_factory=list)  # the channels whose weights make the divisor
    divisor: float = 1.0
    lone: bool = False  # one candidate: its p is 0.5 whatever its terms

    def of(self, rowid: int) -> dict[str, float]:
        """One candidate's terms, rounded, and their sum over the divisor (the calibrated map's m)."""
        terms = self.terms.get(rowid, {})
        out = {channel: round(value, 4) for channel, value in terms.items()}
        out["m"] = round(sum(terms.values()) / self.divisor, 4)
        return out


def union(channel_results: dict[str, list[tuple[int, float]]], order: list[str]) -> list[Candidate]:
    """SimpleMem's merge: the channels' lists concatenated in `order`, first occurrence kept.

    No score is combined; a candidate's score is ``1 / position`` in that list, so the order
    is exactly SimpleMem's and does not depend on k.
    """
    fused = candidates_from(channel_results)
    position = 0
    seen: set[int] = set()
    for channel in [c for c in order if c in channel_results] + [c for c in channel_results if c not in order]:
        for rowid, _ in channel_results[channel]:
            if rowid not in seen:
                seen.add(rowid)
                position += 1
                fused[rowid].score = 1.0 / position
    return ordered(fused)


def max_score(channel_results: dict[str, list[tuple[int, float]]], fixed: tuple[str, ...] = ("lexical", "substring"),
              ) -> list[Candidate]:
    """PingHybridSearch: a keyword hit scores 1.0, a vector hit its cosine; each row keeps its best.

    Kept as the design had it, keyword-first: any keyword hit outranks every vector-only hit.
    """
    fused = candidates_from(channel_results)
    for cand in fused.values():
        cand.score = max(1.0 if name in fixed else cs.score for name, cs in cand.channels.items())
    return ordered(fused)


def route(channel_results: dict[str, list[tuple[int, float]]], best_weight: float = 0.82, k: int = 60,
          ) -> list[Candidate]:
    """LycheeMem's route fusion: ``0.82 · best + 0.18 · RRF / max RRF``.

    ``best`` is the row's best min-max-normalised score over the routes (channels) that found
    it; the RRF part is ``Σ 1 / (k + rank)`` divided by the largest such sum, so both parts lie
    in [0, 1].
    """
    fused = candidates_from(channel_results)
    normalized: dict[str, dict[int, float]] = {}
    for channel, results in channel_results.items():
        values = _normalize([raw for _, raw in results], "minmax")
        normalized[channel] = {rowid: v for (rowid, _), v in zip(results, values)}
    rrf_sums = {rowid: sum(1.0 / (k + cs.rank) for cs in c.channels.values()) for rowid, c in fused.items()}
    top = max(rrf_sums.values(), default=1.0) or 1.0
    for rowid, cand in fused.items():
        best = max(normalized[name][rowid] for name in cand.channels)
        cand.score = best_weight * best + (1 - best_weight) * rrf_sums[rowid] / top
    return ordered(fused)


def route_slots(fused: list[Candidate], k: int) -> tuple[list[Candidate], dict[str, int]]:
    """LycheeMem's per-route quota: each route (channel) places its best ``max(1, min(4,
    k // routes))`` candidates in the top k before the rest fill it by fused score.

    The top k are then ordered by score among themselves and everything else follows, so a
    route the others outscore still has its say. Returns the list and how many places each
    route's quota took that plain score order would not have given it.
    """
    routes = sorted({name for c in fused for name in c.channels})
    if not routes or not fused:
        return fused, {}
    quota = max(1, min(4, k // len(routes)))
    reserved: dict[int, str] = {}
    for name in routes:
        mine = sorted((c for c in fused if name in c.channels), key=lambda c: c.channels[name].rank)
        for c in mine[:quota]:
            reserved.setdefault(c.rowid, name)
    plain_top = {c.rowid for c in fused[:k]}
    chosen = [c for c in fused if c.rowid in reserved]
    for c in fused:
        if len(chosen) >= k:
            break
        if c.rowid not in reserved:
            chosen.append(c)
    chosen_ids = {c.rowid for c in chosen}
    top = sorted(chosen, key=lambda c: (-c.score, min(cs.rank for cs in c.channels.values()), c.rowid))
    promoted: dict[str, int] = {}
    for rowid, name in reserved.items():
        if rowid not in plain_top:
            promoted[name] = promoted.get(name, 0) + 1
    return top + [c for c in fused if c.rowid not in chosen_ids], promoted
