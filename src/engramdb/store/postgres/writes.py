"""How `PostgresStore` writes a batch and deletes rows, inside the caller's write
transaction (which holds the store's advisory lock): the entries, their tags, BM25 postings
and statistics, per-namespace counts and the history log, so that every statistic a search
reads changes in the same transaction as the rows it counts.

A batch is copied into a staging table with ``COPY`` and inserted by one statement (rowids
in input order); tags, postings and history are copied too: round trips per batch, not per
entry.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Sequence

import numpy as np
import psycopg

from ...model import Entry, timestamp_epoch
from ..base import EntryTerms
from ..batches import PLACE_COLUMNS
from ..channels import name_tags, row_length, term_frequencies

_STAGED_COLUMNS = ("id, namespace, kind, text, timestamp, ts, ts_end, location, topic, doc_id, path, session_id, "
                   "turn_id, speaker, data, metadata, created_at, expires_at, superseded_by, lex_len, vec, place")
_STAGED = "ord, " + _STAGED_COLUMNS
_STAGED_SELECT = _STAGED_COLUMNS.replace("metadata", "metadata::jsonb").replace(", vec", ", vec::vector")
# The rows of one write batch before they are inserted (a temporary table of the session).
_STAGING_DDL = ("CREATE TEMP TABLE IF NOT EXISTS engram_staging (ord int, id text, namespace text, kind text, "
                "text text, timestamp text, ts float8, ts_end float8, location text, topic text, doc_id text, "
                "path text, session_id text, turn_id text, speaker text, data text, metadata text, created_at text, "
                "expires_at float8, superseded_by text, lex_len real, vec text, place int8) ON COMMIT DELETE ROWS")


def insert_rows(cur: psycopg.Cursor[Any], namespace: str, entries: Sequence[Entry], vectors: np.ndarray | None,
                terms: Sequence[EntryTerms], replaced: dict[str, str], actor: str | None, now: str,
                log: bool, places: Sequence[int | None]) -> int:
    """Insert a batch of one namespace; returns how many rows it wrote. An entry another
    writer stored meanwhile is skipped (idempotent). `replaced` maps ids deleted for this batch to their old JSON: a re-added id
    is logged as an UPDATE and popped; the rest are the caller's to log as deletes."""
    # Bulk: the rows are copied into a staging table and inserted by one statement
    # (rowids in input order); tags, postings and history are copied in. Round trips
    # per batch, not per entry.
    counts = [term_frequencies(t.body, t.tags) for t in terms]
    for entry in entries:  # before the JSON is made: it is what reads (and history) return
        entry.created_at = entry.created_at or now
    datas = [json.dumps(e.to_dict(), ensure_ascii=False) for e in entries]
    cur.execute(_STAGING_DDL)
    with cur.copy(f"COPY engram_staging ({_STAGED}) FROM STDIN") as copy:
        for i, entry in enumerate(entries):
            src = entry.source
            # repr of the float list is the vector's text form, exact for float32
            vec = repr(np.asarray(vectors[i], dtype=np.float32).tolist()) if vectors is not None else None
            copy.write_row((i, entry.id, entry.namespace, entry.kind, entry.text, entry.timestamp,
                            timestamp_epoch(entry.timestamp), timestamp_epoch(entry.timestamp_end),
                            entry.location, entry.topic, src.doc_id, src.path, src.session_id, src.turn_id,
                            src.speaker, datas[i], json.dumps(entry.metadata or {}, ensure_ascii=False),
                            entry.created_at, timestamp_epoch(entry.expires_at), entry.superseded_by,
                            row_length(counts[i]), vec, places[i]))
    inserted = dict(cur.execute(
        f"INSERT INTO entries ({_STAGED_COLUMNS}) SELECT {_STAGED_SELECT} FROM engram_staging ORDER BY ord "
        "ON CONFLICT (namespace, id) DO NOTHING RETURNING id, rowid").fetchall())
    tags: list[tuple[str, str, int]] = []
    postings: list[tuple[str, str, int, float, float]] = []
    events: list[tuple[str, str | None, str, str, str | None, str | None, str]] = []
    df: Counter[str] = Counter()
    added_rows, added_length = 0, 0.0
    for i, entry in enumerate(entries):
        rowid = inserted.pop(entry.id, None)  # type: ignore[arg-type]
        if rowid is None:
            continue  # another writer stored the same entry since `classify`: idempotent
        old = replaced.pop(entry.id, None)  # type: ignore[arg-type]
        if log:
            events.append((namespace, entry.id, "ADD" if old is None else "UPDATE", now, actor, old, datas[i]))
        length = row_length(counts[i])
        tags += [(f, v, rowid) for f, v in name_tags(entry)]
        postings += [(namespace, term, rowid, tf, length) for term, tf in counts[i].items()]
        df.update(counts[i].keys())
        added_rows += 1
        added_length += length
    for sql, rows in (("COPY tags (field, value, rowid) FROM STDIN", tags),
                      ("COPY postings (namespace, term, rowid, tf, len) FROM STDIN", postings),
                      ("COPY history (namespace, entry_id, event, at, actor, old, new) FROM STDIN", events)):
        if rows:
            with cur.copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)
    if df:
        cur.execute("INSERT INTO terms (term, df) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
                    "ON CONFLICT (term) DO UPDATE SET df = terms.df + EXCLUDED.df",
                    (list(df.keys()), list(df.values())))
    if added_rows:
        cur.execute("UPDATE lex_stats SET rows = rows + %s, total_length = total_length + %s",
                    (added_rows, added_length))
        cur.execute("INSERT INTO namespace_rows (namespace, rows) VALUES (%s, %s) ON CONFLICT (namespace) "
                    "DO UPDATE SET rows = namespace_rows.rows + EXCLUDED.rows", (namespace, added_rows))
    return added_rows


