"""The PostgreSQL schema of an Engram store, in its own schema ``engram`` of the database.

The same entry columns as the SQLite file (`store.schema`), plus what the database indexes
itself instead of in-process mirrors:

* ``entries.vec`` (pgvector; typed ``vector(dim)`` and HNSW-indexed for cosine once the
  embedder is bound), ``entries.metadata`` (JSONB, GIN-indexed, for metadata filters),
  ``entries.lex_len`` (the row's BM25 length, `channels.row_length`);
* ``postings`` (namespace, term, rowid, weighted tf, the row's length; keyed so that a
  term's postings in a namespace are one index-only scan), ``terms`` (term, document
  frequency) and the one-row ``lex_stats`` (rows, total length): the BM25 statistics,
  maintained in each write transaction, from which the channels compute exactly the
  SQLite store's scores (`bm25`);
* ``namespace_rows`` (namespace, rows): how many entries each namespace holds, kept in
  each write transaction, so the semantic channel knows without counting whether a
  namespace is small enough for an exact scan;
* a ``pg_trgm`` GIN index over ``entries.text`` for the substring channel.

Every write transaction first takes `WRITE_LOCK` (a transaction-level advisory lock), so
writers are serialised as SQLite's are: classify-then-write, scope deletes and the term
statistics never race, and rowids are committed in increasing order (keyset pages).
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..base import SCHEMA_VERSION
from .rows import scalar

SCHEMA = "engram"
WRITE_LOCK = 0x456E676D  # "Engm": the advisory lock every writer takes first

DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    text text NOT NULL,
    timestamp text,
    ts double precision,
    ts_end double precision,
    location text,
    topic text,
    doc_id text,
    path text,
    session_id text,
    turn_id text,
    speaker text,
    data text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,
    created_at text NOT NULL,
    expires_at double precision,
    superseded_by text,
    lex_len real NOT NULL DEFAULT 0,
    vec vector,
    place bigint,
    UNIQUE (namespace, id)
);
CREATE INDEX IF NOT EXISTS entries_ns_kind ON entries (namespace, kind);
CREATE INDEX IF NOT EXISTS entries_ns_ts ON entries (namespace, ts) INCLUDE (rowid, ts_end, superseded_by, expires_at);
CREATE INDEX IF NOT EXISTS entries_ns_doc ON entries (namespace, doc_id);
CREATE INDEX IF NOT EXISTS entries_ns_path ON entries (namespace, path);
CREATE INDEX IF NOT EXISTS entries_ns_session ON entries (namespace, session_id);
CREATE INDEX IF NOT EXISTS entries_ns_dated ON entries (namespace, ts_end) WHERE ts_end IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_ns_expires ON entries (namespace, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_metadata ON entries USING gin (metadata jsonb_path_ops);
CREATE INDEX IF NOT EXISTS entries_text_trgm ON entries USING gin (text gin_trgm_ops);
CREATE TABLE IF NOT EXISTS tags (
    field text NOT NULL, value text NOT NULL,
    rowid bigint NOT NULL REFERENCES entries (rowid) ON DELETE CASCADE,
    PRIMARY KEY (field, value, rowid)
);
CREATE INDEX IF NOT EXISTS tags_rowid ON tags (rowid);
CREATE TABLE IF NOT EXISTS postings (
    namespace text NOT NULL,
    term text NOT NULL,
    rowid bigint NOT NULL REFERENCES entries (rowid) ON DELETE CASCADE,
    tf real NOT NULL,
    len real NOT NULL,
    PRIMARY KEY (namespace, term, rowid) INCLUDE (tf, len)
);
CREATE INDEX IF NOT EXISTS postings_rowid ON postings (rowid);
CREATE TABLE IF NOT EXISTS terms (term text PRIMARY KEY, df bigint NOT NULL);
CREATE TABLE IF NOT EXISTS lex_stats (
    id int PRIMARY KEY CHECK (id = 1), rows bigint NOT NULL, total_length double precision NOT NULL
);
INSERT INTO lex_stats (id, rows, total_length) VALUES (1, 0, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS namespace_rows (namespace text PRIMARY KEY, rows bigint NOT NULL);
CREATE TABLE IF NOT EXISTS history (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace text NOT NULL,
    entry_id text NOT NULL,
    event text NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'DELETE')),
    at text NOT NULL,
    actor text,
    old text,
    new text
);
CREATE INDEX IF NOT EXISTS history_entry ON history (namespace, entry_id, seq);
INSERT INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}'), ('write_seq', '0'), ('delete_seq', '0')
    ON CONFLICT (key) DO NOTHING;
"""


