"""The substring channel: entries containing a query's literal strings (see `text.patterns`).

Literals of three characters or more are looked up in an FTS5 trigram index over the entries'
text, then verified with ``instr``, so the answer is exactly that of a scan. The index is
built the first time the channel runs on a writable store (Ping-style presets are opt-in, so
other users never pay for it) and kept current by triggers. Shorter literals (two-digit
numbers) and read-only stores without the index fall back to scanning the namespace.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import StoreError
from .base import Filters
from .mirrors import CACHE_LOCK_MS
from .sql_filters import where_clause
from .sqlite_db import SQLiteFile

TRIGRAM_TABLE = "entries_trigram"
_TRIGRAM_SCHEMA = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {TRIGRAM_TABLE}
    USING fts5(text, content='entries', content_rowid='rowid', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS {TRIGRAM_TABLE}_insert AFTER INSERT ON entries BEGIN
    INSERT INTO {TRIGRAM_TABLE}(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS {TRIGRAM_TABLE}_delete AFTER DELETE ON entries BEGIN
    INSERT INTO {TRIGRAM_TABLE}({TRIGRAM_TABLE}, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""


class SubstringChannel:
    """The substring channel on one SQLite file. Its score is `channels.patterns_matched`
    (SQLite's ``lower`` folds ASCII letters only, as that function does)."""

    def __init__(self, db: SQLiteFile) -> None:
        self.db = db
        self.ready = False  # the trigram index exists (built on first use)

    def has_trigram_index(self) -> bool:
        """Whether the trigram index exists, building it first when the store is writable."""
        if self.ready:
            return True
        db = self.db
        exists = db.reader().execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TRIGRAM_TABLE,)).fetchone()
        if not exists and not db.read_only:
            try:
                with db.write_lock, db.transaction(CACHE_LOCK_MS):
                    db.writer.execute(_TRIGRAM_SCHEMA)
                    # 'rebuild' indexes every existing row; later writes go through the triggers.
                    db.writer.execute(f"INSERT INTO {TRIGRAM_TABLE}({TRIGRAM_TABLE}) VALUES ('rebuild')")
                exists = True
            except StoreError:
                return False  # another process kept the write lock: scan this time, build later
        self.ready = bool(exists)
        return self.ready

    def search(self, patterns: Sequence[str], k: int, namespace: str | None,
               filters: Filters) -> list[tuple[int, float]]:
        """Rows whose text contains any pattern (case-insensitive), most patterns matched
        first, then the newest."""
        if not patterns:
            return []
        where, params = where_clause(namespace, filters)
        matched = " + ".join("(instr(lower(e.text), ?) > 0)" for _ in patterns)
        scope = ""
        scope_params: list[object] = []
        if all(len(p) >= 3 for p in patterns) and self.has_trigram_index():
            phrases = " OR ".join('"' + p.replace('"', '""') + '"' for p in patterns)
            scope = f"e.rowid IN (SELECT rowid FROM {TRIGRAM_TABLE} WHERE {TRIGRAM_TABLE} MATCH ?) AND "
            scope_params = [phrases]
        rows: list[tuple[Any, ...]] = self.db.reader().execute(
            f"SELECT e.rowid, {matched} AS n FROM entries e WHERE {scope}{where} AND n > 0 "
            "ORDER BY n DESC, e.rowid DESC LIMIT ?",
            [*patterns, *scope_params, *params, k],
        ).fetchall()
        return [(int(rowid), float(n)) for rowid, n in rows]
