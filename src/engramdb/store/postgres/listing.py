"""The admin reads of `PostgresStore` (pages, namespaces, stats, the timeline, sessions),
each a function of a cursor in the caller's read snapshot; the SQLite store's are in
`store.listing`, with the same results."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import psycopg

from ...model import Entry
from ..base import Filters
from .filters import where_clause
from .rows import decode_entry, one, scalar


def page(cur: psycopg.Cursor[Any], namespace: str, filters: Filters, *, newest_first: bool, limit: int,
         after: int | None = None) -> tuple[list[Entry], int | None]:
    where, params = where_clause(namespace, filters)
    if after is not None:
        where += " AND e.rowid < %s" if newest_first else " AND e.rowid > %s"
        params = [*params, after]
    rows = cur.execute(f"SELECT e.rowid, e.data FROM entries e WHERE {where} ORDER BY e.rowid "
                       f"{'DESC' if newest_first else 'ASC'} LIMIT %s", [*params, limit + 1]).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    return [decode_entry(data) for _, data in rows], (int(rows[-1][0]) if more and rows else None)


def namespaces(cur: psycopg.Cursor[Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for ns, kind, n in cur.execute("SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind "
                                   "ORDER BY namespace, kind"):
        out.setdefault(ns, {})[kind] = int(n)
    return out


def stats(cur: psycopg.Cursor[Any], location: str) -> dict[str, Any]:
    by_ns: dict[str, dict[str, int]] = {}
    for ns, kind, n in cur.execute("SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind"):
        by_ns.setdefault(ns, {})[kind] = int(n)
    meta = dict(cur.execute("SELECT key, value FROM meta").fetchall())
    vectors = int(scalar(cur.execute("SELECT count(*) FROM entries WHERE vec IS NOT NULL")))
    size = int(scalar(cur.execute("SELECT pg_database_size(current_database())")))
    version = str(scalar(cur.execute("SHOW server_version")))
    total = sum(sum(v.values()) for v in by_ns.values())
    return {
        "path": location,
        "count": total,
        "namespaces": {ns: {"count": sum(k.values()), "kinds": k} for ns, k in sorted(by_ns.items())},
        # the model of the vectors held: a store without any takes any model
        "embedder": meta.get("embedder") if vectors else None,
        "dim": (int(meta.get("dim") or 0) or None) if vectors else None,
        "vectors": vectors,
        "schema_version": meta.get("schema_version"),
        "file_bytes": size,
        "backend": "postgres",
        "server_version": f"PostgreSQL {version}",
    }


def timeline(cur: psycopg.Cursor[Any], namespace: str, filters: Filters, field: str,
             bucket: str) -> tuple[list[tuple[str, int]], int, str | None, str | None]:
    """Entry counts per UTC bucket (day, week from Monday, month, year), as on SQLite."""
    where, params = where_clause(namespace, filters)
    if field == "created":
        t = "(e.created_at::timestamptz AT TIME ZONE 'UTC')"
        first_last = "min(e.created_at), max(e.created_at)"
    else:
        t = "(to_timestamp(e.ts) AT TIME ZONE 'UTC')"
        first_last = ("to_char(to_timestamp(min(e.ts)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), "
                      "to_char(to_timestamp(max(e.ts)) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')")
    key = {"day": f"to_char({t}, 'YYYY-MM-DD')", "week": f"to_char(date_trunc('week', {t}), 'YYYY-MM-DD')",
           "month": f"to_char({t}, 'YYYY-MM-01')", "year": f"to_char({t}, 'YYYY-01-01')"}[bucket]
    undated = 0
    if field == "event":
        undated = int(scalar(cur.execute(f"SELECT count(*) FROM entries e WHERE {where} AND e.ts IS NULL",
                                  params)))
        where += " AND e.ts IS NOT NULL"
    first, last = one(cur.execute(f"SELECT {first_last} FROM entries e WHERE {where}", params))
    rows = cur.execute(f"SELECT {key} AS b, count(*) FROM entries e WHERE {where} GROUP BY b ORDER BY b",
                       params).fetchall()
    return ([(str(b), int(n)) for b, n in rows], undated, None if first is None else str(first),
            None if last is None else str(last))


def sessions(cur: psycopg.Cursor[Any], namespace: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
    """As `Listing.sessions`: a session's times are its turns' (its entries' when it has none)."""
    where, params = where_clause(namespace, filters)
    rows = cur.execute(
        "SELECT e.session_id, count(*) FILTER (WHERE e.kind = 'turn'), count(*) FILTER (WHERE e.kind = 'fact'), "
        "count(*), coalesce(min(e.ts) FILTER (WHERE e.kind = 'turn'), min(e.ts)), "
        "coalesce(max(e.ts) FILTER (WHERE e.kind = 'turn'), max(e.ts)), "
        "array_agg(e.speaker ORDER BY e.rowid) FILTER (WHERE e.speaker IS NOT NULL AND e.kind = 'turn') "
        f"FROM entries e WHERE {where} AND e.session_id IS NOT NULL "
        "GROUP BY e.session_id ORDER BY max(e.rowid) DESC LIMIT %s", [*params, limit]).fetchall()
    return [{"session_id": str(sid), "turns": int(turns), "facts": int(facts), "count": int(n),
             "start": _iso(start), "end": _iso(end), "speakers": list(dict.fromkeys(speakers or []))}
            for sid, turns, facts, n, start, end, speakers in rows]


def _iso(epoch: Any) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(float(epoch), timezone.utc).isoformat()
