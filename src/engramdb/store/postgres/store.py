"""`Store` on a PostgreSQL database with pgvector (docs/POSTGRES.md).

The database holds what the SQLite store mirrors in RAM: BM25 postings and statistics kept
in each write transaction (`writes`), an HNSW cosine index on ``entries.vec``, a trigram
index for substrings, B-tree/GIN indexes for filters. Channel scores are `channels`'
definitions with the same float32 arithmetic as the SQLite store's in-memory indexes, over
the database's statistics and a per-process cache of its postings (`bm25`, `postings`), so
both backends give the same numbers for the same data at any size. Filters are SQL
(`filters`); connections and the advisory write lock are `connections`; admin reads are
`listing`.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, ContextManager, Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

import numpy as np
import psycopg
from psycopg import IsolationLevel

from ...errors import EngramError, ModelMismatchError, NotAStoreError, NotFoundError, ReadOnlyStoreError, StoreError
from ...model import Entry, utc_now
from ..base import SCHEMA_VERSION, EntryTerms, Filters, check_expected, refuse_newer
from ..batches import (PLACE, check_batch, check_turn_ids, copy_place, ids_by_namespace, inherited_places, split_by_stored,
                       turn_ids_by_session)
from ..channels import NAME_FIELDS
from ..gazetteer import Gazetteer
from ..open import redact
from .errors import map_pg_error, translate_pg_errors
from .filters import where_clause
from ..newest import NewestTimestamps
from . import bm25, listing
from .connections import Connections, connect
from .postings import PostingsCache
from .rows import decode_entry, scalar
from .schema import DDL, SCHEMA, VECTOR_INDEX, VECTOR_INDEX_DDL, index_build_memory, upgrade, vector_ddl
from .writes import delete_rows, insert_rows, log_event

WARM_POSTINGS = 8_000_000  # `warm` reads at most this many postings (~130 MB of cache)
BULK_MIN = 50_000  # a bulk load of fewer rows keeps the HNSW index as it goes
EXACT_MAX = 40_000  # semantic searches over at most this many admitted rows are exact scans
# HNSW candidates fetched (and re-scored in float32, as SQLite scores them) per requested
# result. pgvector's graph holds the full vectors, so its order is already exact among what
# it visits: 2x (ef_search 200 for k = 100) keeps recall@100 against an exact scan at 0.999
# on 100k rows, and costs 8.8 ms a search where 4x cost 28.9 ms (docs/BENCHMARKS.md).
RESCORE_FACTOR = 2
_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"


def _vector(data: bytes) -> np.ndarray:
    """A pgvector value in its binary form (dimension, unused, big-endian float32s); reading
    it is many times cheaper than parsing its text or a ``real[]``."""
    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def _like_escape(pattern: str) -> str:
    return "%" + pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@translate_pg_errors
class PostgresStore:
    """`Store` on one PostgreSQL database (its schema ``engram``). Thread-safe; many processes
    may share the database. ``read_only`` never writes (writes raise `ReadOnlyStoreError`)."""

    def __init__(self, url: str, read_only: bool = False, busy_timeout_ms: int = 30_000, create: bool = True) -> None:
        self.url = url
        self.create = create  # False: a database without the store's schema is refused, not given one
        self.location = self.path = redact(url)
        self.read_only = read_only
        self.in_recovery = False  # a hot standby (found on open; then read-only too)
        self.busy_timeout_ms = busy_timeout_ms
        self._db = Connections(url, self.location)
        self._newest = NewestTimestamps("%s")
        self._defer_index = False  # inside `bulk_load`: the HNSW index is built at its end
        self._postings = PostingsCache()  # the postings and tag lists searches read (`postings`)
        self._binding: tuple[str, int] | None = None  # the model this process embeds with (bind_embedder)
        try:
            self._open()
        except psycopg.Error as exc:
            self.close()
            raise map_pg_error(exc, self.location, self.url) from exc
        except BaseException:
            self.close()
            raise
        self._names = Gazetteer(self._seqs, self._name_rows)

    # -- connections (`connections`) -----------------------------------------------------
    def _read(self, binary: bool = False) -> ContextManager[psycopg.Cursor[Any]]:
        """A cursor in one read-only snapshot (nested calls join it); `binary` results come
        in PostgreSQL's binary form (vectors as bytes: `_vector`)."""
        return self._db.read(binary)

    @contextmanager
    def _write(self, timeout_ms: int | None = None) -> Iterator[psycopg.Cursor[Any]]:
        """A write transaction holding the store's advisory write lock (all or nothing)."""
        if self.read_only:
            if self.in_recovery:
                raise ReadOnlyStoreError(f"store {self.location} is on a hot standby (a read replica), which "
                                         "cannot be written; write on the primary")
            raise ReadOnlyStoreError(f"store {self.location} is open read-only")
        with self._db.write(self.busy_timeout_ms if timeout_ms is None else timeout_ms) as cur:
            yield cur

    def _forget_broken(self) -> None:
        self._db.forget_broken()

    def _schema_row(self, cur: psycopg.Cursor[Any]) -> Any:
        """The ``schema_version`` row of the store's ``meta`` table; a schema of that name whose
        ``meta`` is another application's is refused (it was a raw UndefinedColumn error)."""
        columns = {name for (name,) in cur.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = 'meta'",
            (SCHEMA,))}
        if not {"key", "value"} <= columns:
            raise NotAStoreError(f"database {self.location} holds a schema {SCHEMA!r} of another application (its "
                                 "meta table is not Engram's); Engram will not change it. Give another database.")
        return cur.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()

    def _open(self) -> None:
        if urlsplit(self.url).scheme.lower() not in ("postgresql", "postgres"):
            raise StoreError(f"not a PostgreSQL URL: {self.location}")
        # A hot standby (a streaming replica) accepts only reads: it is opened read-only, so
        # opening never tries to create the schema, and every write raises
        # `ReadOnlyStoreError` up front rather than failing inside a transaction.
        with self._read() as cur:
            self.in_recovery = bool(scalar(cur.execute("SELECT pg_is_in_recovery()")))
            # pgvector and pg_trgm may live in a schema of their own (Supabase: "extensions"):
            # its types and operators were "missing", with advice to create what was there.
            homes = [name for (name,) in cur.execute(
                "SELECT DISTINCT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                "WHERE e.extname IN ('vector', 'pg_trgm') AND n.nspname NOT IN (%s, 'public') ORDER BY 1", (SCHEMA,))]
        self._db.widen_search_path(homes)
        self.read_only = self.read_only or self.in_recovery
        if not self.create or self.read_only:
            with self._read() as cur:
                if scalar(cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.meta",))) is None:
                    raise StoreError(f"no Engram store in database {self.location}")
        with self._read() as cur:
            if scalar(cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.meta",))) is not None:
                row = self._schema_row(cur)
                refuse_newer(row[0] if row else None, self.location, SCHEMA_VERSION)
        if self.read_only:
            with self._read() as cur:
                version = self._schema_row(cur)
                if version is None or version[0] != SCHEMA_VERSION:
                    raise ReadOnlyStoreError(f"store {self.location} must be upgraded to schema {SCHEMA_VERSION}; "
                                             "open it once without read-only")
        else:
            with self._write() as cur:
                current = scalar(cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.meta",))) is not None
                if current:
                    row = self._schema_row(cur)
                    current = row is not None and row[0] == SCHEMA_VERSION
                if not current:
                    # CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema
                    # is there: one an administrator made for Engram's role (least privilege) was refused.
                    if cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (SCHEMA,)).fetchone() is None:
                        cur.execute(f"CREATE SCHEMA {SCHEMA}")
                    for extension in ("vector", "pg_trgm"):
                        if cur.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (extension,)).fetchone() is None:
                            cur.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
                    cur.execute(DDL)
                upgrade(cur)
        with self._read() as cur:
            self.embedder_name = self._vector_model(cur)
        dim = self._meta("dim")
        self._dim: int | None = int(dim) if dim and self.embedder_name else None
        if not self.read_only and dim:
            self._build_vector_index()  # missing only after a bulk load was interrupted

    # -- warm-up -------------------------------------------------------------------------
    def warm(self, budget: int = WARM_POSTINGS) -> None:
        """Read the postings of the most frequent terms, largest namespaces first, and the rows
        of the most used names into the postings cache, up to `budget` postings: a search's
        first read of a common term costs 40-60 ms at a million entries (docs/BENCHMARKS.md),
        which a server should pay at start, not on its first requests."""
        with self._read() as cur:
            delete_seq = self._seqs()[1]
            namespaces = [ns for (ns,) in cur.execute("SELECT namespace FROM namespace_rows WHERE rows > 0 "
                                                      "ORDER BY rows DESC, namespace LIMIT 16")]
            terms = cur.execute("SELECT term, df FROM terms ORDER BY df DESC, term LIMIT 5000").fetchall()
            names = [(f, v) for f, v in cur.execute(
                "SELECT field, value FROM tags WHERE field = ANY(%s) GROUP BY field, value "
                "ORDER BY count(*) DESC, field, value LIMIT 200", (list(NAME_FIELDS),))]
            if names:
                self._postings.tags(cur, delete_seq, names)
            for namespace in namespaces:
                for start in range(0, len(terms), 50):
                    if self._postings.size >= budget:
                        return
                    self._postings.terms(cur, delete_seq, namespace, [t for t, _ in terms[start:start + 50]])

    # -- bulk loads ----------------------------------------------------------------------
    @contextmanager
    def bulk_load(self, rows: int) -> Iterator[None]:
        """Writes of about `rows` entries follow. When they at least double the store (and
        are many), the HNSW index is dropped first and built once at the end, as pgvector
        advises: inserting into the graph row by row is the slowest part of a large load.
        Searches meanwhile use exact scans (correct, slower); if the load is interrupted, the
        next writable open builds the index."""
        if self.read_only or rows < BULK_MIN or rows < self._rows():
            yield
            return
        self._defer_index = True
        try:
            if self._dim is not None:
                with self._write() as cur:
                    cur.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")
            yield
        finally:
            self._defer_index = False
            if self._dim is not None:
                self._build_vector_index()

    def _rows(self) -> int:
        """Every row of the store (superseded and expired too), as the statistics keep it."""
        with self._read() as cur:
            return int(scalar(cur.execute("SELECT rows FROM lex_stats WHERE id = 1")))

    @staticmethod
    def _has_vector_index(cur: psycopg.Cursor) -> bool:
        return scalar(cur.execute("SELECT to_regclass(%s)::text", (f"{SCHEMA}.{VECTOR_INDEX}",))) is not None

    def _build_vector_index(self) -> None:
        """The HNSW index, once the vector column is typed (the first vectors were written)."""
        with self._read() as cur:
            if self._has_vector_index(cur) or cur.execute("SELECT 1 FROM meta WHERE key = 'dim'").fetchone() is None:
                return
        rows = self._rows()
        with self._write() as cur:
            cur.execute(f"SET LOCAL maintenance_work_mem = '{index_build_memory(rows, self._dim or 1)}'")
            cur.execute(VECTOR_INDEX_DDL)

    def _meta(self, key: str) -> str | None:
        with self._read() as cur:
            row = cur.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return None if row is None else row[0]

    def _seqs(self) -> tuple[int, int]:
        with self._read() as cur:
            rows = dict(cur.execute("SELECT key, value FROM meta WHERE key IN ('write_seq', 'delete_seq')").fetchall())
        return int(rows.get("write_seq", 0)), int(rows.get("delete_seq", 0))

    # -- model binding -------------------------------------------------------------------
    # As on SQLite: the store's model is the model of the vectors it holds, recorded (and the
    # vector column typed and indexed) with the first vectors written, never by a read; a
    # store holding none takes any model.
    @staticmethod
    def _vector_model(cur: psycopg.Cursor[Any]) -> str | None:
        row = cur.execute("SELECT value FROM meta WHERE key = 'embedder' AND "
                          "EXISTS (SELECT 1 FROM entries WHERE vec IS NOT NULL)").fetchone()
        return None if row is None else str(row[0])

    def recorded_embedder(self) -> str | None:
        with self._read() as cur:
            self.embedder_name = self._vector_model(cur)
        return self.embedder_name

    def bind_embedder(self, name: str, dim: int) -> None:
        """Embed with `name` from now on: refused (`ModelMismatchError`) when the store holds
        vectors of another model. Nothing is written; the first write of vectors records it."""
        stored = self.recorded_embedder()
        if stored is not None and stored != name:
            raise ModelMismatchError(_mismatch(self.location, stored, name))
        self._binding = (name, int(dim))
        self._dim = int(dim)

    def _record_model(self, cur: psycopg.Cursor[Any], dim: int) -> str | None:
        """Inside a write of vectors of `dim` dimensions: check the bound model against the one
        the store's vectors come from (another process may have written since `bind_embedder`),
        or record it, typing (and indexing) the vector column, if the store holds none.
        Returns the model recorded (None: it already was)."""
        stored = self._vector_model(cur)
        name = self._binding[0] if self._binding is not None else None
        if stored is not None:
            if name is not None and stored != name:
                raise ModelMismatchError(_mismatch(self.location, stored, name))
            return None
        if self._binding is None:
            raise EngramError("vectors written before an embedding model was bound (bind_embedder)")
        if dim != self._binding[1]:
            raise EngramError(f"vectors of {dim} dimensions, but {name!r} makes {self._binding[1]}")
        typed = cur.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        cur.execute("INSERT INTO meta (key, value) VALUES ('embedder', %s), ('dim', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (name, str(dim)))
        if typed is None or typed[0] != str(dim):  # untyped, or typed for another model's (deleted) vectors
            cur.execute(f"DROP INDEX IF EXISTS {VECTOR_INDEX}")
            cur.execute(vector_ddl(dim))
        if not self._defer_index:
            cur.execute(VECTOR_INDEX_DDL)
        return name

    # -- writes --------------------------------------------------------------------------
    def classify(self, entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[Entry]]:
        """Split normalised entries into (new, unchanged ids, changed), as the SQLite store does."""
        stored: dict[tuple[str, str], str] = {}
        with self._read() as cur:
            for namespace, ids in ids_by_namespace(entries).items():
                for entry_id, data in cur.execute("SELECT id, data FROM entries WHERE namespace = %s AND id = ANY(%s)",
                                                  (namespace, ids)):
                    stored[(namespace, entry_id)] = data
        return split_by_stored(entries, stored)

    def upsert(self, namespace: str, entries: Sequence[Entry], vectors: np.ndarray | None,
               terms: Sequence[EntryTerms], replace: Sequence[str] = (), scope: Filters | None = None,
               keep: set[str] | None = None, actor: str | None = None, log: bool = True,
               expect: Mapping[str, Entry] | None = None,
               places: Mapping[str, int] | None = None, unique_turns: bool = False) -> tuple[int, int]:
        """Insert entries (vectors, analysed terms) in ONE transaction; see `SQLiteStore.upsert`
        (writers hold the store's advisory lock, so what `delete_rows` reads is current)."""
        check_batch(namespace, entries, vectors, terms)
        if vectors is not None and self._dim is not None:
            for i, vec in enumerate(vectors):
                if np.shape(vec) != (self._dim,):
                    raise EngramError(f"vector {i} has shape {np.shape(vec)}, expected ({self._dim},)")
        now = utc_now()
        removed = 0
        recorded = None
        with self._write() as cur:
            if vectors is not None and len(entries):
                recorded = self._record_model(cur, int(np.shape(vectors[0])[0]))
            stale: list[str] = []
            if scope is not None:
                where, params = where_clause(namespace, scope)
                stale = [i for (i,) in cur.execute(f"SELECT e.id FROM entries e WHERE {where}", params)
                         if i not in (keep or set())]
            doomed: list[tuple[Any, ...]] = []  # what the deleted rows' places are (inherited_places)
            if stale:
                gone = delete_rows(cur, namespace, stale, doomed)
                removed = len(gone)
                for entry_id, old in gone.items():
                    log_event(cur, namespace, entry_id, "DELETE", old, None, actor, now)
            replaced = delete_rows(cur, namespace, list(replace), doomed) if replace else {}
            check_expected(expect, replaced, decode_entry)
            if unique_turns:  # one query per session, after this write's own deletes
                for session, turn_ids in turn_ids_by_session(entries).items():
                    check_turn_ids(session, turn_ids, cur.execute(
                        "SELECT id, turn_id FROM entries WHERE namespace = %s AND session_id = %s AND kind = 'turn' "
                        "AND turn_id IS NOT NULL", (namespace, session)).fetchall())
            order = inherited_places(entries, doomed, places)
            written = insert_rows(cur, namespace, entries, vectors, terms, replaced, actor, now, log, order)
            for entry_id, old in replaced.items():
                log_event(cur, namespace, entry_id, "DELETE", old, None, actor, now)
            cur.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'write_seq'")
        if recorded is not None:
            self.embedder_name = recorded
        return written, removed

    def delete(self, namespace: str, ids: Sequence[str] | None = None, filters: Filters | None = None,
               actor: str | None = None, missing_ok: bool = False) -> int:
        """Delete the entries of `namespace` with one of `ids` (if given) matching `filters`;
        an id the namespace does not hold raises `NotFoundError` and nothing is deleted."""
        with self._write() as cur:
            where, params = where_clause(namespace, filters or Filters())
            sql = f"SELECT e.id FROM entries e WHERE {where}"
            if ids is None:
                targets = [r for (r,) in cur.execute(sql, params)]
            else:
                ids = list(dict.fromkeys(ids))
                present = {r for (r,) in cur.execute("SELECT id FROM entries WHERE namespace = %s AND id = ANY(%s)",
                                                     (namespace, ids))}
                targets = [r for (r,) in cur.execute(f"{sql} AND e.id = ANY(%s)", [*params, ids])]
                missing = [i for i in ids if i not in present]
                if missing and not missing_ok:
                    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                    raise NotFoundError(f"not found in namespace {namespace!r}: {shown}")
            gone = delete_rows(cur, namespace, targets)
            now = utc_now()
            for entry_id, old in gone.items():
                log_event(cur, namespace, entry_id, "DELETE", old, None, actor, now)
            return len(gone)

    # -- reads ---------------------------------------------------------------------------
    def get(self, namespace: str, ids: Sequence[str]) -> list[Entry]:
        with self._read() as cur:
            found = {i: decode_entry(d) for i, d in cur.execute(
                "SELECT id, data FROM entries WHERE namespace = %s AND id = ANY(%s)", (namespace, list(ids)))}
        return [found[i] for i in ids if i in found]

    def stored_vectors(self, namespace: str, texts: dict[str, str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._read(binary=True) as cur:
            for entry_id, text, vec in cur.execute(
                    "SELECT id, text, vec FROM entries WHERE namespace = %s AND id = ANY(%s) "
                    "AND vec IS NOT NULL", (namespace, list(texts))):
                if texts.get(entry_id) == text:
                    out[entry_id] = _vector(vec)
        return out

    def history(self, namespace: str, entry_id: str) -> list[dict[str, Any]]:
        with self._read() as cur:
            rows = cur.execute("SELECT seq, event, at, actor, old, new FROM history WHERE namespace = %s "
                               "AND entry_id = %s ORDER BY seq", (namespace, entry_id)).fetchall()
        return [{"id": entry_id, "seq": int(seq), "event": event, "at": at, "actor": actor,
                 "old": json.loads(old) if old else None, "new": json.loads(new) if new else None}
                for seq, event, at, actor, old, new in rows]

    def _stream(self, sql: str, params: list[Any]) -> Iterator[tuple[Any, ...]]:
        """Rows of one long read in a snapshot of its own connection (an export stream)."""
        try:
            conn = connect(self.url, options=f"-c search_path={self._db.search_path}")
        except psycopg.Error as exc:
            raise map_pg_error(exc, self.location, self.url) from exc
        try:
            conn.isolation_level = IsolationLevel.REPEATABLE_READ
            conn.read_only = True
            with conn.transaction(), conn.cursor(name="engram_stream") as cur:
                cur.itersize = 1000
                cur.execute(sql, params)
                yield from cur
        except psycopg.Error as exc:  # raised while streaming: past the methods' own mapping
            raise map_pg_error(exc, self.location, self.url) from exc
        finally:
            conn.close()

    def iter_entries(self, namespace: str | None) -> Iterator[tuple[Entry, int]]:
        """Every entry in rowid order with its copy place, as `SQLiteStore.iter_entries`."""
        where, params = ("WHERE e.namespace = %s ", [namespace]) if namespace is not None else ("", [])
        for data, place in self._stream(f"SELECT e.data, {copy_place(where)} FROM entries e {where}ORDER BY e.rowid",
                                        [*params, *params]):
            yield decode_entry(data), int(place)

    def iter_history(self, namespace: str | None) -> Iterator[dict[str, Any]]:
        where, params = ("WHERE namespace = %s ", [namespace]) if namespace is not None else ("", [])
        for ns, entry_id, event, at, actor, old, new in self._stream(
                f"SELECT namespace, entry_id, event, at, actor, old, new FROM history {where}ORDER BY seq", params):
            yield {"namespace": ns, "id": entry_id, "event": event, "at": at, "actor": actor,
                   "old": json.loads(old) if old else None, "new": json.loads(new) if new else None}

    def restore_history(self, events: Sequence[dict[str, Any]]) -> int:
        """Append exported events in one transaction, skipping any already logged."""
        added = 0
        with self._write() as cur:
            for e in events:
                old = json.dumps(e["old"], ensure_ascii=False) if e["old"] is not None else None
                new = json.dumps(e["new"], ensure_ascii=False) if e["new"] is not None else None
                if cur.execute("SELECT 1 FROM history WHERE namespace = %s AND entry_id = %s AND event = %s AND at = %s "
                               "AND old IS NOT DISTINCT FROM %s AND new IS NOT DISTINCT FROM %s",
                               (e["namespace"], e["id"], e["event"], e["at"], old, new)).fetchone():
                    continue
                log_event(cur, e["namespace"], e["id"], e["event"], old, new, e["actor"], e["at"])
                added += 1
        return added

    def expired_ids(self, namespace: str | None, at: float) -> list[tuple[str, str]]:
        where, params = ("namespace = %s AND ", [namespace]) if namespace is not None else ("", [])
        with self._read() as cur:
            return [(ns, i) for ns, i in cur.execute(
                f"SELECT namespace, id FROM entries WHERE {where}expires_at IS NOT NULL AND expires_at <= %s "
                "ORDER BY rowid", [*params, at])]

    def fetch(self, rowids: Sequence[int]) -> dict[int, Entry]:
        with self._read() as cur:
            return {int(r): decode_entry(d) for r, d in cur.execute(
                "SELECT rowid, data FROM entries WHERE rowid = ANY(%s)", ([int(r) for r in rowids],))}

    def ids(self, namespace: str | None, filters: Filters) -> list[str]:
        where, params = where_clause(namespace, filters)
        with self._read() as cur:
            return [r for (r,) in cur.execute(f"SELECT e.id FROM entries e WHERE {where} ORDER BY {PLACE}", params)]

    def count(self, namespace: str | None = None, filters: Filters | None = None) -> int:
        where, params = where_clause(namespace, filters or Filters())
        with self._read() as cur:
            return int(scalar(cur.execute(f"SELECT count(*) FROM entries e WHERE {where}", params)))

    # -- channels (BM25 from the database's statistics and the postings cache: `bm25`) ---
    def lexical(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """BM25 over analysed text and tags among the rows the filters admit."""
        if not terms or k <= 0:
            return []
        where, params = where_clause(namespace, filters)
        with self._read() as cur:
            return bm25.lexical(cur, self._postings, terms, k, namespace, where, params)

    def idf_mass(self, terms: Sequence[str]) -> float:
        """The summed idf of the distinct analysed `terms`, from the database's statistics."""
        with self._read() as cur:
            return bm25.query_idf_mass(cur, terms)

    def term_coverage(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, int]:
        distinct = list(dict.fromkeys(terms))
        counts: dict[int, int] = {}
        if distinct and rowids:
            with self._read() as cur:
                counts = {int(r): int(n) for r, n in cur.execute(
                    "SELECT rowid, count(*) FROM postings WHERE rowid = ANY(%s) AND term = ANY(%s) GROUP BY rowid",
                    ([int(r) for r in rowids], distinct))}
        return {int(r): counts.get(int(r), 0) for r in rowids}

    def semantic(self, vector: np.ndarray, k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """Cosine top-k among the rows the filters admit: an exact scan when at most
        `EXACT_MAX` rows are admitted (a selective filter loses nothing), else the HNSW index
        with pgvector's iterative scan (and the exact scan if that still finds too few).
        Candidates are re-scored in float32 as the SQLite store scores them."""
        if self._dim is None or k <= 0:
            return []
        query = np.ascontiguousarray(vector, dtype=np.float32)
        where, params = where_clause(namespace, filters)
        where += " AND e.vec IS NOT NULL"
        q = query.tolist()
        fetch = k * RESCORE_FACTOR
        with self._read(binary=True) as cur:
            stored = self._vector_model(cur)
            if stored is None:
                return []
            if self._binding is not None and stored != self._binding[0]:
                raise ModelMismatchError(_mismatch(self.location, stored, self._binding[0]))
            # Whether few enough rows are admitted for an exact scan: the namespace's row
            # count bounds it (kept by every write); only a filter beyond the lifecycle view
            # can make a large namespace's admitted rows few, and then they are counted.
            if namespace is None:
                admitted = self._rows()
            else:
                row = cur.execute("SELECT rows FROM namespace_rows WHERE namespace = %s", (namespace,)).fetchone()
                admitted = int(row[0]) if row else 0
            if admitted > EXACT_MAX and not filters.matching_only().is_empty():
                admitted = int(scalar(cur.execute(f"SELECT count(*) FROM (SELECT 1 FROM entries e WHERE {where} LIMIT %s) s",
                                           [*params, EXACT_MAX + 1])))
            rows = None
            if admitted > EXACT_MAX and self._has_vector_index(cur):
                cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                            "set_config('hnsw.ef_search', %s, true)", (str(min(1000, max(40, fetch))),))
                rows = cur.execute(
                    f"SELECT rowid, vec FROM (SELECT e.rowid, e.vec, e.vec <=> %s::real[]::vector AS d "
                    f"FROM entries e WHERE {where} ORDER BY d LIMIT %s) s", [q, *params, fetch]).fetchall()
                if len(rows) < min(fetch, admitted):
                    rows = None
            if rows is None:  # exact: "+ 0" keeps the planner off the (approximate) index
                rows = cur.execute(
                    f"SELECT e.rowid, e.vec FROM entries e WHERE {where} "
                    "ORDER BY (e.vec <=> %s::real[]::vector) + 0, e.rowid LIMIT %s", [*params, q, fetch]).fetchall()
        if not rows:
            return []
        rows.sort(key=lambda r: r[0])
        rowids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.stack([_vector(r[1]) for r in rows])
        scores = np.einsum("ij,j->i", matrix, query)
        order = np.lexsort((rowids, -scores))[:k]
        return [(int(rowids[i]), float(scores[i])) for i in order]

    def symbolic(self, query: str, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters, names: Sequence[tuple[str, str]] | None = None) -> list[tuple[int, float]]:
        """Entries tagged with the names the query mentions, most names first (`channels`)."""
        if names is None:
            names = self._names.match(namespace, query)
        if not names:
            return []
        where, params = where_clause(namespace, filters)
        with self._read() as cur:
            return bm25.symbolic(cur, self._postings, names, terms, k, namespace, where, params)

    def match_names(self, namespace: str | None, text: str) -> list[tuple[str, str]]:
        return self._names.match(namespace, text)

    def _name_rows(self, namespace: str | None) -> Iterable[tuple[str, str]]:
        sql = "SELECT DISTINCT t.field, t.value FROM tags t JOIN entries e ON e.rowid = t.rowid WHERE t.field = ANY(%s)"
        params: list[Any] = [list(NAME_FIELDS)]
        if namespace is not None:
            sql += " AND e.namespace = %s"
            params.append(namespace)
        with self._read() as cur:
            return cur.execute(sql, params).fetchall()

    def turn_neighbours(self, rowids: Sequence[int], span: int, namespace: str | None,
                        filters: Filters) -> dict[int, list[tuple[int, int]]]:
        where, params = where_clause(namespace, filters)
        out: dict[int, list[tuple[int, int]]] = {}
        if not rowids:
            return out
        with self._read() as cur:
            sessions = cur.execute(f"SELECT e.rowid, e.session_id, {PLACE} FROM entries e WHERE e.rowid = ANY(%s) "
                                   "AND e.kind = 'turn' AND e.session_id IS NOT NULL", ([int(r) for r in rowids],)).fetchall()
            for rowid, session, place in sessions:
                found: list[tuple[int, int]] = []
                for op, order, sign in (("<", "DESC", -1), (">", "ASC", 1)):
                    found += [(sign * n, int(r)) for n, (r,) in enumerate(cur.execute(
                        f"SELECT e.rowid FROM entries e WHERE {where} AND e.session_id = %s AND e.kind = 'turn' "
                        f"AND {PLACE} {op} %s ORDER BY {PLACE} {order} LIMIT %s", [*params, session, place, span]), start=1)]
                out[int(rowid)] = found
        return out

    def vectors_of(self, rowids: Sequence[int]) -> np.ndarray:
        if self._dim is None:
            return np.zeros((len(rowids), 1), dtype=np.float32)
        out = np.zeros((len(rowids), self._dim), dtype=np.float32)
        if not rowids:
            return out
        with self._read(binary=True) as cur:
            found = {int(r): _vector(v) for r, v in cur.execute(
                "SELECT rowid, vec FROM entries WHERE rowid = ANY(%s) AND vec IS NOT NULL",
                ([int(r) for r in rowids],))}
        for i, rowid in enumerate(rowids):
            if int(rowid) in found:
                out[i] = found[int(rowid)]
        return out

    def temporal(self, start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters) -> list[tuple[int, float]]:
        """Entries whose time overlaps ``[start, end)``, most overlap first (`channels`)."""
        where, params = where_clause(namespace, filters)
        with self._read() as cur:
            return bm25.temporal(cur, self._postings, start, end, terms, k, namespace, where,
                                 params)

    def dated(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """Entries that state a period, by BM25 of the query among them (`channels`)."""
        if not terms:
            return []
        where, params = where_clause(namespace, filters)
        with self._read() as cur:
            return bm25.dated(cur, self._postings, terms, k, namespace, where, params)

    def newest_timestamp(self, namespace: str | None) -> str | None:
        """The namespace's latest time (`newest`)."""
        with self._read() as cur:
            def value(sql: str, params: list[Any]) -> Any:
                row = cur.execute(sql, params).fetchone()
                return None if row is None else row[0]

            return self._newest.get(namespace, self._seqs(), value)

    def substring(self, patterns: Sequence[str], k: int, namespace: str | None,
                  filters: Filters) -> list[tuple[int, float]]:
        """Rows whose ASCII-lower-cased text contains the patterns, most matched first, then the
        newest. A trigram-indexed ILIKE finds candidates (a superset), ``strpos`` decides."""
        if not patterns:
            return []
        where, params = where_clause(namespace, filters)
        folded = f"translate(e.text, '{_UPPER}', '{_LOWER}')"
        matched = " + ".join(f"(strpos({folded}, %s) > 0)::int" for _ in patterns)
        scope = " OR ".join("e.text ILIKE %s" for _ in patterns)
        with self._read() as cur:
            rows = cur.execute(
                f"SELECT rowid, n FROM (SELECT e.rowid, {matched} AS n FROM entries e WHERE ({scope}) AND {where}) s "
                "WHERE n > 0 ORDER BY n DESC, rowid DESC LIMIT %s",
                [*patterns, *[_like_escape(p) for p in patterns], *params, k]).fetchall()
        return [(int(rowid), float(n)) for rowid, n in rows]

    # -- admin (`listing`) ---------------------------------------------------------------
    def page(self, namespace: str, filters: Filters, *, newest_first: bool, limit: int,
             after: int | None = None) -> tuple[list[Entry], int | None]:
        """A keyset page of entries in insertion order or its reverse."""
        with self._read() as cur:
            return listing.page(cur, namespace, filters, newest_first=newest_first, limit=limit, after=after)

    def namespaces(self) -> dict[str, dict[str, int]]:
        with self._read() as cur:
            return listing.namespaces(cur)

    def stats(self) -> dict[str, Any]:
        with self._read() as cur:
            return listing.stats(cur, self.location)

    def timeline(self, namespace: str, filters: Filters, field: str,
                 bucket: str) -> tuple[list[tuple[str, int]], int, str | None, str | None]:
        """Entry counts per UTC bucket (day, week from Monday, month, year), as on SQLite."""
        with self._read() as cur:
            return listing.timeline(cur, namespace, filters, field, bucket)

    def sessions(self, namespace: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
        with self._read() as cur:
            return listing.sessions(cur, namespace, filters, limit)

    def close(self) -> None:
        self._db.close()


def _mismatch(location: str, stored: str, wanted: str) -> str:
    return (f"store {location} holds vectors from {stored!r}; it cannot be searched or extended with {wanted!r}. "
            "Open it with that embedder, or re-import into a new store.")
