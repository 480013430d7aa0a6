"""The vector index: exact and HNSW paths agree with brute force, including under filters."""

from __future__ import annotations

import numpy as np

from engramdb.store import vectors as V
from engramdb.store.vectors import VectorIndex


def _data(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(50, dim))
    x = centers[rng.integers(0, 50, n)] + 0.4 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _index(x: np.ndarray) -> VectorIndex:
    index = VectorIndex(x.shape[1])
    index.append((i + 1, "ns", "fact", x[i].tobytes()) for i in range(len(x)))
    index.ensure_ann()
    return index


def _brute(x: np.ndarray, q: np.ndarray, k: int, allowed: set[int] | None = None) -> list[int]:
    scores = x @ q
    order = [int(i) + 1 for i in np.argsort(-scores)]
    if allowed is not None:
        order = [r for r in order if r in allowed]
    return order[:k]


def test_exact_search_matches_brute_force():
    x = _data(500)
    index = _index(x)
    assert index._ann is None  # small: exact path
    for qi in range(5):
        q = x[qi * 7]
        assert [r for r, _ in index.search(q, 10)] == _brute(x, q, 10)


def test_hnsw_path_recall_and_prefilter(monkeypatch):
    monkeypatch.setattr(V, "ANN_MIN", 1000)
    monkeypatch.setattr(V, "EXACT_SUBSET_MAX", 300)
    x = _data(6000, seed=1)
    index = _index(x)
    assert index._ann is not None
    rng = np.random.default_rng(2)
    recalls = []
    for qi in rng.integers(0, 6000, 20):
        q = x[qi]
        got = [r for r, _ in index.search(q, 10)]
        recalls.append(len(set(got) & set(_brute(x, q, 10))) / 10)
    assert np.mean(recalls) >= 0.9
    # A large admitted set (over EXACT_SUBSET_MAX) goes through the graph with oversampling;
    # a small one is searched exactly. Either way only admitted rows come back, and a rare
    # filter still returns its k best rows.
    small = set(int(r) for r in rng.choice(np.arange(1, 6001), 50, replace=False))
    large = set(range(1, 6001, 3))
    q = x[10]
    got_small = [r for r, _ in index.search(q, 10, index.rows.mask(None, [], small))]
    assert got_small == _brute(x, q, 10, small)
    got_large = [r for r, _ in index.search(q, 10, index.rows.mask(None, [], large))]
    assert set(got_large) <= large and len(got_large) == 10
    assert len(set(got_large) & set(_brute(x, q, 10, large))) >= 8


def test_snapshot_round_trip():
    x = _data(1500, seed=3)
    index = VectorIndex(32)
    index.append((i + 1, "ns", "fact", x[i].tobytes()) for i in range(len(x)))
    V_min = V.ANN_MIN
    try:
        V.ANN_MIN = 1000
        index.ensure_ann()
        blob = index.ann_bytes()
        restored = VectorIndex(32)
        restored.append((i + 1, "ns", "fact", x[i].tobytes()) for i in range(len(x)))
        restored.restore_ann(blob, len(x))
        q = x[5]
        assert [r for r, _ in restored.search(q, 5)] == [r for r, _ in index.search(q, 5)]
    finally:
        V.ANN_MIN = V_min
