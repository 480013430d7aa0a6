"""In-memory vector search over the vectors kept in the SQLite file.

The `vectors` table is the source of truth. This index mirrors it in RAM:

* a float32 matrix for exact cosine search — used for small stores and for every filtered
  search over a candidate set that fits (exact prefiltering: nothing is lost to truncation);
* above `ANN_MIN` vectors, a usearch HNSW graph with int8 vectors (~0.2 ms per query at
  100k) whose top candidates are re-scored exactly. Its serialised form is saved in the
  same SQLite file, so a large store opens without rebuilding it.

Deletes do not rebuild the graph. Rows are immutable (a changed entry is a new row) and
rowids are never reused, so a graph built over the rows up to rowid R stays right for every
row up to R that still exists: after a delete the matrix is reloaded (fast) and the graph's
keys of deleted rows are skipped at search time. The graph is rebuilt only when such dead
keys pass `DEAD_REBUILD_SHARE` of it (building one takes seconds at 50k vectors; before,
every delete in any process made every process rebuild it).

Why not sqlite-vec: it is brute force (~29 ms for k=10 over 20k x 384 here), far over our
10 ms p50 target at 100k entries; numbers in docs/BENCHMARKS.md.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .lexical import RowCodes
from .rwlock import ReadWriteLock

ANN_MIN = 20_000  # below this, exact search is faster than the graph (~1.5 ms at 20k)
EXACT_SUBSET_MAX = 40_000  # filtered searches over at most this many rows are exact
RESCORE_FACTOR = 4  # HNSW candidates re-scored exactly per requested result
DEAD_REBUILD_SHARE = 0.25  # rebuild the graph once this share of its keys are deleted rows


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
        self.lock = ReadWriteLock()
        self.reset()

    # -- loading -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything, the graph included."""
        self._ann: Any = None  # usearch.index.Index | None
        self._ann_max_rowid = 0  # the graph holds every (live) row up to this rowid
        self.reload()

    def reload(self) -> None:
        """Forget the rows (to load them again after a delete) but keep the graph, unless too
        many of its keys are deleted rows by then (see the module docstring)."""
        self.rows = RowCodes()
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)
        self._ann_count = 0  # vectors of _matrix[:_ann_count] that are in the graph
        self.max_rowid = 0
        self.seq = -1
        self.del_seq = -1

    @property
    def graph_rowid(self) -> int:
        """Rows with rowids up to this one are in the graph (0: no graph)."""
        return self._ann_max_rowid if self._ann is not None else 0

    def append(self, rows: Iterable[tuple]) -> int:  # type: ignore[type-arg]
        """Add (rowid, namespace, kind, float32 blob[, superseded, expires_at]) rows. Returns
        how many were new."""
        fresh = [row for row in rows if row[0] not in self.rows.pos]
        if not fresh:
            return 0
        vectors = np.frombuffer(b"".join(row[3] for row in fresh), dtype=np.float32).reshape(len(fresh), self.dim)
        size = len(self.rows)
        needed = size + len(fresh)
        if needed > len(self._matrix):
            grown = np.zeros((max(needed, int(len(self._matrix) * 1.5) + 1024), self.dim), dtype=np.float32)
            grown[:size] = self._matrix[:size]
            self._matrix = grown
        self._matrix[size:needed] = vectors
        for rowid, namespace, kind, _, *status in fresh:
            self.rows.add(rowid, namespace, kind, *status)
            if self._ann is not None and rowid <= self._ann_max_rowid:
                self._ann_count += 1  # a row the graph already holds (rows come in rowid order)
        self.max_rowid = max(self.max_rowid, max(row[0] for row in fresh))
        return len(fresh)

    def vectors_of(self, rowids: list[int]) -> np.ndarray:
        """The stored (normalised) vectors of `rowids`, zeros for rows without one."""
        out = np.zeros((len(rowids), self.dim), dtype=np.float32)
        for i, rowid in enumerate(rowids):
            position = self.rows.pos.get(rowid)
            if position is not None:
                out[i] = self._matrix[position]
        return out

    def __len__(self) -> int:
        return len(self.rows)

    # -- HNSW ----------------------------------------------------------------------------
    def ensure_ann(self, threads: int = 2) -> bool:
        """Build or extend the HNSW graph when the index is large enough. True if it changed."""
        size = len(self.rows)
        if size < ANN_MIN:
            return False
        Index = _usearch_index()
        if self._ann is not None and len(self._ann) - self._ann_count > DEAD_REBUILD_SHARE * len(self._ann):
            self._ann = None  # mostly deleted rows by now: a fresh graph is smaller and faster
        if self._ann is None:
            self._ann = Index(ndim=self.dim, metric="cos", dtype="i8", connectivity=16,
                              expansion_add=128, expansion_search=96)
            self._ann_count = 0
        if self._ann_count >= size:
            return False
        rowids = self.rows.arrays()[0]
        start = self._ann_count
        self._ann.add(rowids[start:size], self._matrix[start:size], threads=threads)
        self._ann_count = size
        self._ann_max_rowid = int(rowids[size - 1])
        return True

    def ann_bytes(self) -> bytes | None:
        return None if self._ann is None else bytes(self._ann.save())

    @property
    def graph_size(self) -> int:
        """Keys in the graph, deleted rows' included."""
        return 0 if self._ann is None else len(self._ann)

    def restore_ann(self, blob: bytes, max_rowid: int) -> bool:
        """Adopt a saved graph over the rows up to `max_rowid`; call after loading (only) those
        rows. False (and no graph) if the graph cannot hold them (a damaged snapshot)."""
        graph = _usearch_index().restore(bytearray(blob))
        if graph is None or len(graph) < len(self.rows) or graph.ndim != self.dim:
            return False
        self._ann, self._ann_max_rowid, self._ann_count = graph, max_rowid, len(self.rows)
        return True

    # -- search --------------------------------------------------------------------------
    def _exact(self, query: np.ndarray, positions: np.ndarray | None, k: int) -> list[tuple[int, float]]:
        rowids = self.rows.arrays()[0]
        # einsum, not `@`: BLAS's worker threads wait on cores that the embedding model's
        # threads are still spinning on right after a query embedding (+5 to +15 ms measured);
        # a single-threaded product is slower in isolation but steady in the real sequence.
        if positions is None:
            scores = np.einsum("ij,j->i", self._matrix[: len(rowids)], query)
            positions = np.arange(len(rowids))
        else:
            scores = np.einsum("ij,j->i", self._matrix[positions], query)
        k = min(k, len(scores))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(rowids[positions[i]]), float(scores[i])) for i in top]

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Top-k (rowid, cosine) among the rows `mask` admits (None: all rows)."""
        size = len(self.rows)
        if size == 0 or k <= 0:
            return []
        graph = self._ann is not None and self._ann_count == size
        admitted = size
        if mask is not None:
            admitted = int(mask.sum())
            if admitted == 0:
                return []
            if not graph or admitted <= EXACT_SUBSET_MAX:
                return self._exact(query, np.flatnonzero(mask), k)
        elif not graph:
            return self._exact(query, None, k)
        # The graph: oversample until enough admitted, live rows are found (keys of deleted
        # rows are not in `pos` and are skipped), then re-score those exactly.
        total = self.graph_size
        fetch = k * RESCORE_FACTOR * max(1, total // admitted)
        pos = self.rows.pos
        while True:
            matches = self._ann.search(query, min(fetch, total))
            found = (pos.get(int(key)) for key in matches.keys)
            keep = [p for p in found if p is not None and (mask is None or mask[p])]
            if len(keep) >= k * RESCORE_FACTOR or fetch >= total:
                return self._exact(query, np.array(keep, dtype=np.int64), k)
            fetch *= 4
