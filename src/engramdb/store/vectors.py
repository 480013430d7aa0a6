"""In-memory vector search over the vectors kept in the SQLite file.

The `vectors` table is the source of truth. This index mirrors it in RAM:

* a float32 matrix for exact cosine search — used for small stores and for every filtered
  search over a candidate set that fits (exact prefiltering: nothing is lost to truncation);
* above `ANN_MIN` vectors, a usearch HNSW graph with int8 vectors (~0.2 ms per query at
  100k) whose top candidates are re-scored exactly. Its serialised form is saved in the
  same SQLite file, so a large store opens without rebuilding it.

Why not sqlite-vec: it is brute force (~29 ms for k=10 over 20k x 384 here), far over our
10 ms p50 target at 100k entries; numbers in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import threading
from typing import Callable, Iterable

import numpy as np

ANN_MIN = 20_000  # below this, exact search is faster than the graph (~1.5 ms at 20k)
EXACT_SUBSET_MAX = 40_000  # filtered searches over at most this many rows are exact
RESCORE_FACTOR = 4  # HNSW candidates re-scored exactly per requested result


def _usearch_index():  # type: ignore[no-untyped-def]
    """Import usearch's Index class safely.

    Importing onnxruntime *after* usearch segfaults the process (a clash between their
    bundled native libraries); the other order is fine, so onnxruntime always goes first.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:  # pragma: no cover - only the ONNX embedder needs it
        pass
    from usearch.index import Index

    return Index


class VectorIndex:
    """Exact + HNSW search over (rowid, vector) pairs, refreshed incrementally from the store."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._rowids = np.zeros(0, dtype=np.int64)
        self._size = 0
        self._pos: dict[int, int] = {}
        self._ann = None  # usearch.index.Index | None
        self._ann_count = 0  # vectors of _matrix[:_ann_count] that are in the graph
        self.max_rowid = 0
        self.seq = -1
        self.del_seq = -1
        self.lock = threading.RLock()

    # -- loading -------------------------------------------------------------------------
    def reset(self) -> None:
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)
        self._rowids = np.zeros(0, dtype=np.int64)
        self._size = 0
        self._pos = {}
        self._ann = None
        self._ann_count = 0
        self.max_rowid = 0

    def append(self, rows: Iterable[tuple[int, bytes]]) -> int:
        """Add rows (rowid, float32 blob) with rowids above `max_rowid`. Returns how many."""
        rowids: list[int] = []
        blobs: list[bytes] = []
        for rowid, blob in rows:
            if rowid in self._pos:
                continue
            rowids.append(rowid)
            blobs.append(blob)
        if not rowids:
            return 0
        vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rowids), self.dim)
        needed = self._size + len(rowids)
        if needed > len(self._matrix):
            capacity = max(needed, int(len(self._matrix) * 1.5) + 1024)
            grown = np.zeros((capacity, self.dim), dtype=np.float32)
            grown[: self._size] = self._matrix[: self._size]
            ids = np.zeros(capacity, dtype=np.int64)
            ids[: self._size] = self._rowids[: self._size]
            self._matrix, self._rowids = grown, ids
        start = self._size
        self._matrix[start:needed] = vectors
        self._rowids[start:needed] = rowids
        for offset, rowid in enumerate(rowids):
            self._pos[rowid] = start + offset
        self._size = needed
        self.max_rowid = max(self.max_rowid, max(rowids))
        return len(rowids)

    def __len__(self) -> int:
        return self._size

    # -- HNSW ----------------------------------------------------------------------------
    def ensure_ann(self, threads: int = 2) -> bool:
        """Build or extend the HNSW graph when the index is large enough. True if it changed."""
        if self._size < ANN_MIN:
            return False
        Index = _usearch_index()
        changed = False
        if self._ann is None:
            self._ann = Index(ndim=self.dim, metric="cos", dtype="i8", connectivity=16,
                              expansion_add=128, expansion_search=96)
            self._ann_count = 0
        if self._ann_count < self._size:
            start, end = self._ann_count, self._size
            self._ann.add(self._rowids[start:end], self._matrix[start:end], threads=threads)
            self._ann_count = end
            changed = True
        return changed

    def ann_bytes(self) -> bytes | None:
        return None if self._ann is None else bytes(self._ann.save())

    def restore_ann(self, blob: bytes, count: int) -> None:
        self._ann = _usearch_index().restore(bytearray(blob))
        self._ann_count = count

    # -- search --------------------------------------------------------------------------
    def _exact(self, query: np.ndarray, positions: np.ndarray | None, k: int) -> list[tuple[int, float]]:
        if positions is None:
            scores = self._matrix[: self._size] @ query
            ids = self._rowids[: self._size]
        else:
            if len(positions) == 0:
                return []
            scores = self._matrix[positions] @ query
            ids = self._rowids[positions]
        k = min(k, len(scores))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def _rescore(self, query: np.ndarray, rowids: list[int], k: int) -> list[tuple[int, float]]:
        positions = np.array([self._pos[r] for r in rowids if r in self._pos], dtype=np.int64)
        return self._exact(query, positions, k)

    def search(
        self,
        query: np.ndarray,
        k: int,
        allowed: Callable[[], set[int] | None] | None = None,
    ) -> list[tuple[int, float]]:
        """Top-k (rowid, cosine). `allowed` lazily yields the rowids a filter admits (None: all)."""
        if self._size == 0 or k <= 0:
            return []
        allowed_set = allowed() if allowed is not None else None
        if allowed_set is not None:
            if not allowed_set:
                return []
            if self._ann is None or len(allowed_set) <= EXACT_SUBSET_MAX or self._ann_count < self._size:
                positions = np.fromiter((self._pos[r] for r in allowed_set if r in self._pos), dtype=np.int64)
                return self._exact(query, positions, k)
            # A large admitted set: oversample the graph until k admitted rows are found.
            fetch = k * RESCORE_FACTOR * max(1, self._size // len(allowed_set))
            while True:
                matches = self._ann.search(query, min(fetch, self._size))
                keep = [int(key) for key in matches.keys if int(key) in allowed_set]
                if len(keep) >= k * RESCORE_FACTOR or fetch >= self._size:
                    return self._rescore(query, keep, k)
                fetch *= 4
        if self._ann is None or self._ann_count < self._size:
            return self._exact(query, None, k)
        matches = self._ann.search(query, min(k * RESCORE_FACTOR, self._size))
        return self._rescore(query, [int(key) for key in matches.keys], k)

    def vectors_for(self, rowids: Iterable[int]) -> dict[int, np.ndarray]:
        return {r: self._matrix[self._pos[r]] for r in rowids if r in self._pos}