def log_event(cur: psycopg.Cursor[Any], namespace: str, entry_id: str | None, event: str, old: str | None,
              new: str | None, actor: str | None, at: str) -> None:
    cur.execute("INSERT INTO history (namespace, entry_id, event, at, actor, old, new) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s)", (namespace, entry_id, event, at, actor, old, new))


def delete_rows(cur: psycopg.Cursor[Any], namespace: str, ids: list[str],
                places: list[tuple[Any, ...]] | None = None) -> dict[str, str]:
    """Delete these ids of `namespace` (their tags and postings cascade) and take them out of
    the BM25 statistics and counts; returns id -> the deleted JSON, and appends each deleted
    row's `PLACE_COLUMNS` to `places` when given."""
    if not ids:
        return {}
    rows = cur.execute(f"SELECT e.rowid, e.id, e.data, e.lex_len, {PLACE_COLUMNS} FROM entries e "
                       "WHERE e.namespace = %s AND e.id = ANY(%s) ORDER BY e.rowid", (namespace, ids)).fetchall()
    if not rows:
        return {}
    if places is not None:
        places.extend(tuple(r[4:]) for r in rows)
    rowids = [int(r[0]) for r in rows]
    cur.execute("WITH gone AS (SELECT term, count(*) AS n FROM postings WHERE rowid = ANY(%s) GROUP BY term) "
                "UPDATE terms t SET df = t.df - gone.n FROM gone WHERE t.term = gone.term", (rowids,))
    cur.execute("DELETE FROM terms WHERE df <= 0")
    cur.execute("DELETE FROM entries WHERE rowid = ANY(%s)", (rowids,))
    cur.execute("UPDATE namespace_rows SET rows = rows - %s WHERE namespace = %s", (len(rowids), namespace))
    # Subtracted, not re-summed: a re-sum reads every row (0.4 s per delete at 1M entries).
    # Double precision: the drift from the SQLite store's re-sum stays far below 1e-9.
    cur.execute("UPDATE lex_stats SET rows = rows - %s, total_length = CASE WHEN rows - %s <= 0 THEN 0 "
                "ELSE total_length - %s END", (len(rowids), len(rowids), sum(float(r[3]) for r in rows)))
    cur.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key IN ('write_seq', 'delete_seq')")
    return {r[1]: r[2] for r in rows}
