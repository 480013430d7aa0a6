"""A process's copy of the postings and tag lists its searches use, read from the database
and brought up to date by reading only what was added since.

Why: at a million entries a common query term has tens of thousands of postings; reading
them on every search, or aggregating them in SQL, costs far more than scoring them with
numpy. The database stays the only truth; this is a cache of its immutable rows:

* a row never changes (a changed entry is a new row) and rowids only grow, committed in
  order (writers hold the store's advisory lock), so a list read up to rowid R is extended
  by reading its rows above R — one index range scan of the primary key per search;
* a delete anywhere (the store's ``delete_seq`` moves) drops the whole cache, as the SQLite
  store's mirrors reload; a row invisible to a search's snapshot is dropped by that
  search's filter check, so a list a newer snapshot extended is still right;
* at most `MAX_POSTINGS` rows are kept, the least recently used lists evicted first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import psycopg

MAX_POSTINGS = 20_000_000  # ~16 bytes each: ~320 MB at most
Key = tuple[str, str | None, str]  # ("term", namespace, term) or ("tag", field, value)


@dataclass
class PostingList:
    """One term's postings in one namespace (or one tag's rows), ascending by rowid."""

    rowids: np.ndarray  # int64
    tf: np.ndarray  # float32 (weighted term frequency; empty for a tag list)
    length: np.ndarray  # float32 (the row's BM25 length; empty for a tag list)

    @property
    def last(self) -> int:
        return int(self.rowids[-1]) if len(self.rowids) else 0

    def extended(self, rowids: list[int], tf: list[float], length: list[float]) -> "PostingList":
        """This list and rows above its last rowid (in any order; tf and length empty for a
        tag list)."""
        if not rowids:
            return self
        new_rowids = np.array(rowids, dtype=np.int64)
        order = np.argsort(new_rowids, kind="stable")
        new_tf = np.array(tf, dtype=np.float32)[order] if len(tf) else np.zeros(0, dtype=np.float32)
        new_length = np.array(length, dtype=np.float32)[order] if len(length) else np.zeros(0, dtype=np.float32)
        return PostingList(np.concatenate([self.rowids, new_rowids[order]]), np.concatenate([self.tf, new_tf]),
                           np.concatenate([self.length, new_length]))


_EMPTY = PostingList(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32))


class PostingsCache:
    """Thread-safe; one per `PostgresStore`."""

    def __init__(self, max_postings: int = MAX_POSTINGS) -> None:
        self.max_postings = max_postings
        self._lists: OrderedDict[Key, PostingList] = OrderedDict()
        self._size = 0
        self._delete_seq: int | None = None
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """How many postings (and tagged rows) are cached."""
        return self._size

    def _check(self, delete_seq: int) -> None:
        if self._delete_seq != delete_seq:
            self._lists.clear()
            self._size = 0
            self._delete_seq = delete_seq

    def _put(self, key: Key, value: PostingList) -> None:
        old = self._lists.pop(key, None)
        self._size += len(value.rowids) - (len(old.rowids) if old is not None else 0)
        self._lists[key] = value
        while self._size > self.max_postings and len(self._lists) > 1:
            _, evicted = self._lists.popitem(last=False)
            self._size -= len(evicted.rowids)

    def _bases(self, delete_seq: int, keys: list[Key]) -> list[PostingList]:
        with self._lock:
            self._check(delete_seq)
            return [self._lists.get(key, _EMPTY) for key in keys]

    def _cacheable(self, delete_seq: int) -> bool:
        return self._delete_seq == delete_seq  # no delete since the bases were taken

    def terms(self, cur: psycopg.Cursor[Any], delete_seq: int, namespace: str | None,
              terms: Sequence[str]) -> dict[str, PostingList]:
        """The postings of `terms` in `namespace` (None: every namespace), up to date with the
        cursor's snapshot."""
        keys: list[Key] = [("term", namespace, t) for t in terms]
        bases = self._bases(delete_seq, keys)
        scope, params = ("p.namespace = %s AND ", [namespace]) if namespace is not None else ("", [])
        # One row per term with its new postings as three arrays, in binary: a first read of
        # a common term (~50,000 postings at 1M entries) costs a fraction of as many rows.
        rows = cur.connection.cursor(binary=True).execute(
            "SELECT p.term, array_agg(p.rowid), array_agg(p.tf), array_agg(p.len) FROM postings p "
            "JOIN unnest(%s::text[], %s::int8[]) AS w(term, after) ON p.term = w.term AND p.rowid > w.after "
            f"WHERE {scope}true GROUP BY p.term", [list(terms), [b.last for b in bases], *params]).fetchall()
        found = self._merge(keys, bases, {("term", namespace, t): (r, tf, n) for t, r, tf, n in rows}, delete_seq)
        return {key[2]: plist for key, plist in found.items()}

    def tags(self, cur: psycopg.Cursor[Any], delete_seq: int,
             names: Sequence[tuple[str, str]]) -> dict[tuple[str, str], PostingList]:
        """The rows tagged with each (field, value)."""
        keys: list[Key] = [("tag", f, v) for f, v in names]
        bases = self._bases(delete_seq, keys)
        rows = cur.connection.cursor(binary=True).execute(
            "SELECT t.field, t.value, array_agg(t.rowid) FROM tags t JOIN unnest(%s::text[], %s::text[], %s::int8[]) "
            "AS w(field, value, after) ON t.field = w.field AND t.value = w.value AND t.rowid > w.after "
            "GROUP BY 1, 2", [[f for f, _ in names], [v for _, v in names], [b.last for b in bases]]).fetchall()
        found = self._merge(keys, bases, {("tag", f, v): (r, [], []) for f, v, r in rows}, delete_seq)
        return {(str(key[1]), key[2]): plist for key, plist in found.items()}

    def _merge(self, keys: list[Key], bases: list[PostingList],
               new: dict[Key, tuple[list[int], list[float], list[float]]], delete_seq: int) -> dict[Key, PostingList]:
        """Each base list extended by its new rows (sorted by rowid here: the database's
        aggregate keeps no order). Bases are immutable, so the result is right for this search
        whatever other threads did meanwhile; it is cached unless a longer list already is."""
        out = {key: base.extended(*new[key]) if key in new else base for key, base in zip(keys, bases)}
        with self._lock:
            if not self._cacheable(delete_seq):
                return out
            for key, base in zip(keys, bases):
                current = self._lists.get(key)
                if current is None or current is base or current.last < out[key].last:
                    self._put(key, out[key])
        return out
