"""Time channels of the embedded store: overlap with a window, entries that state their time,
and the namespace's newest time (the default reference time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from .base import Filters

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite import SQLiteStore


def temporal(self: "SQLiteStore", start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
         filters: Filters) -> list[tuple[int, float]]:
    """Entries whose time overlaps ``[start, end)`` (epoch seconds), most overlap first.

    An instant (no ``timestamp_end``) inside the window scores 1.0; a period scores the
    share of it that lies inside. Ties (most rows, in practice) are broken by BM25 of the
    query inside the window, then by the newest, so the top k is the window's most
    relevant rather than an arbitrary slice of it.
    """
    where, params = self._where(namespace, filters)
    # Two index range scans instead of one "ts < end" scan of everything before the window
    # (100 ms at 100k entries): rows that start inside the window (namespace, ts), and
    # periods that start before it and reach into it (the partial index on ts_end).
    overlap = "coalesce(e.ts_end, e.ts) >= ? AND (e.ts_end IS NULL OR e.ts_end > ?)"
    rows = self._reader().execute(
        f"SELECT e.rowid, e.ts, e.ts_end FROM entries e WHERE {where} AND e.ts >= ? AND e.ts < ? AND {overlap} "
        f"UNION ALL SELECT e.rowid, e.ts, e.ts_end FROM entries e WHERE {where} AND e.ts_end IS NOT NULL "
        f"AND e.ts_end > ? AND e.ts < ? AND {overlap}",
        params + [start, end, start, start] + params + [start, start, start, start],
    ).fetchall()
    if not rows:
        return []
    rowids = np.array([r[0] for r in rows], dtype=np.int64)
    begin = np.array([r[1] for r in rows], dtype=np.float64)
    finish = np.array([r[2] if r[2] is not None else r[1] for r in rows], dtype=np.float64)
    length = finish - begin
    inside = np.minimum(finish, end) - np.maximum(begin, start)
    share = np.where(length > 0, np.clip(inside, 0, None) / np.where(length > 0, length, 1), 1.0)
    lexical = np.zeros(len(rowids))
    if terms:
        index = self._refresh_lexical()
        with index.lock.read():
            positions = np.fromiter((index.rows.pos.get(int(r), -1) for r in rowids), dtype=np.int64,
                                    count=len(rowids))
            known = positions >= 0
            if known.any():
                lexical[known] = index.score_positions(list(terms), positions[known])
    order = np.lexsort((-begin, -lexical, -share))[:k]
    return [(int(rowids[i]), float(share[i])) for i in order]


def dated(self: "SQLiteStore", terms: Sequence[str], k: int, namespace: str | None,
      filters: Filters) -> list[tuple[int, float]]:
    """Entries that state when their event happened (a period, e.g. a fact restating
    "yesterday"), ranked by BM25 of the query among them: for "when" questions that name
    no time of their own."""
    if not terms:
        return []
    where, params = self._where(namespace, filters)
    rowids = np.array([r for (r,) in self._reader().execute(
        f"SELECT e.rowid FROM entries e WHERE {where} AND e.ts_end IS NOT NULL", params)], dtype=np.int64)
    if len(rowids) == 0:
        return []
    index = self._refresh_lexical()
    with index.lock.read():
        positions = np.fromiter((index.rows.pos.get(int(r), -1) for r in rowids), dtype=np.int64,
                                count=len(rowids))
        known = positions >= 0
        rowids, positions = rowids[known], positions[known]
        scores = index.score_positions(list(terms), positions) if len(positions) else np.zeros(0)
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(rowids[i]), float(scores[i])) for i in order if scores[i] > 0]


def newest_timestamp(self: "SQLiteStore", namespace: str | None) -> str | None:
    """The latest time anything was said or written in the namespace: the default "now" for
    relative questions. Facts are only used when there is nothing else, because a fact's
    time is its event's, which may lie in the future ("next month")."""
    conn = self._reader()
    # Asked on every search, but it only changes with a write: cached per write sequence
    # (finding it scans the namespace's timestamps, ~10 ms at 10k entries).
    seqs = self._seqs(conn)
    cached = self._newest_cache.get(namespace)
    if cached is not None and cached[0] == seqs:
        return cached[1]
    scope, params = ("namespace = ? AND ", [namespace]) if namespace is not None else ("", [])
    newest: str | None = None
    for kinds in ("kind != 'fact' AND ", ""):
        row = conn.execute(f"SELECT max(ts) FROM entries WHERE {scope}{kinds}ts IS NOT NULL", params).fetchone()
        if row and row[0] is not None:
            found = conn.execute(f"SELECT timestamp FROM entries WHERE {scope}ts = ? LIMIT 1",
                                 params + [row[0]]).fetchone()
            newest = found[0] if found else None
            break
    if len(self._newest_cache) > 64:
        self._newest_cache.clear()
    self._newest_cache[namespace] = (seqs, newest)
    return newest
