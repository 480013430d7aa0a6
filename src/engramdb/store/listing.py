"""Reading a store as a list rather than a ranking: pages, namespaces, stats, counts over
time and conversation sessions.

`SQLiteStore` delegates to a `Listing` of its file, so the store module stays about
writes, channels and the in-memory indexes.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw

from ..model import Entry
from .base import Filters
from .connection import scalar
from .sql_filters import where_clause
from .sqlite_db import SQLiteFile, decode_entry


# The time an entry is counted at, per `timeline` field: when it was added, or when its event
# happened (entries without an event time are counted apart, as undated).
_TIME_OF = {"created": "e.created_at", "event": "datetime(e.ts, 'unixepoch')"}
_BUCKET_OF = {"day": "date({t})", "week": "date({t}, 'weekday 0', '-6 days')",
              "month": "strftime('%Y-%m-01', {t})", "year": "strftime('%Y-01-01', {t})"}


class Listing:
    """Pages, namespaces, stats, timeline and sessions of one SQLite file."""

    def __init__(self, db: SQLiteFile) -> None:
        self.db = db

    def page(self, namespace: str, filters: Filters, *, newest_first: bool, limit: int,
             after: int | None = None) -> tuple[list[Entry], int | None]:
        """Up to `limit` entries in insertion order (or its reverse), starting after the row
        position `after`; returns them and the position to continue from (None at the end).
        Keyset pagination on the rowid, so entries added or deleted meanwhile never make a page
        repeat or skip another entry."""
        where, params = where_clause(namespace, filters)
        if after is not None:
            where += " AND e.rowid < ?" if newest_first else " AND e.rowid > ?"
            params = [*params, after]
        rows: list[tuple[Any, ...]] = self.db.reader().execute(
            f"SELECT e.rowid, e.data FROM entries e WHERE {where} ORDER BY e.rowid {'DESC' if newest_first else 'ASC'} "
            "LIMIT ?", [*params, limit + 1]).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        return [decode_entry(data) for _, data in rows], (int(rows[-1][0]) if more and rows else None)

    def namespaces(self) -> dict[str, dict[str, int]]:
        """Entry counts per kind for every namespace."""
        out: dict[str, dict[str, int]] = {}
        for ns, kind, n in self.db.reader().execute(
                "SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind ORDER BY namespace"):
            out.setdefault(ns, {})[kind] = int(n)
        return out

    def stats(self) -> dict[str, Any]:
        """Counts per namespace and kind, the model, vectors, schema and file size."""
        conn = self.db.reader()
        by_ns: dict[str, dict[str, int]] = {}
        for ns, kind, n in conn.execute("SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind"):
            by_ns.setdefault(ns, {})[kind] = n
        total = sum(sum(v.values()) for v in by_ns.values())
        size = Path(self.db.path).stat().st_size if Path(self.db.path).exists() else 0
        vectors = int(scalar(conn.execute("SELECT count(*) FROM vectors")))
        return {
            "path": self.db.path,
            "count": total,
            "namespaces": {ns: {"count": sum(k.values()), "kinds": k} for ns, k in sorted(by_ns.items())},
            # the model of the vectors held: a store without any takes any model
            "embedder": self.db.meta("embedder", conn) if vectors else None,
            "dim": (int(self.db.meta("dim", conn) or 0) or None) if vectors else None,
            "vectors": vectors,
            "schema_version": self.db.meta("schema_version", conn),
            "file_bytes": size,
            "sqlite_version": apsw.sqlite_lib_version(),
        }

    def timeline(self, namespace: str, filters: Filters, field: str,
                 bucket: str) -> tuple[list[tuple[str, int]], int, str | None, str | None]:
        """Entry counts per `bucket` (day, week starting Monday, month, year; UTC) of `field`'s
        time, oldest first, only non-empty buckets; also how many have no such time, and the
        first and last time counted."""
        where, params = where_clause(namespace, filters)
        conn = self.db.reader()
        time_of = _TIME_OF[field]
        undated = 0
        if field == "event":
            undated = _int(conn.execute(f"SELECT count(*) FROM entries e WHERE {where} AND e.ts IS NULL",
                                        params).fetchone())
            where += " AND e.ts IS NOT NULL"
        span = conn.execute(f"SELECT min({time_of}), max({time_of}) FROM entries e WHERE {where}", params).fetchone()
        first, last = (None, None) if span is None else (span[0], span[1])
        key = _BUCKET_OF[bucket].format(t=time_of)
        rows = conn.execute(f"SELECT {key} AS b, count(*) FROM entries e WHERE {where} GROUP BY b ORDER BY b", params)
        return ([(str(b), int(n)) for b, n in rows], undated, None if first is None else str(first),
                None if last is None else str(last))

    def sessions(self, namespace: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
        """The namespace's conversation sessions, most recently written first: turns and facts
        per session, its speakers, and the times of its first and last turn (of its entries,
        when it holds no turns: a fact's time is what it is about, "yesterday", "next year")."""
        where, params = where_clause(namespace, filters)
        rows = self.db.reader().execute(
            "SELECT e.session_id, sum(e.kind = 'turn'), sum(e.kind = 'fact'), count(*), "
            "coalesce(min(e.ts) FILTER (WHERE e.kind = 'turn'), min(e.ts)), "
            "coalesce(max(e.ts) FILTER (WHERE e.kind = 'turn'), max(e.ts)), "
            "json_group_array(DISTINCT e.speaker) FILTER (WHERE e.speaker IS NOT NULL AND e.kind = 'turn') "
            f"FROM entries e WHERE {where} AND e.session_id IS NOT NULL "
            "GROUP BY e.session_id ORDER BY max(e.rowid) DESC LIMIT ?", [*params, limit])
        return [{"session_id": str(sid), "turns": int(turns), "facts": int(facts), "count": int(n),
                 "start": _iso(start), "end": _iso(end), "speakers": json.loads(str(speakers)) if speakers else []}
                for sid, turns, facts, n, start, end, speakers in rows]


def _int(row: Any) -> int:
    return int(row[0]) if row is not None else 0


def _iso(epoch: Any) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(float(epoch), timezone.utc).isoformat()
