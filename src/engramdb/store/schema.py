"""The SQLite schema of the embedded store, and its in-place migrations.

Version 2 added ``entries.ts_end``: the end of the period an entry is about (a fact
restating "last week" covers seven days), used by the time-window channel.
"""

from __future__ import annotations

import apsw

SCHEMA_VERSION = "2"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    timestamp TEXT,
    ts REAL,
    ts_end REAL,
    location TEXT,
    topic TEXT,
    doc_id TEXT,
    path TEXT,
    session_id TEXT,
    turn_id TEXT,
    speaker TEXT,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_ns_kind ON entries(namespace, kind);
CREATE INDEX IF NOT EXISTS entries_ns_ts ON entries(namespace, ts);
CREATE INDEX IF NOT EXISTS entries_ns_doc ON entries(namespace, doc_id);
CREATE INDEX IF NOT EXISTS entries_ns_path ON entries(namespace, path);
CREATE INDEX IF NOT EXISTS entries_ns_session ON entries(namespace, session_id);
-- The dated channel reads the (few) entries that cover a period; without this partial index
-- it scanned the namespace (~9 ms at 10k entries).
CREATE INDEX IF NOT EXISTS entries_ns_dated ON entries(namespace, ts_end) WHERE ts_end IS NOT NULL;
CREATE TABLE IF NOT EXISTS tags (
    field TEXT NOT NULL, value TEXT NOT NULL, rowid INTEGER NOT NULL,
    PRIMARY KEY (field, value, rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_rowid ON tags(rowid);
CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ann_snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1), del_seq INTEGER NOT NULL, count INTEGER NOT NULL,
    max_rowid INTEGER NOT NULL, blob BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS lexicon (rowid INTEGER PRIMARY KEY, body TEXT NOT NULL, tags TEXT NOT NULL);
"""


def create_or_migrate(conn: apsw.Connection) -> None:
    """Create the tables of a new file, or bring an older file up to `SCHEMA_VERSION`.

    Call inside a transaction, so a failed migration leaves the file untouched.
    """
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone()
    if exists:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        if "ts_end" not in columns:
            # Schema 1 -> 2: periods were not stored; every old entry is an instant (ts_end NULL).
            conn.execute("ALTER TABLE entries ADD COLUMN ts_end REAL")
    conn.execute(_SCHEMA)
    conn.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?), ('write_seq', '0'), ('delete_seq', '0')",
        (SCHEMA_VERSION,),
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
