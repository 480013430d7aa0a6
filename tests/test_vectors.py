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


def test_deletes_keep_the_graph_and_never_return_deleted_rows(monkeypatch):
    monkeypatch.setattr(V, "ANN_MIN", 1000)
    x = _data(4000, seed=4)
    index = _index(x)
    graph = index._ann
    rng = np.random.default_rng(5)
    deleted = set(int(r) for r in rng.choice(np.arange(1, 4001), 600, replace=False))
    # What a store does after another process deleted rows: reload the rows, keep the graph.
    index.reload()
    index.append((i + 1, "ns", "fact", x[i].tobytes()) for i in range(len(x)) if i + 1 not in deleted)
    assert index.ensure_ann() is False and index._ann is graph  # nothing rebuilt
    live = set(range(1, 4001)) - deleted
    recalls = []
    for qi in rng.integers(0, 4000, 20):
        got = [r for r, _ in index.search(x[qi], 10)]
        assert not set(got) & deleted and len(got) == 10
        recalls.append(len(set(got) & set(_brute(x, x[qi], 10, live))) / 10)
    assert np.mean(recalls) >= 0.9
    # Once deleted rows pass DEAD_REBUILD_SHARE of the graph, it is rebuilt over the live rows.
    more = deleted | set(range(1, 1001))
    index.reload()
    index.append((i + 1, "ns", "fact", x[i].tobytes()) for i in range(len(x)) if i + 1 not in more)
    assert index.ensure_ann() is True and index._ann is not graph
    assert index.graph_size == len(index) == 4000 - len(more)


def test_a_store_keeps_and_restores_its_graph_across_deletes(tmp_path, monkeypatch):
    from engramdb import Memory

    monkeypatch.setattr(V, "ANN_MIN", 200)
    path = tmp_path / "g.db"
    with Memory(path, embedder="minilm") as mem:
        ids = mem.add([f"note {i} about {['tea', 'rivers', 'bikes', 'maps'][i % 4]} and more" for i in range(400)])
        mem.search("tea", k=5, preset="semantic")
        graph = mem.store._vectors._ann
        assert graph is not None and mem.store._vectors.graph_size == 400
        with Memory(path) as other:  # another writer deletes a tenth of the rows
            assert other.delete(ids[:40]) == 40
        hits = mem.search("note about tea", k=50, preset="semantic")
        assert mem.store._vectors._ann is graph  # kept, not rebuilt
        assert not {h.id for h in hits} & set(ids[:40]) and len(hits) == 50
    # Closing saved the graph; a new process restores it despite the deletes (a rebuild
    # would hold 360 keys, the restored graph still holds the 40 deleted rows' keys).
    with Memory(path) as fresh:
        hits = fresh.search("note about tea", k=50, preset="semantic")
        assert fresh.store._vectors.graph_size == 400 and len(fresh.store._vectors) == 360
        assert not {h.id for h in hits} & set(ids[:40]) and len(hits) == 50
