"""Maximal marginal relevance: the top k chosen for relevance *and* for saying different things.

Similarity between two candidates follows LycheeMem's idea of several signals: the cosine of
their stored vectors, whether they come from the same source (document or session), and the
people and entities they share. Relevance is the fused score, min-max normalised over the pool,
so λ means the same whatever the fusion method.
"""

from __future__ import annotations

import numpy as np

from ..model import Candidate

# Weights of the similarity signals; they sum to 1 so similarity stays in [0, 1].
COSINE, SAME_SOURCE, SHARED_NAMES = 0.6, 0.25, 0.15


def _source(c: Candidate) -> str | None:
    entry = c.entry
    if entry is None:
        return None
    return entry.source.doc_id or entry.source.path or entry.source.session_id


def _names(c: Candidate) -> set[str]:
    if c.entry is None:
        return set()
    return {n.lower() for n in [*c.entry.persons, *c.entry.entities]}


def similarity_matrix(pool: list[Candidate], vectors: np.ndarray) -> np.ndarray:
    """Pairwise similarity of the pool (vectors are the candidates' stored, normalised vectors)."""
    cosine = np.clip(vectors @ vectors.T, 0.0, 1.0) if vectors.size else np.zeros((len(pool), len(pool)))
    sources = [_source(c) for c in pool]
    names = [_names(c) for c in pool]
    n = len(pool)
    same = np.array([[1.0 if sources[i] and sources[i] == sources[j] else 0.0 for j in range(n)] for i in range(n)])
    shared = np.array([[len(names[i] & names[j]) / len(names[i] | names[j]) if names[i] | names[j] else 0.0
                        for j in range(n)] for i in range(n)])
    return COSINE * cosine + SAME_SOURCE * same + SHARED_NAMES * shared


def mmr(pool: list[Candidate], k: int, lam: float, vectors: np.ndarray) -> list[Candidate]:
    """Greedy MMR: each step takes the candidate maximising ``λ·relevance − (1−λ)·max similarity``
    to those already taken. ``lam=1`` keeps the fused order."""
    if not pool:
        return []
    scores = np.array([c.score for c in pool], dtype=np.float64)
    span = scores.max() - scores.min()
    relevance = (scores - scores.min()) / span if span else np.ones(len(pool))
    sim = similarity_matrix(pool, vectors)
    chosen: list[int] = []
    left = list(range(len(pool)))
    while left and len(chosen) < k:
        if chosen:
            penalty = sim[np.ix_(left, chosen)].max(axis=1)
        else:
            penalty = np.zeros(len(left))
        values = lam * relevance[left] - (1 - lam) * penalty
        best = left[int(np.argmax(values))]
        chosen.append(best)
        left.remove(best)
    return [pool[i] for i in chosen]