def upgrade(cur: psycopg.Cursor[Any]) -> None:
    """Bring a store made by an earlier version of this backend up to this layout, in the
    caller's write transaction: postings without their namespace and row length, a time
    index that does not cover the lifecycle columns, no per-namespace row counts. What is
    missing is then made by `DDL` itself (its statements are idempotent)."""
    changed = _upgrade_postings(cur)
    # Schema 4 -> 5: a row's place in its session (NULL: where it was written, its rowid).
    if cur.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND "
                   "table_name = 'entries' AND column_name = 'place'", (SCHEMA,)).fetchone() is None:
        cur.execute("ALTER TABLE entries ADD COLUMN place bigint")  # checked first: it locks the table
    covering = scalar(cur.execute("SELECT pg_get_indexdef(to_regclass(%s))", (f"{SCHEMA}.entries_ns_ts",)))
    if covering is not None and "INCLUDE" not in covering:  # the temporal channel's window: index-only
        cur.execute("DROP INDEX entries_ns_ts")
        changed = True
    count_rows = scalar(cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.namespace_rows",))) is None
    if changed or count_rows:
        cur.execute(DDL)
    if count_rows:
        cur.execute("INSERT INTO namespace_rows SELECT namespace, count(*) FROM entries GROUP BY namespace")
    _repair_created_at(cur)
    cur.execute("UPDATE meta SET value = %s WHERE key = 'schema_version' AND value <> %s", (SCHEMA_VERSION,) * 2)


def _repair_created_at(cur: psycopg.Cursor[Any]) -> None:
    """Before 2026-12-02 an entry written here kept its ``created_at`` in the column but not
    in the JSON that reads return (so `get`, `export` and `migrate` gave null or the copy's
    time): copy the column into the JSON, once per store (a `meta` key records it)."""
    if cur.execute("SELECT 1 FROM meta WHERE key = 'created_at_in_data'").fetchone() is not None:
        return
    cur.execute("UPDATE entries SET data = jsonb_set(data::jsonb, '{created_at}', to_jsonb(created_at))::text "
                "WHERE coalesce(data::jsonb ->> 'created_at', '') = ''")
    cur.execute("INSERT INTO meta (key, value) VALUES ('created_at_in_data', '1') ON CONFLICT (key) DO NOTHING")


def _upgrade_postings(cur: psycopg.Cursor[Any]) -> bool:
    """Postings gain their namespace and row length (index-only BM25 scans). Returns
    whether anything changed."""
    has_len = cur.execute("SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND "
                          "table_name = 'postings' AND column_name = 'len'", (SCHEMA,)).fetchone()
    if has_len is not None:
        return False
    cur.execute("ALTER TABLE postings ADD COLUMN namespace text, ADD COLUMN len real")
    cur.execute("UPDATE postings p SET namespace = e.namespace, len = e.lex_len FROM entries e WHERE e.rowid = p.rowid")
    cur.execute("ALTER TABLE postings ALTER COLUMN namespace SET NOT NULL, ALTER COLUMN len SET NOT NULL, "
                "DROP CONSTRAINT postings_pkey, ADD PRIMARY KEY (namespace, term, rowid) INCLUDE (tf, len)")
    return True


VECTOR_INDEX = "entries_vec_hnsw"
VECTOR_INDEX_DDL = f"CREATE INDEX IF NOT EXISTS {VECTOR_INDEX} ON entries USING hnsw (vec vector_cosine_ops)"


def vector_ddl(dim: int) -> str:
    """Type the vector column once the embedder is bound (then it is indexed: `VECTOR_INDEX_DDL`)."""
    return f"ALTER TABLE entries ALTER COLUMN vec TYPE vector({int(dim)})"


def index_build_memory(rows: int, dim: int) -> str:
    """``maintenance_work_mem`` for building the HNSW index over `rows` vectors: pgvector
    builds far faster while the graph fits in it (about 4 bytes per dimension plus the
    neighbour lists per row, with headroom), capped at 4 GB."""
    need = int(rows * (4 * dim + 400) * 1.5) // (1 << 20) + 64
    return f"{min(4096, max(64, need))}MB"
