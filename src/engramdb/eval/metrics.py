"""Ranking metrics as pure functions: nDCG@k, Recall@k, MRR@k, Hit@k, percentiles.

A *ranking* is a sequence of positions, best first. Each position is either one id
(``"doc7"``) or a collection of ids that the position covers (a derived memory entry that
stands for several conversation turns). The general definitions, which reduce to the usual
ones when every position holds a single id:

* a position *covers* its ids; an id counts only the first time it is covered;
* Recall@k = |relevant ids covered by positions 1..k| / |relevant ids|;
* Hit@k = 1 if any relevant id is covered by positions 1..k, else 0;
* MRR@k = 1 / (first position <= k that covers a relevant id), else 0;
* nDCG@k = DCG@k / IDCG@k with DCG@k = sum_i gain_i / log2(i + 1), where gain_i is the largest
  grade among the relevant ids *newly* covered at position i (0 if none), and IDCG@k is the
  DCG of the ideal ranking: the grades of all relevant ids sorted descending, one per position.
  Gains are linear in the grade (binary qrels give gains of 1), as in BEIR/trec_eval.

Relevance is a mapping id -> grade; only grades > 0 are relevant. A set of ids means grade 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

__all__ = [
    "Ranking",
    "Relevance",
    "ndcg_at_k",
    "recall_at_k",
    "mrr_at_k",
    "hit_at_k",
    "percentile",
    "mean",
]

Ranking = Sequence[str | Collection[str]]
#: id -> grade (grades <= 0 are not relevant), or a collection of relevant ids (grade 1)
Relevance = Mapping[str, float] | Collection[str]


def _grades(relevant: Relevance) -> dict[str, float]:
    """Positive grades only; a plain collection of ids means grade 1 each."""
    if isinstance(relevant, Mapping):
        return {str(k): float(v) for k, v in relevant.items() if v > 0}
    if isinstance(relevant, str):
        return {relevant: 1.0}
    return {str(k): 1.0 for k in relevant}


def _positions(ranking: Ranking, k: int) -> list[tuple[str, ...]]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    out: list[tuple[str, ...]] = []
    for pos in list(ranking)[:k]:
        out.append((pos,) if isinstance(pos, str) else tuple(pos))
    return out


def _new_relevant(ranking: Ranking, grades: Mapping[str, float], k: int) -> list[list[str]]:
    """For each of the first k positions, the relevant ids it covers for the first time."""
    seen: set[str] = set()
    out: list[list[str]] = []
    for ids in _positions(ranking, k):
        fresh = [i for i in ids if i in grades and i not in seen]
        seen.update(ids)
        out.append(fresh)
    return out


def ndcg_at_k(ranking: Ranking, relevant: Relevance, k: int = 10) -> float:
    """Normalised discounted cumulative gain at cutoff k (0.0 when nothing is relevant)."""
    grades = _grades(relevant)
    if not grades:
        return 0.0
    dcg = 0.0
    for i, fresh in enumerate(_new_relevant(ranking, grades, k), start=1):
        if fresh:
            dcg += max(grades[f] for f in fresh) / math.log2(i + 1)
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Ranking, relevant: Relevance, k: int = 10) -> float:
    """Share of the relevant ids covered in the top k (0.0 when nothing is relevant)."""
    grades = _grades(relevant)
    if not grades:
        return 0.0
    found = sum(len(fresh) for fresh in _new_relevant(ranking, grades, k))
    return found / len(grades)


def mrr_at_k(ranking: Ranking, relevant: Relevance, k: int = 10) -> float:
    """Reciprocal rank of the first position covering a relevant id, 0.0 if none in the top k."""
    grades = _grades(relevant)
    for i, fresh in enumerate(_new_relevant(ranking, grades, k), start=1):
        if fresh:
            return 1.0 / i
    return 0.0


def hit_at_k(ranking: Ranking, relevant: Relevance, k: int = 10) -> float:
    """1.0 if any relevant id is covered in the top k, else 0.0."""
    return 1.0 if mrr_at_k(ranking, relevant, k) > 0 else 0.0


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks.

    Same rule as ``numpy.percentile(..., method="linear")``: position ``(n - 1) * q / 100``
    in the sorted values. Raises ValueError for an empty input or q outside 0..100.
    """
    data = sorted(float(v) for v in values)
    if not data:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    frac = pos - lo
    return data[lo] + (data[hi] - data[lo]) * frac


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; raises ValueError for an empty input."""
    data = [float(v) for v in values]
    if not data:
        raise ValueError("mean of an empty sequence")
    return sum(data) / len(data)
