"""Time channels of the embedded store: overlap with a window, entries that state their time,
and the namespace's newest time (the default reference time). Scores and orders are those
of `channels`, shared by every backend."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Filters
from .channels import overlap_share, rank_dated, rank_temporal
from .mirrors import Mirrors
from .newest import NewestTimestamps
from .sql_filters import where_clause
from .sqlite_db import SQLiteFile


class TimeChannels:
    """The temporal and dated channels and the newest timestamp, on one SQLite file."""

    def __init__(self, db: SQLiteFile, mirrors: Mirrors) -> None:
        self.db, self.mirrors = db, mirrors
        self._newest = NewestTimestamps("?")

    def _bm25(self, terms: Sequence[str], rowids: np.ndarray) -> np.ndarray:
        """BM25 of the query terms for `rowids` (0 where a row has no terms indexed)."""
        lexical = np.zeros(len(rowids))
        if terms:
            index = self.mirrors.lexical()
            with index.lock.read():
                positions = np.fromiter((index.rows.pos.get(int(r), -1) for r in rowids), dtype=np.int64,
                                        count=len(rowids))
                known = positions >= 0
                if known.any():
                    lexical[known] = index.score_positions(list(terms), positions[known])
        return lexical

    def temporal(self, start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters) -> list[tuple[int, float]]:
        """Entries whose time overlaps ``[start, end)`` (epoch seconds), most overlap first.

        An instant (no ``timestamp_end``) inside the window scores 1.0; a period scores the
        share of it that lies inside. Ties (most rows, in practice) are broken by BM25 of the
        query inside the window, then by the newest, so the top k is the window's most
        relevant rather than an arbitrary slice of it (`channels.rank_temporal`).
        """
        where, params = where_clause(namespace, filters)
        # Two index range scans instead of one "ts < end" scan of everything before the window
        # (100 ms at 100k entries): rows that start inside the window (namespace, ts), and
        # periods that start before it and reach into it (the partial index on ts_end).
        overlap = "coalesce(e.ts_end, e.ts) >= ? AND (e.ts_end IS NULL OR e.ts_end > ?)"
        rows = self.db.reader().execute(
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
        share = overlap_share(begin, finish, start, end)
        return rank_temporal(rowids, begin, share, self._bm25(terms, rowids), k)

    def dated(self, terms: Sequence[str], k: int, namespace: str | None,
              filters: Filters) -> list[tuple[int, float]]:
        """Entries that state when their event happened (a period, e.g. a fact restating
        "yesterday"), ranked by BM25 of the query among them: for "when" questions that name
        no time of their own."""
        if not terms:
            return []
        where, params = where_clause(namespace, filters)
        rowids = np.array([r for (r,) in self.db.reader().execute(
            f"SELECT e.rowid FROM entries e WHERE {where} AND e.ts_end IS NOT NULL", params)], dtype=np.int64)
        if len(rowids) == 0:
            return []
        index = self.mirrors.lexical()
        with index.lock.read():
            positions = np.fromiter((index.rows.pos.get(int(r), -1) for r in rowids), dtype=np.int64,
                                    count=len(rowids))
            known = positions >= 0
            rowids, positions = rowids[known], positions[known]
            scores = index.score_positions(list(terms), positions) if len(positions) else np.zeros(0)
        return rank_dated(rowids, scores, k)

    def newest_timestamp(self, namespace: str | None) -> str | None:
        """The namespace's latest time (`newest`)."""
        conn = self.db.reader()

        def value(sql: str, params: list[Any]) -> Any:
            row = conn.execute(sql, params).fetchone()
            return None if row is None else row[0]

        return self._newest.get(namespace, self.db.seqs(conn), value)
