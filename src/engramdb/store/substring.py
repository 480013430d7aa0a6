"""The substring channel: entries containing a query's literal strings (see `text.patterns`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .base import Filters

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite import SQLiteStore


def substring(self: "SQLiteStore", patterns: Sequence[str], k: int, namespace: str | None,
              filters: Filters) -> list[tuple[int, float]]:
    """Rows whose text contains any pattern (case-insensitive), most patterns matched first,
    then the newest. A scan within the namespace and filters: meant for short literal strings."""
    if not patterns:
        return []
    where, params = self._where(namespace, filters)
    matched = " + ".join("(instr(lower(e.text), ?) > 0)" for _ in patterns)
    rows = self._reader().execute(
        f"SELECT e.rowid, {matched} AS n FROM entries e WHERE {where} AND n > 0 ORDER BY n DESC, e.rowid DESC LIMIT ?",
        [*patterns, *params, k],
    ).fetchall()
    return [(int(rowid), float(n)) for rowid, n in rows]
