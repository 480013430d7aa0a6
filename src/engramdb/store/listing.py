"""Reading a store as a list rather than a ranking: pages, namespaces, stats.

Methods of `SQLiteStore` (assigned there), kept apart so the store module stays about
writes, channels and the in-memory indexes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ..model import Entry
from .base import Filters

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite import SQLiteStore


def page(self: "SQLiteStore", namespace: str, filters: Filters, *, newest_first: bool, limit: int,
         after: int | None = None) -> tuple[list[Entry], int | None]:
    """Up to `limit` entries in insertion order (or its reverse), starting after the row
    position `after`; returns them and the position to continue from (None at the end).
    Keyset pagination on the rowid, so entries added or deleted meanwhile never make a page
    repeat or skip another entry."""
    where, params = self._where(namespace, filters)
    if after is not None:
        where += " AND e.rowid < ?" if newest_first else " AND e.rowid > ?"
        params = [*params, after]
    rows = self._reader().execute(
        f"SELECT e.rowid, e.data FROM entries e WHERE {where} ORDER BY e.rowid {'DESC' if newest_first else 'ASC'} "
        "LIMIT ?", [*params, limit + 1]).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    return [self._entry(data) for _, data in rows], (int(rows[-1][0]) if more and rows else None)

def namespaces(self: "SQLiteStore") -> dict[str, dict[str, int]]:
    """Entry counts per kind for every namespace."""
    out: dict[str, dict[str, int]] = {}
    for ns, kind, n in self._reader().execute(
            "SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind ORDER BY namespace"):
        out.setdefault(ns, {})[kind] = int(n)
    return out


def stats(self: "SQLiteStore") -> dict[str, Any]:
    conn = self._reader()
    by_ns: dict[str, dict[str, int]] = {}
    for ns, kind, n in conn.execute("SELECT namespace, kind, count(*) FROM entries GROUP BY namespace, kind"):
        by_ns.setdefault(ns, {})[kind] = n
    total = sum(sum(v.values()) for v in by_ns.values())
    size = Path(self.path).stat().st_size if Path(self.path).exists() else 0
    return {
        "path": self.path,
        "count": total,
        "namespaces": {ns: {"count": sum(k.values()), "kinds": k} for ns, k in sorted(by_ns.items())},
        "embedder": self._meta("embedder", conn),
        "dim": int(self._meta("dim", conn) or 0) or None,
        "vectors": int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0]),
        "schema_version": self._meta("schema_version", conn),
        "file_bytes": size,
        "sqlite_version": apsw.sqlite_lib_version(),
    }
