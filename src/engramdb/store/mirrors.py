"""The in-memory indexes of the SQLite store and their upkeep: BM25 postings and vectors
mirrored from the file, the admit-masks filters make over them, and the HNSW snapshot.

All of this is the SQLite backend's own business (a server backend indexes in the
database): the `Store` protocol knows nothing of warming or snapshots.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from ..errors import StoreError
from .base import Filters
from .lexical import LexicalIndex, RowCodes
from .sql_filters import where_clause
from .sqlite_db import SQLiteFile
from .vectors import VectorIndex

# How long a search or close waits for the write lock to save a cache (the HNSW graph, the
# trigram index) before giving up on it for now.
CACHE_LOCK_MS = 250


class Mirrors:
    """The file's terms and vectors in RAM, brought up to date (with what this or any other
    process wrote) before each use."""

    def __init__(self, db: SQLiteFile) -> None:
        self.db = db
        self.lexical_index = LexicalIndex()
        dim = db.meta("dim")
        self.vector_index: VectorIndex | None = VectorIndex(int(dim)) if dim else None
        self._scope_cache: dict[tuple[Any, ...], set[int]] = {}
        self._scope_lock = threading.Lock()

    def bind_dim(self, dim: int) -> None:
        """Vectors of `dim` dimensions from now on (the embedder was just bound; a store whose
        recorded model holds no vectors takes another, of any size)."""
        if self.vector_index is None or self.vector_index.dim != dim:
            self.vector_index = VectorIndex(dim)

    def mask(self, rows: RowCodes, namespace: str | None, filters: Filters) -> Any:
        """Admit-mask over an in-memory index's positions: namespace and kind are checked on
        codes kept in RAM; other filters are evaluated once in SQL (cached per store state)."""
        rest = dataclasses.replace(filters.matching_only(), kinds=[])
        allowed = None
        if not rest.is_empty():
            where, params = where_clause(namespace, rest)
            conn = self.db.reader()
            key = (where, tuple(map(repr, params)), self.db.seqs(conn))
            with self._scope_lock:
                allowed = self._scope_cache.get(key)
            if allowed is None:
                allowed = {r for (r,) in conn.execute(f"SELECT e.rowid FROM entries e WHERE {where}", params)}
                with self._scope_lock:
                    if len(self._scope_cache) > 16:
                        self._scope_cache.clear()
                    self._scope_cache[key] = allowed
        return rows.mask(namespace, filters.kinds, allowed, rows.hidden(filters.visible_at, filters.include_superseded))

    def lexical(self) -> LexicalIndex:
        """The BM25 index, up to date with the file (own or other writers)."""
        index = self.lexical_index
        conn = self.db.reader()
        seq, del_seq = self.db.seqs(conn)
        if index.seq == seq and index.del_seq == del_seq:
            return index
        with index.lock.write():
            if index.seq == seq and index.del_seq == del_seq:
                return index
            if index.del_seq != del_seq:
                index.reset()
            index.append(conn.execute(
                "SELECT l.rowid, e.namespace, e.kind, l.body, l.tags, e.superseded_by IS NOT NULL, e.expires_at "
                "FROM lexicon l JOIN entries e ON e.rowid = l.rowid "
                "WHERE l.rowid > ? ORDER BY l.rowid", (index.max_rowid,)))
            index.seq, index.del_seq = seq, del_seq
        return index

    def vectors(self) -> VectorIndex | None:
        """The vector index, up to date with the file (None before any model is bound)."""
        index = self.vector_index
        if index is None:
            return None
        conn = self.db.reader()
        seq, del_seq = self.db.seqs(conn)
        if index.seq == seq and index.del_seq == del_seq:
            return index
        select = ("SELECT v.rowid, e.namespace, e.kind, v.vec, e.superseded_by IS NOT NULL, e.expires_at "
                  "FROM vectors v JOIN entries e ON e.rowid = v.rowid "
                  "WHERE v.rowid {} ? ORDER BY v.rowid")
        with index.lock.write():
            if index.seq == seq and index.del_seq == del_seq:
                return index
            if index.del_seq != del_seq:
                index.reload()  # rows were deleted: reload them, keep the graph (vectors.py)
                if index.graph_size == 0:
                    snap = conn.execute("SELECT max_rowid, blob FROM ann_snapshot WHERE id = 1").fetchone()
                    if snap is not None:
                        index.append(conn.execute(select.format("<="), (snap[0],)))
                        if not index.restore_ann(snap[1], snap[0]):
                            index.reset()
            index.append(conn.execute(select.format(">"), (index.max_rowid,)))
            index.ensure_ann()
            index.seq, index.del_seq = seq, del_seq
        return index

    def save_snapshot(self) -> bool:
        """Persist the HNSW graph in the file so the next open skips rebuilding it.

        Only when this process built or extended the graph; opening a store for `stats`
        or a lexical search never loads vectors just to save them. Best effort: it waits at
        most `CACHE_LOCK_MS` for the write lock and gives up quietly when another
        process holds it, the file is read-only, or a newer graph is already saved; a
        search must never fail (or lose its output) because a cache could not be written.
        """
        index = self.vector_index
        if index is None or self.db.read_only or index.seq < 0:
            return False
        with index.lock.read():
            if index._ann is None:
                return False
            graph_rowid, keys = index.graph_rowid, index.graph_size
            if self._saved_graph(graph_rowid, keys):
                return False
            blob = index.ann_bytes()
            if blob is None:
                return False
            try:
                with self.db.write_lock, self.db.transaction(CACHE_LOCK_MS):
                    if self._saved_graph(graph_rowid, keys):
                        return False  # another process saved the same or a newer graph
                    self.db.writer.execute(
                        "INSERT OR REPLACE INTO ann_snapshot(id, del_seq, count, max_rowid, blob) VALUES (1, ?, ?, ?, ?)",
                        (self.db.seqs(self.db.writer)[1], keys, graph_rowid, blob),
                    )
            except StoreError:
                return False
        return True

    def _saved_graph(self, graph_rowid: int, keys: int) -> bool:
        """Whether the saved graph covers as many rows as ours (a later one, or the same)."""
        snap = self.db.writer.execute("SELECT max_rowid, count FROM ann_snapshot WHERE id = 1").fetchone()
        return snap is not None and (snap[0] > graph_rowid or (snap[0] == graph_rowid and snap[1] <= keys))
