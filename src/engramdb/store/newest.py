"""The latest time anything was said or written in a namespace: the default "now" for
relative questions, defined once for every backend (each runs the SQL with its own
placeholder). Facts count only when there is nothing else, because a fact's time is its
event's, which may lie in the future ("next month"). A time after the clock never counts:
a store of facts with one planned event ("dentist, 5 March next year") would otherwise read
"last week" in the future; with nothing at or before the clock, the caller uses the clock.
Equal times: the earliest-written row.

Asked on every search but changed only by a write, or when the clock passes the next
future-dated entry, so it is cached until either happens (finding it scans the namespace's
timestamps, ~10 ms at 10k entries)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

Value = Callable[[str, list[Any]], Any]  # (sql, params) -> the first column of the first row, or None


class NewestTimestamps:
    def __init__(self, placeholder: str, clock: Callable[[], float] = time.time) -> None:
        self.placeholder = placeholder  # "?" for SQLite, "%s" for PostgreSQL
        self.clock = clock  # seconds since the epoch (tests pass their own)
        # namespace -> (write sequence, newest timestamp, the clock time it holds until)
        self._cache: dict[str | None, tuple[Any, str | None, float]] = {}

    def get(self, namespace: str | None, seqs: Any, value: Value) -> str | None:
        """The namespace's newest timestamp (None: no entry has one), with ``value`` running
        a query in the caller's snapshot; `seqs` is the store's write sequence."""
        now = self.clock()
        cached = self._cache.get(namespace)
        if cached is not None and cached[0] == seqs and now < cached[2]:
            return cached[1]
        mark = self.placeholder
        scope, params = (f"namespace = {mark} AND ", [namespace]) if namespace is not None else ("", [])
        newest: str | None = None
        for kinds in ("kind != 'fact' AND ", ""):
            latest = value(f"SELECT max(ts) FROM entries WHERE {scope}{kinds}ts IS NOT NULL AND ts <= {mark}",
                           params + [now])
            if latest is not None:
                newest = value(f"SELECT timestamp FROM entries WHERE {scope}ts = {mark} ORDER BY rowid LIMIT 1",
                               params + [latest])
                break
        upcoming = value(f"SELECT min(ts) FROM entries WHERE {scope}ts > {mark}", params + [now])
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[namespace] = (seqs, newest, math.inf if upcoming is None else float(upcoming))
        return newest
