"""Vector search options for the embedded store, measured side by side.

    python benchmarks/bench_vector_index.py --n 20000 100000

For each size: sqlite-vec (vec0 brute force, loaded into apsw's SQLite), exact NumPy
search over an in-RAM float32 matrix, and a usearch HNSW graph with int8 vectors whose top
candidates are re-scored exactly (what Engram does above 20k vectors). Vectors are
clustered random unit vectors of 384 dimensions; recall@10 is measured against exact search.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(max(n // 200, 10), dim))
    x = centers[rng.integers(0, len(centers), n)] + 0.5 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(x: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    scores = x @ q
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 3), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}


def bench(n: int, dim: int, queries: int, k: int) -> dict[str, object]:
    x = clustered(n, dim, seed=n)
    qs = x[np.random.default_rng(1).integers(0, n, queries)] + 0.05
    qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
    truth = [set(exact_top(x, q, k).tolist()) for q in qs]
    out: dict[str, object] = {"n": n, "dim": dim}

    samples = []
    for q in qs:
        t0 = time.perf_counter()
        exact_top(x, q, k)
        samples.append((time.perf_counter() - t0) * 1000)
    out["numpy_exact_ms"] = ms(samples)

    import onnxruntime  # noqa: F401  - must precede usearch (see engramdb.store.vectors)
    from usearch.index import Index

    index = Index(ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=128, expansion_search=96)
    t0 = time.perf_counter()
    index.add(np.arange(n), x, threads=2)
    out["hnsw_build_s"] = round(time.perf_counter() - t0, 2)
    blob = index.save()
    out["hnsw_snapshot_mb"] = round(len(blob) / 1e6, 1)
    t0 = time.perf_counter()
    Index.restore(blob)
    out["hnsw_restore_s"] = round(time.perf_counter() - t0, 3)
    samples, recall = [], []
    for q, want in zip(qs, truth):
        t0 = time.perf_counter()
        keys = index.search(q, k * 4).keys.astype(np.int64)
        cand = keys[np.argsort(-(x[keys] @ q))[:k]]
        samples.append((time.perf_counter() - t0) * 1000)
        recall.append(len(want & set(cand.tolist())) / k)
    out["hnsw_i8_rescored_ms"] = ms(samples)
    out["hnsw_recall@10"] = round(float(np.mean(recall)), 4)

    try:
        import apsw
        import sqlite_vec

        conn = apsw.Connection(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{dim}] distance_metric=cosine)")
        with conn:
            conn.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                             ((i, x[i].tobytes()) for i in range(n)))
        samples = []
        for q in qs[: max(20, queries // 5)]:
            t0 = time.perf_counter()
            conn.execute("SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ?", (q.tobytes(), k)).fetchall()
            samples.append((time.perf_counter() - t0) * 1000)
        out["sqlite_vec_ms"] = ms(samples)
    except ImportError:
        out["sqlite_vec_ms"] = "sqlite-vec not installed (pip install sqlite-vec)"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("-k", type=int, default=10)
    args = parser.parse_args()
    for n in args.n:
        print(json.dumps(bench(n, args.dim, args.queries, args.k)))


if __name__ == "__main__":
    main()
