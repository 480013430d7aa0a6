"""The SQLite schema of the embedded store, and its in-place migrations.

Version 2 added ``entries.ts_end``: the end of the period an entry is about (a fact
restating "last week" covers seven days), used by the time-window channel.
Version 3 made ids unique per namespace instead of store-wide: an id belongs to its
namespace, so another namespace can never read, replace or move it (docs/RELIABILITY.md).
Version 4 added the memory lifecycle (docs/LIFECYCLE.md): ``entries.expires_at`` and
``entries.superseded_by`` (columns, so every channel can leave such entries out), and the
``history`` log of every add, update and delete.
"""

from __future__ import annotations

import apsw

from .base import SCHEMA_VERSION
from .connection import APPLICATION_ID, scalar

__all__ = ["SCHEMA_VERSION", "create_or_migrate", "is_current"]
_ENTRIES = """
CREATE TABLE IF NOT EXISTS {name} (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
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
    created_at TEXT NOT NULL,
    expires_at REAL,
    superseded_by TEXT,
    place INTEGER,
    UNIQUE (namespace, id)
);
"""
_COLUMNS = ("rowid, id, namespace, kind, text, timestamp, ts, ts_end, location, topic, doc_id, path, "
            "session_id, turn_id, speaker, data, created_at")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
""" + _ENTRIES.format(name="entries") + """
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
CREATE INDEX IF NOT EXISTS entries_ns_expires ON entries(namespace, expires_at) WHERE expires_at IS NOT NULL;
-- Every ADD, UPDATE and DELETE, written in the transaction of the change; `old` and `new` are
-- the entry's JSON before and after (NULL for none). Kept after the entry is deleted.
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')),
    at TEXT NOT NULL,
    actor TEXT,
    old TEXT,
    new TEXT
);
CREATE INDEX IF NOT EXISTS history_entry ON history(namespace, entry_id, seq);
"""


def stored_version(conn: apsw.Connection) -> str | None:
    """The file's recorded schema version (None: none recorded)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


def is_current(conn: apsw.Connection) -> bool:
    """Whether the file is at `SCHEMA_VERSION` (a read; opening a current store writes nothing)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() \
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() else None
    return row is not None and row[0] == SCHEMA_VERSION and \
        scalar(conn.execute("PRAGMA application_id")) == APPLICATION_ID


def create_or_migrate(conn: apsw.Connection) -> None:
    """Create the tables of a new file, or bring an older file up to `SCHEMA_VERSION`.

    Call inside a write transaction, so a failed migration leaves the file untouched.
    """
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone()
    if exists:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        if "ts_end" not in columns:
            # Schema 1 -> 2: periods were not stored; every old entry is an instant (ts_end NULL).
            conn.execute("ALTER TABLE entries ADD COLUMN ts_end REAL")
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if version is not None and int(version[0]) < 3:
            _ids_per_namespace(conn)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
        for column, kind in (("expires_at", "REAL"), ("superseded_by", "TEXT")):
            if column not in columns:  # schema 3 -> 4: no entry expired or superseded yet
                conn.execute(f"ALTER TABLE entries ADD COLUMN {column} {kind}")
        if "place" not in columns:  # schema 4 -> 5: every row is still where it was written
            conn.execute("ALTER TABLE entries ADD COLUMN place INTEGER")
    conn.execute(_SCHEMA)
    conn.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?), ('write_seq', '0'), ('delete_seq', '0')",
        (SCHEMA_VERSION,),
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _ids_per_namespace(conn: apsw.Connection) -> None:
    """Schema 2 -> 3: rebuild `entries` with ``UNIQUE (namespace, id)`` instead of a store-wide
    unique id (SQLite cannot drop a constraint in place). Rowids are kept, so terms, tags and
    vectors stay attached; the substring channel's trigram index is dropped (its triggers
    belong to the old table) and rebuilt on first use."""
    from .substring import TRIGRAM_TABLE

    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    conn.execute(f"DROP TRIGGER IF EXISTS {TRIGRAM_TABLE}_insert")
    conn.execute(f"DROP TRIGGER IF EXISTS {TRIGRAM_TABLE}_delete")
    conn.execute(f"DROP TABLE IF EXISTS {TRIGRAM_TABLE}")
    conn.execute(_ENTRIES.format(name="entries_v3"))
    conn.execute(f"INSERT INTO entries_v3 ({_COLUMNS}) SELECT {_COLUMNS} FROM entries")
    conn.execute("DROP TABLE entries")
    conn.execute("ALTER TABLE entries_v3 RENAME TO entries")
    if sequence is not None:
        conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'entries'", (sequence[0],))
    # Other processes' in-memory indexes must reload: rowids are the same, but be safe.
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key IN ('write_seq', 'delete_seq')")
