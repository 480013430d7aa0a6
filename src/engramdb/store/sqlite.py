"""The embedded default store: one SQLite file (WAL) with entries, analysed terms, vectors and tags.

Terms and vectors are mirrored in RAM by `LexicalIndex` and `VectorIndex` for fast, exactly
prefiltered search (docs/DESIGN.md; their upkeep is `mirrors.Mirrors`). We use `apsw` rather
than the standard `sqlite3` module: it ships a recent SQLite, and the standard module here
cannot load extensions. The file's connections and transactions are `sqlite_db.SQLiteFile`;
the time, substring and listing queries are parts built on it (`timeline`, `substring`,
`listing`); what the channels' scores mean is `channels`, shared with every backend.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ContextManager, Iterable, Iterator, Mapping, Sequence

import apsw
import numpy as np

from ..errors import EngramError, ModelMismatchError, NotFoundError
from ..model import Entry, timestamp_epoch, utc_now
from .base import EntryTerms, Filters, check_expected
from .batches import (PLACE, PLACE_COLUMNS, check_batch, check_turn_ids, copy_place, ids_by_namespace, inherited_places,
                      split_by_stored, turn_ids_by_session)
from .channels import NAME_FIELDS, name_tags, rank_symbolic
from .connection import BUSY_TIMEOUT_MS, map_driver_error, scalar, translate_driver_errors
from .gazetteer import Gazetteer
from .listing import Listing
from .mirrors import CACHE_LOCK_MS, Mirrors
from .sql_filters import where_clause
from .sqlite_db import SQLiteFile, decode_entry
from .substring import SubstringChannel
from .timeline import TimeChannels

__all__ = ["CACHE_LOCK_MS", "SQLiteStore"]


@translate_driver_errors
class SQLiteStore:
    """`Store` on one SQLite file. Thread-safe: concurrent readers, one writer at a time.

    Safe across processes too: writers start with ``BEGIN IMMEDIATE`` (docs/RELIABILITY.md).
    ``read_only`` opens the file without ever writing to it (a file this process may not
    write, or a reader that must not change it); writes then raise `ReadOnlyStoreError`.
    """

    def __init__(self, path: str | Path, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self._db = SQLiteFile(path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
        self.path = self.location = self._db.path
        self.busy_timeout_ms = busy_timeout_ms
        self._binding: tuple[str, int] | None = None  # the model this process embeds with (bind_embedder)
        self.embedder_name = self._vector_model(self._db.writer)
        self._mirrors = Mirrors(self._db)
        self._time = TimeChannels(self._db, self._mirrors)
        self._substring = SubstringChannel(self._db)
        self._listing = Listing(self._db)
        self._names = Gazetteer(lambda: self._db.seqs()[0], self._name_rows)
        self._closed = False

    # -- the file's parts (private: for this backend's own modules and tests) --------------
    @property
    def read_only(self) -> bool:
        return self._db.read_only

    @property
    def _writer(self) -> apsw.Connection:
        return self._db.writer

    @property
    def _write_lock(self) -> Any:
        return self._db.write_lock

    @property
    def _lexical(self) -> Any:
        return self._mirrors.lexical_index

    @property
    def _vectors(self) -> Any:
        return self._mirrors.vector_index

    def _reader(self) -> apsw.Connection:
        return self._db.reader()

    def _transaction(self, timeout_ms: int | None = None) -> Any:
        return self._db.transaction(timeout_ms)

    def _meta(self, key: str, conn: apsw.Connection | None = None) -> str | None:
        return self._db.meta(key, conn)

    def _seqs(self, conn: apsw.Connection | None = None) -> tuple[int, int]:
        return self._db.seqs(conn)

    # -- model binding -------------------------------------------------------------------
    # A store's model is the model of the vectors it holds: recorded with the first vectors
    # written (in their transaction), never by a read. A store holding no vectors (new, emptied,
    # or one an older version bound by a search) takes any model.
    def _vector_model(self, conn: apsw.Connection) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder' AND EXISTS (SELECT 1 FROM vectors)").fetchone()
        return None if row is None else str(row[0])

    def recorded_embedder(self) -> str | None:
        """The model of the store's vectors now (another process may have written some since
        open); None while it holds none."""
        self.embedder_name = self._vector_model(self._reader())
        return self.embedder_name

    def bind_embedder(self, name: str, dim: int) -> None:
        """Embed with `name` from now on: refused (`ModelMismatchError`) when the store holds
        vectors of another model. Nothing is written; the first write of vectors records it."""
        stored = self.recorded_embedder()
        if stored is not None and stored != name:
            raise ModelMismatchError(_mismatch(self.path, stored, name))
        self._binding = (name, int(dim))
        self._mirrors.bind_dim(int(dim))

    def _record_model(self, conn: apsw.Connection, dim: int) -> str | None:
        """Inside a write of vectors of `dim` dimensions: check the bound model against the one
        the store's vectors come from (another process may have written since `bind_embedder`),
        or record it if the store holds none. Returns the model recorded (None: already was)."""
        stored = self._vector_model(conn)
        name = self._binding[0] if self._binding is not None else None
        if stored is not None:
            if name is not None and stored != name:
                raise ModelMismatchError(_mismatch(self.path, stored, name))
            return None
        if self._binding is None:
            raise EngramError("vectors written before an embedding model was bound (bind_embedder)")
        if dim != self._binding[1]:
            raise EngramError(f"vectors of {dim} dimensions, but {name!r} makes {self._binding[1]}")
        if conn.execute("SELECT 1 FROM meta WHERE key = 'embedder'").fetchone() is not None:
            conn.execute("DELETE FROM ann_snapshot")  # a graph of another model's (deleted) vectors
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedder', ?), ('dim', ?)", (name, str(dim)))
        return name

    # -- writes --------------------------------------------------------------------------
    def classify(self, entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[Entry]]:
        """Split normalised entries into (new, unchanged ids, changed) by their stored form
        in their own namespace (an id of another namespace is a different entry)."""
        conn = self._reader()
        stored: dict[tuple[str, str], str] = {}
        for namespace, ids in ids_by_namespace(entries).items():
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for entry_id, data in conn.execute(
                        f"SELECT id, data FROM entries WHERE namespace = ? AND id IN ({marks})", [namespace, *chunk]):
                    stored[(namespace, entry_id)] = data
        return split_by_stored(entries, stored)

    def upsert(self, namespace: str, entries: Sequence[Entry], vectors: np.ndarray | None,
               terms: Sequence[EntryTerms], replace: Sequence[str] = (), scope: Filters | None = None,
               keep: set[str] | None = None, actor: str | None = None, log: bool = True,
               expect: Mapping[str, Entry] | None = None,
               places: Mapping[str, int] | None = None, unique_turns: bool = False) -> tuple[int, int]:
        """Insert normalised entries of `namespace` (and their vectors and analysed terms, same
        order) in ONE transaction.

        `expect` (id -> the entry as read) makes it a compare-and-swap: each of those ids must
        be in `replace` and still stored as read, or nothing is written (`WriteConflictError`).

        `replace` lists ids of that namespace to delete first (entries whose fields changed).
        With `scope`, entries matching it whose id is not in `keep` are deleted too (the
        chunks a changed file no longer has), found inside the transaction. Any error rolls
        the whole batch back, leaving the store exactly as before. Returns how many entries
        were written (an entry another writer stored meanwhile is skipped, not counted) and
        how many `scope` removed. Each change is logged in `history` (ADD, UPDATE for a replaced id
        written again, DELETE), with `actor`, in the same transaction; ``log=False`` is for
        restoring an export, whose own history is restored instead. `places` (id -> place) are
        the session places of a copy (`iter_entries`); else a row that replaces another takes
        its place. With `unique_turns` (conversation writes) a turn whose session and turn id
        another stored turn holds, once the batch's own deletes are done, rolls the batch back
        with `WriteConflictError` (`batches.check_turn_ids`): a turn id names one turn.
        """
        check_batch(namespace, entries, vectors, terms)
        now = utc_now()
        removed = written = 0
        recorded = None
        with self._write_lock, self._transaction():
            conn = self._writer
            if vectors is not None and len(entries):
                recorded = self._record_model(conn, int(np.shape(vectors[0])[0]))
            stale: list[str] = []
            if scope is not None:
                where, params = where_clause(namespace, scope)
                stale = [i for (i,) in conn.execute(f"SELECT e.id FROM entries e WHERE {where}", params)
                         if i not in (keep or set())]
            doomed: list[tuple[Any, ...]] = []  # what the deleted rows' places are (inherited_places)
            if stale:
                gone = self._delete_ids(conn, namespace, stale, doomed)
                removed = len(gone)
                for entry_id, old in gone.items():
                    self._log(conn, namespace, entry_id, "DELETE", old, None, actor, now)
            replaced = self._delete_ids(conn, namespace, list(replace), doomed) if replace else {}
            check_expected(expect, replaced, decode_entry)
            if unique_turns:  # one query per session, after this write's own deletes
                for session, turn_ids in turn_ids_by_session(entries).items():
                    check_turn_ids(session, turn_ids, conn.execute(
                        "SELECT id, turn_id FROM entries WHERE namespace = ? AND session_id = ? AND kind = 'turn' "
                        "AND turn_id IS NOT NULL", (namespace, session)).fetchall())
            order = inherited_places(entries, doomed, places)
            for i, entry in enumerate(entries):
                entry.created_at = entry.created_at or now
                src = entry.source
                data = json.dumps(entry.to_dict(), ensure_ascii=False)
                # Another writer may have stored the same entry since `classify`: same id means
                # same content, so skipping it keeps the write idempotent instead of failing.
                conn.execute(
                    "INSERT INTO entries (id, namespace, kind, text, timestamp, ts, ts_end, location, topic, doc_id, path, "
                    "session_id, turn_id, speaker, data, created_at, expires_at, superseded_by, place) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(namespace, id) DO NOTHING",
                    (entry.id, entry.namespace, entry.kind, entry.text, entry.timestamp, timestamp_epoch(entry.timestamp),
                     timestamp_epoch(entry.timestamp_end),
                     entry.location, entry.topic, src.doc_id, src.path, src.session_id, src.turn_id, src.speaker,
                     data, entry.created_at,
                     timestamp_epoch(entry.expires_at), entry.superseded_by, order[i]),
                )
                if conn.changes() == 0:
                    continue
                written += 1
                rowid = conn.last_insert_rowid()
                old = replaced.pop(entry.id, None)  # type: ignore[arg-type]
                if log:
                    self._log(conn, namespace, entry.id, "ADD" if old is None else "UPDATE", old, data, actor, now)
                conn.executemany("INSERT OR IGNORE INTO tags(field, value, rowid) VALUES (?,?,?)",
                                 [(f, v, rowid) for f, v in name_tags(entry)])
                conn.execute("INSERT INTO lexicon(rowid, body, tags) VALUES (?,?,?)",
                             (rowid, " ".join(terms[i].body), " ".join(terms[i].tags)))
                if vectors is not None:
                    vec = np.ascontiguousarray(vectors[i], dtype=np.float32)
                    index = self._mirrors.vector_index
                    if index is not None and vec.shape != (index.dim,):
                        raise EngramError(f"vector {i} has shape {vec.shape}, expected ({index.dim},)")
                    conn.execute("INSERT INTO vectors(rowid, vec) VALUES (?, ?)", (rowid, vec.tobytes()))
            for entry_id, old in replaced.items():  # replaced but not written again (not expected)
                self._log(conn, namespace, entry_id, "DELETE", old, None, actor, now)
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'write_seq'")
        if recorded is not None:
            self.embedder_name = recorded
        return written, removed

    @staticmethod
    def _log(conn: apsw.Connection, namespace: str, entry_id: str | None, event: str, old: str | None,
             new: str | None, actor: str | None, at: str) -> None:
        conn.execute("INSERT INTO history(namespace, entry_id, event, at, actor, old, new) VALUES (?,?,?,?,?,?,?)",
                     (namespace, entry_id, event, at, actor, old, new))

    def _delete_ids(self, conn: apsw.Connection, namespace: str, ids: list[str],
                    places: list[tuple[Any, ...]] | None = None) -> dict[str, str]:
        """Delete the entries of `namespace` with these ids; returns id -> the deleted JSON, and
        appends each deleted row's `PLACE_COLUMNS` to `places` when given."""
        deleted: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT e.rowid, e.data, {PLACE_COLUMNS} FROM entries e WHERE e.namespace = ? AND e.id IN ({marks})",
                                [namespace, *chunk]).fetchall()
            for rowid, data, *place in rows:
                entry_id = place[0]
                if places is not None:
                    places.append(tuple(place))
                conn.execute("DELETE FROM lexicon WHERE rowid = ?", (rowid,))
                conn.execute("DELETE FROM tags WHERE rowid = ?", (rowid,))
                conn.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
                conn.execute("DELETE FROM entries WHERE rowid = ?", (rowid,))
                deleted[entry_id] = data
        if deleted:
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key IN ('write_seq', 'delete_seq')")
        return deleted

    def delete(self, namespace: str, ids: Sequence[str] | None = None, filters: Filters | None = None,
               actor: str | None = None, missing_ok: bool = False) -> int:
        """Delete the entries of `namespace` that have one of `ids` (if given) and match `filters`.
        An id the namespace does not hold raises `NotFoundError` and nothing is deleted."""
        with self._write_lock, self._transaction():
            where, params = where_clause(namespace, filters or Filters())
            sql = f"SELECT e.id FROM entries e WHERE {where}"
            if ids is None:
                targets = [r for (r,) in self._writer.execute(sql, params)]
            else:
                targets = []
                ids = list(dict.fromkeys(ids))
                present: set[str] = set()
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    present.update(r for (r,) in self._writer.execute(
                        f"SELECT id FROM entries WHERE namespace = ? AND id IN ({marks})", [namespace, *chunk]))
                    targets += [r for (r,) in self._writer.execute(f"{sql} AND e.id IN ({marks})", [*params, *chunk])]
                missing = [i for i in ids if i not in present]
                if missing and not missing_ok:
                    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
                    raise NotFoundError(f"not found in namespace {namespace!r}: {shown}")
            gone = self._delete_ids(self._writer, namespace, targets)
            now = utc_now()
            for entry_id, old in gone.items():
                self._log(self._writer, namespace, entry_id, "DELETE", old, None, actor, now)
            return len(gone)

    # -- reads ---------------------------------------------------------------------------
    def get(self, namespace: str, ids: Sequence[str]) -> list[Entry]:
        """Entries of `namespace` by id, in the order asked; ids it does not hold are skipped."""
        conn = self._reader()
        found: dict[str, Entry] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for entry_id, data in conn.execute(
                    f"SELECT id, data FROM entries WHERE namespace = ? AND id IN ({marks})", [namespace, *chunk]):
                found[entry_id] = decode_entry(data)
        return [found[i] for i in ids if i in found]

    def stored_vectors(self, namespace: str, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """The stored vectors of entries (id -> text) whose stored text is that text, so a
        change that keeps the text (metadata, expiry, a supersede link) is not embedded again."""
        out: dict[str, np.ndarray] = {}
        ids = list(texts)
        conn = self._reader()
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for entry_id, text, blob in conn.execute(
                    f"SELECT e.id, e.text, v.vec FROM entries e JOIN vectors v ON v.rowid = e.rowid "
                    f"WHERE e.namespace = ? AND e.id IN ({marks})", [namespace, *chunk]):
                if texts.get(entry_id) == text:
                    out[entry_id] = np.frombuffer(blob, dtype=np.float32)
        return out

    def history(self, namespace: str, entry_id: str) -> list[dict[str, Any]]:
        """The logged events of an entry, oldest first (also after it was deleted)."""
        rows: list[tuple[Any, ...]] = self._reader().execute(
            "SELECT seq, event, at, actor, old, new FROM history WHERE namespace = ? AND entry_id = ? ORDER BY seq",
            (namespace, entry_id)).fetchall()
        return [{"id": entry_id, "seq": seq, "event": event, "at": at, "actor": actor,
                 "old": json.loads(old) if old else None, "new": json.loads(new) if new else None}
                for seq, event, at, actor, old, new in rows]

    def iter_entries(self, namespace: str | None) -> Iterator[tuple[Entry, int]]:
        """Every entry of `namespace` (None: all) in rowid order, with its copy place (see
        `Store.iter_entries`), streamed from one snapshot."""
        where, params = ("WHERE e.namespace = ? ", [namespace]) if namespace is not None else ("", [])
        conn = self._db.snapshot()
        try:
            conn.execute("BEGIN")  # one snapshot for the whole stream, whatever others write
            for data, place in conn.execute(f"SELECT e.data, {copy_place(where)} FROM entries e {where}"
                                            "ORDER BY e.rowid", [*params, *params]):
                yield decode_entry(data), int(place)
        except apsw.Error as exc:  # raised while streaming: past the method's own mapping
            raise map_driver_error(exc, self.path) from exc
        finally:
            conn.close()

    def iter_history(self, namespace: str | None) -> Iterator[dict[str, Any]]:
        """Every logged event of `namespace` (None: all), oldest first, streamed."""
        where, params = ("WHERE namespace = ? ", [namespace]) if namespace is not None else ("", [])
        conn = self._db.snapshot()
        try:
            conn.execute("BEGIN")
            for ns, entry_id, event, at, actor, old, new in conn.execute(
                    f"SELECT namespace, entry_id, event, at, actor, old, new FROM history {where}ORDER BY seq", params):
                yield {"namespace": ns, "id": entry_id, "event": event, "at": at, "actor": actor,
                       "old": json.loads(old) if old else None, "new": json.loads(new) if new else None}
        except apsw.Error as exc:  # raised while streaming: past the method's own mapping
            raise map_driver_error(exc, self.path) from exc
        finally:
            conn.close()

    def restore_history(self, events: Sequence[dict[str, Any]]) -> int:
        """Append exported events (namespace, id, event, at, actor, old, new) in one
        transaction, skipping any already logged (so importing a dump twice adds nothing)."""
        added = 0
        with self._write_lock, self._transaction():
            conn = self._writer
            for e in events:
                old = json.dumps(e["old"], ensure_ascii=False) if e["old"] is not None else None
                new = json.dumps(e["new"], ensure_ascii=False) if e["new"] is not None else None
                if conn.execute("SELECT 1 FROM history WHERE namespace = ? AND entry_id = ? AND event = ? AND at = ? "
                                "AND old IS ? AND new IS ?", (e["namespace"], e["id"], e["event"], e["at"], old, new)
                                ).fetchone():
                    continue
                self._log(conn, e["namespace"], e["id"], e["event"], old, new, e["actor"], e["at"])
                added += 1
        return added

    def expired_ids(self, namespace: str | None, at: float) -> list[tuple[str, str]]:
        """(namespace, id) of the entries whose expiry is at or before `at`."""
        where, params = ("namespace = ? AND ", [namespace]) if namespace is not None else ("", [])
        return [(ns, i) for ns, i in self._reader().execute(
            f"SELECT namespace, id FROM entries WHERE {where}expires_at IS NOT NULL AND expires_at <= ?", [*params, at])]

    def fetch(self, rowids: Sequence[int]) -> dict[int, Entry]:
        conn = self._reader()
        out: dict[int, Entry] = {}
        rowids = list(rowids)
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for rowid, data in conn.execute(f"SELECT rowid, data FROM entries WHERE rowid IN ({marks})", chunk):
                out[rowid] = decode_entry(data)
        return out

    def ids(self, namespace: str | None, filters: Filters) -> list[str]:
        where, params = where_clause(namespace, filters)
        return [r for (r,) in self._reader().execute(f"SELECT e.id FROM entries e WHERE {where} ORDER BY {PLACE}", params)]

    def count(self, namespace: str | None = None, filters: Filters | None = None) -> int:
        where, params = where_clause(namespace, filters or Filters())
        return int(scalar(self._reader().execute(f"SELECT count(*) FROM entries e WHERE {where}", params)))

    # -- filters -------------------------------------------------------------------------
    _where = staticmethod(where_clause)

    # -- channels ------------------------------------------------------------------------
    def lexical(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """BM25 over analysed text and tags; filters admit rows before the top-k is cut."""
        if not terms:
            return []
        index = self._mirrors.lexical()
        with index.lock.read():
            return index.search(list(terms), k, self._mirrors.mask(index.rows, namespace, filters))

    def idf_mass(self, terms: Sequence[str]) -> float:
        """The summed idf of the distinct analysed `terms` (0 for an empty store)."""
        index = self._mirrors.lexical()
        with index.lock.read():
            return index.idf_mass(list(terms))

    def term_coverage(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, int]:
        """For each row, how many of the distinct analysed `terms` its text or tags contain."""
        index = self._mirrors.lexical()
        with index.lock.read():
            return index.coverage(list(terms), list(rowids))

    def semantic(self, vector: np.ndarray, k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """Cosine top-k; filters admit rows before the top-k is cut (exactly, or by oversampling HNSW).
        A store whose vectors another process made with another model since `bind_embedder`
        raises `ModelMismatchError`."""
        stored = self._vector_model(self._reader())
        if stored is None:
            return []
        if self._binding is not None and stored != self._binding[0]:
            raise ModelMismatchError(_mismatch(self.path, stored, self._binding[0]))
        index = self._mirrors.vectors()
        if index is None:
            return []
        with index.lock.read():
            mask = self._mirrors.mask(index.rows, namespace, filters)
            return index.search(np.asarray(vector, dtype=np.float32), k, mask)

    def symbolic(self, query: str, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters, names: Sequence[tuple[str, str]] | None = None) -> list[tuple[int, float]]:
        """Entries tagged with people/entities/places the query names, most names first.

        Ties are broken by BM25 of the query inside that set, then by the most recently added.
        Tag lookups are index range scans; filters use the same admit-mask as the lexical channel.
        """
        if names is None:  # no plan: the names the query mentions
            names = self._names.match(namespace, query)
        if not names:
            return []
        conn = self._reader()
        counts: Counter[int] = Counter()
        for field_name, value in names:
            counts.update(r for (r,) in conn.execute("SELECT rowid FROM tags WHERE field = ? AND value = ?",
                                                      (field_name, value)))
        index = self._mirrors.lexical()
        with index.lock.read():
            mask = self._mirrors.mask(index.rows, namespace, filters)
            pos = index.rows.pos
            rowids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
            n = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            positions = np.fromiter((pos.get(r, -1) for r in counts), dtype=np.int64, count=len(counts))
            keep = positions >= 0
            if mask is not None:
                keep &= mask[np.where(keep, positions, 0)]
            rowids, n, positions = rowids[keep], n[keep], positions[keep]
            if len(rowids) == 0:
                return []
            lexical = index.score_positions(list(terms), positions) if terms else np.zeros(len(rowids))
        return rank_symbolic(rowids, n, lexical, k)

    def match_names(self, namespace: str | None, text: str) -> list[tuple[str, str]]:
        """The (field, name) tags of `namespace` that occur in `text` (the planner's gazetteer)."""
        return self._names.match(namespace, text)

    def _name_rows(self, namespace: str | None) -> Iterable[tuple[str, str]]:
        """The distinct name tags of `namespace` (None: all), for the gazetteer."""
        sql = ("SELECT DISTINCT t.field, t.value FROM tags t JOIN entries e ON e.rowid = t.rowid "
               f"WHERE t.field IN ({','.join('?' * len(NAME_FIELDS))})")
        params: list[str] = list(NAME_FIELDS)
        if namespace is not None:
            sql += " AND e.namespace = ?"
            params.append(namespace)
        names: list[tuple[str, str]] = self._reader().execute(sql, params).fetchall()  # type: ignore[assignment]
        return names

    def turn_neighbours(self, rowids: Sequence[int], span: int, namespace: str | None,
                        filters: Filters) -> dict[int, list[tuple[int, int]]]:
        """For each of `rowids` that is a conversation turn, the `span` turns just before and
        just after it in its session's order, as (offset, rowid): ``-1, -2, …`` then ``+1, +2, …``,
        among the rows `filters` admit in `namespace`. Index range scans on (namespace, session_id)."""
        conn = self._reader()
        where, params = where_clause(namespace, filters)
        out: dict[int, list[tuple[int, int]]] = {}
        marks = ",".join("?" * len(rowids))
        sessions: list[tuple[Any, ...]] = conn.execute(f"SELECT e.rowid, e.session_id, {PLACE} FROM entries e WHERE e.rowid IN ({marks}) AND e.kind = 'turn' "
                                "AND e.session_id IS NOT NULL", list(rowids)).fetchall() if rowids else []
        for rowid, session, place in sessions:
            found: list[tuple[int, int]] = []
            for op, order, sign in (("<", "DESC", -1), (">", "ASC", 1)):
                found += [(sign * n, r) for n, (r,) in enumerate(conn.execute(
                    f"SELECT e.rowid FROM entries e WHERE {where} AND e.session_id = ? AND e.kind = 'turn' "
                    f"AND {PLACE} {op} ? ORDER BY {PLACE} {order} LIMIT ?", [*params, session, place, span]), start=1)]
            out[rowid] = found
        return out

    def vectors_of(self, rowids: Sequence[int]) -> np.ndarray:
        """Stored vectors of `rowids` (zeros where a row has none), for diversity in selection."""
        index = self._mirrors.vectors()
        if index is None:
            return np.zeros((len(rowids), 1), dtype=np.float32)
        with index.lock.read():
            return index.vectors_of(list(rowids))

    def temporal(self, start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters) -> list[tuple[int, float]]:
        """Entries whose time overlaps ``[start, end)``, most overlap first (`timeline`)."""
        return self._time.temporal(start, end, terms, k, namespace, filters)

    def dated(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]:
        """Entries that state a period, by BM25 of the query among them (`timeline`)."""
        return self._time.dated(terms, k, namespace, filters)

    def newest_timestamp(self, namespace: str | None) -> str | None:
        """The namespace's latest time (the default reference time; `timeline`)."""
        return self._time.newest_timestamp(namespace)

    def substring(self, patterns: Sequence[str], k: int, namespace: str | None,
                  filters: Filters) -> list[tuple[int, float]]:
        """Rows containing the query's literal strings, most matched first (`substring`)."""
        return self._substring.search(patterns, k, namespace, filters)

    # -- this backend's upkeep (not part of the Store protocol) ---------------------------
    def warm(self) -> None:
        """Load the in-memory indexes now rather than on the first search."""
        self._mirrors.lexical()
        self._mirrors.vectors()

    def bulk_load(self, rows: int) -> ContextManager[None]:
        """Nothing to defer: the in-memory indexes are built when first searched."""
        return nullcontext()

    def save_vector_snapshot(self) -> bool:
        """Persist the HNSW graph in the file (best effort; `Mirrors.save_snapshot`)."""
        return self._mirrors.save_snapshot()

    # -- admin ---------------------------------------------------------------------------
    def page(self, namespace: str, filters: Filters, *, newest_first: bool, limit: int,
             after: int | None = None) -> tuple[list[Entry], int | None]:
        """A keyset page of entries in insertion order or its reverse (`listing`)."""
        return self._listing.page(namespace, filters, newest_first=newest_first, limit=limit, after=after)

    def namespaces(self) -> dict[str, dict[str, int]]:
        """Entry counts per kind for every namespace."""
        return self._listing.namespaces()

    def stats(self) -> dict[str, Any]:
        """Counts, model, vectors, schema and file size."""
        return self._listing.stats()

    def timeline(self, namespace: str, filters: Filters, field: str,
                 bucket: str) -> tuple[list[tuple[str, int]], int, str | None, str | None]:
        """Entry counts per time bucket (`listing`)."""
        return self._listing.timeline(namespace, filters, field, bucket)

    def sessions(self, namespace: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
        """The namespace's conversation sessions, most recently written first (`listing`)."""
        return self._listing.sessions(namespace, filters, limit)

    def close(self) -> None:
        """Save the vector graph (best effort: never fails on another process's lock) and
        close the file."""
        if self._closed:
            return
        self._closed = True
        try:
            self.save_vector_snapshot()
        finally:
            self._db.close()


def _mismatch(location: str, stored: str, wanted: str) -> str:
    return (f"store {location} holds vectors from {stored!r}; it cannot be searched or extended with {wanted!r}. "
            "Open it with that embedder, or re-import into a new store.")
