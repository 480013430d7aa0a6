"""The latest time anything was said or written in a namespace: the default "now" for
relative questions, defined once for every backend (each runs the SQL with its own
placeholder). Facts count only when there is nothing else, because a fact's time is its
event's, which may lie in the future ("next month"). Equal times: the earliest-written row.

Asked on every search but changed only by a write, so it is cached per write sequence
(finding it scans the namespace's timestamps, ~10 ms at 10k entries)."""

from __future__ import annotations

from typing import Any, Callable

Value = Callable[[str, list[Any]], Any]  # (sql, params) -> the first column of the first row, or None


class NewestTimestamps:
    def __init__(self, placeholder: str) -> None:
        self.placeholder = placeholder  # "?" for SQLite, "%s" for PostgreSQL
        self._cache: dict[str | None, tuple[Any, str | None]] = {}

    def get(self, namespace: str | None, seqs: Any, value: Value) -> str | None:
        """The namespace's newest timestamp (None: no entry has one), with ``value`` running
        a query in the caller's snapshot; `seqs` is the store's write sequence."""
        cached = self._cache.get(namespace)
        if cached is not None and cached[0] == seqs:
            return cached[1]
        mark = self.placeholder
        scope, params = (f"namespace = {mark} AND ", [namespace]) if namespace is not None else ("", [])
        newest: str | None = None
        for kinds in ("kind != 'fact' AND ", ""):
            latest = value(f"SELECT max(ts) FROM entries WHERE {scope}{kinds}ts IS NOT NULL", params)
            if latest is not None:
                newest = value(f"SELECT timestamp FROM entries WHERE {scope}ts = {mark} ORDER BY rowid LIMIT 1",
                               params + [latest])
                break
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[namespace] = (seqs, newest)
        return newest
