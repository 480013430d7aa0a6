"""The lexical, symbolic, temporal and dated channels of `PostgresStore`: BM25 from the
database's statistics and postings, scored exactly as the SQLite store scores.

The statistics (rows, total length, each term's document frequency) are read in the
search's snapshot; the postings of the query's terms and the rows of its names come from
`postings.PostingsCache` (read once, then extended by what was added since). Scores are
`channels`' float32 arithmetic over the same numbers in the same order as the in-memory
index, so every score is the SQLite store's to the bit, for any store size.

Filters: the temporal and dated channels select their rows in SQL with the filters. The
lexical and symbolic channels rank every matching row in numpy and then ask the database
which of the best are admitted (`first_admitted`): the best `candidates(k)`, then eight
times as many, and so on. The order is total (ties by rowid), so the first k admitted rows
are the top k among admitted rows: the same result as filtering first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import psycopg

from ..channels import (
    average_length, idf, idf_mass, length_norm, overlap_share, rank_dated, rank_symbolic, rank_temporal, term_score,
    top_k,
)
from .postings import PostingList, PostingsCache
from .rows import one

CANDIDATE_MIN = 100  # rows checked against the filters at first, beyond the k asked for
WIDEN = 8  # how much further down the ranking the next check reaches
DENSE_SLACK = 4  # accumulate in a dense array while the largest rowid is at most this x rows


def candidates(k: int) -> int:
    return max(2 * k, k + CANDIDATE_MIN)


@dataclass(frozen=True)
class QueryStats:
    """The collection statistics a query is scored with, read in the search's snapshot."""

    rows: int
    avgdl: float
    terms: tuple[str, ...]  # the query's distinct known terms, in order of first occurrence
    idfs: tuple[float, ...]


def query_state(cur: psycopg.Cursor, terms: Sequence[str]) -> tuple[QueryStats | None, int]:
    """In one round trip: the statistics for `terms` (None when no row can match) and the
    store's delete sequence (which keys the postings cache)."""
    order = list(dict.fromkeys(terms))
    rows, total, delete_seq, dfs = one(cur.execute(
        "SELECT l.rows, l.total_length, (SELECT value FROM meta WHERE key = 'delete_seq'), "
        "(SELECT json_object_agg(term, df) FROM terms WHERE term = ANY(%s)) FROM lex_stats l WHERE l.id = 1",
        (order,)))
    rows, dfs = int(rows), dfs or {}
    known = [t for t in order if t in dfs]
    if rows == 0 or not known:
        return None, int(delete_seq or 0)
    return QueryStats(rows, average_length(float(total), rows), tuple(known),
                      tuple(idf(rows, int(dfs[t])) for t in known)), int(delete_seq or 0)


def query_idf_mass(cur: psycopg.Cursor, terms: Sequence[str]) -> float:
    """The summed idf of the distinct `terms` from the database's statistics (`channels.idf_mass`)."""
    order = list(dict.fromkeys(terms))
    if not order:
        return 0.0
    rows, dfs = one(cur.execute(
        "SELECT l.rows, (SELECT json_object_agg(term, df) FROM terms WHERE term = ANY(%s)) FROM lex_stats l "
        "WHERE l.id = 1", (order,)))
    dfs = dfs or {}
    return idf_mass(int(rows), [int(dfs.get(t, 0)) for t in order])


@dataclass
class Scorer:
    """BM25 for one search: its statistics and its terms' postings."""

    stats: QueryStats
    lists: dict[str, PostingList]

    def all_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(rowids ascending, float32 BM25) of every row matching a term."""
        parts = [(self.lists[t], w) for t, w in zip(self.stats.terms, self.stats.idfs)
                 if t in self.lists and len(self.lists[t].rowids)]
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        top = max(int(p.rowids[-1]) for p, _ in parts)
        if top <= DENSE_SLACK * self.stats.rows + 1024:
            acc = np.zeros(top + 1, dtype=np.float32)
            for plist, term_idf in parts:
                acc[plist.rowids] += term_score(term_idf, plist.tf, length_norm(plist.length, self.stats.avgdl))
            rowids = np.flatnonzero(acc)
            return rowids.astype(np.int64), acc[rowids]
        rowids, inverse = np.unique(np.concatenate([p.rowids for p, _ in parts]), return_inverse=True)
        acc = np.zeros(len(rowids), dtype=np.float32)
        start = 0
        for plist, term_idf in parts:
            at = inverse[start:start + len(plist.rowids)]
            start += len(plist.rowids)
            acc[at] += term_score(term_idf, plist.tf, length_norm(plist.length, self.stats.avgdl))
        return rowids, acc

    def of(self, rowids: np.ndarray) -> np.ndarray:
        """float32 BM25 of these rows (0 where no term matches)."""
        out = np.zeros(len(rowids), dtype=np.float32)
        for term, term_idf in zip(self.stats.terms, self.stats.idfs):
            plist = self.lists.get(term)
            if plist is None or not len(plist.rowids) or not len(rowids):
                continue
            at = np.minimum(np.searchsorted(plist.rowids, rowids), len(plist.rowids) - 1)
            hit = plist.rowids[at] == rowids
            if hit.any():
                sel = at[hit]
                out[hit] += term_score(term_idf, plist.tf[sel], length_norm(plist.length[sel], self.stats.avgdl))
        return out


def scorer(cur: psycopg.Cursor, cache: PostingsCache, namespace: str | None,
           terms: Sequence[str]) -> tuple[Scorer | None, int]:
    """BM25 for `terms` (None when no row can match) and the delete sequence."""
    stats, delete_seq = query_state(cur, terms)
    if stats is None:
        return None, delete_seq
    return Scorer(stats, cache.terms(cur, delete_seq, namespace, stats.terms)), delete_seq


def first_admitted(cur: psycopg.Cursor, ranked: Callable[[int], np.ndarray], total: int, k: int, where: str,
                   params: list[Any]) -> list[int]:
    """The first `k` rowids of a ranking that `where` admits. ``ranked(m)`` gives the first m
    rowids of the ranking (of `total`), best first."""
    want = candidates(k)
    while True:
        head = ranked(min(want, total))
        ids = [int(r) for r in head]
        admitted = {int(r) for (r,) in cur.execute(
            f"SELECT e.rowid FROM entries e WHERE e.rowid = ANY(%s) AND {where}", [ids, *params])}
        chosen = [r for r in ids if r in admitted]
        if len(chosen) >= k or want >= total:
            return chosen[:k]
        want *= WIDEN


def lexical(cur: psycopg.Cursor, cache: PostingsCache, terms: Sequence[str], k: int,
            namespace: str | None, where: str, params: list[Any]) -> list[tuple[int, float]]:
    """Top `k` (rowid, BM25) among the rows `where` admits: best first, ties by rowid."""
    bm, _ = scorer(cur, cache, namespace, terms)
    if bm is None or k <= 0:
        return []
    rowids, scores = bm.all_rows()
    if not len(rowids):
        return []
    chosen = first_admitted(cur, lambda m: rowids[top_k(rowids, scores, m)], len(rowids), k, where, params)
    at = np.searchsorted(rowids, chosen)
    return [(r, float(s)) for r, s in zip(chosen, scores[at])]


def symbolic(cur: psycopg.Cursor, cache: PostingsCache, names: Sequence[tuple[str, str]],
             terms: Sequence[str], k: int, namespace: str | None, where: str,
             params: list[Any]) -> list[tuple[int, float]]:
    """Top `k` admitted rows tagged with the most of `names`, then by BM25, then the newest."""
    bm, delete_seq = scorer(cur, cache, namespace, terms)
    tagged = [plist.rowids for plist in cache.tags(cur, delete_seq, names).values() if len(plist.rowids)]
    if not tagged:
        return []
    rowids, counts = np.unique(np.concatenate(tagged), return_counts=True)
    lexical_scores = bm.of(rowids).astype(np.float64) if bm is not None else np.zeros(len(rowids))
    names_matched = counts.astype(np.float64)
    order = np.lexsort((-rowids, -lexical_scores, -names_matched))
    chosen = first_admitted(cur, lambda m: rowids[order[:m]], len(rowids), k, where, params)
    keep = np.isin(rowids, np.array(chosen, dtype=np.int64))
    return rank_symbolic(rowids[keep], names_matched[keep], lexical_scores[keep], k)


def temporal(cur: psycopg.Cursor, cache: PostingsCache, start: float, end: float,
             terms: Sequence[str], k: int, namespace: str | None, where: str,
             params: list[Any]) -> list[tuple[int, float]]:
    """Top `k` admitted rows whose time overlaps ``[start, end)``, most overlap first."""
    overlap = "coalesce(e.ts_end, e.ts) >= %s AND (e.ts_end IS NULL OR e.ts_end > %s)"
    # A window can hold tens of thousands of rows: they come back as three arrays (one row of
    # the result), which costs a fraction of as many result rows.
    window = (f"SELECT e.rowid, e.ts, coalesce(e.ts_end, e.ts) AS fin FROM entries e WHERE {where} AND e.ts >= %s "
              f"AND e.ts < %s AND {overlap} UNION ALL SELECT e.rowid, e.ts, e.ts_end FROM entries e WHERE {where} "
              f"AND e.ts_end IS NOT NULL AND e.ts_end > %s AND e.ts < %s AND {overlap}")
    found = one(cur.execute(f"SELECT array_agg(rowid), array_agg(ts), array_agg(fin) FROM ({window}) w",
                            params + [start, end, start, start] + params + [start, start, start, start]))
    if not found[0]:
        return []
    rowids = np.array(found[0], dtype=np.int64)
    bm, _ = scorer(cur, cache, namespace, terms)
    lexical_scores = bm.of(rowids).astype(np.float64) if bm is not None else np.zeros(len(rowids))
    begin = np.array(found[1], dtype=np.float64)
    finish = np.array(found[2], dtype=np.float64)
    return rank_temporal(rowids, begin, overlap_share(begin, finish, start, end), lexical_scores, k)


def dated(cur: psycopg.Cursor, cache: PostingsCache, terms: Sequence[str], k: int,
          namespace: str | None, where: str, params: list[Any]) -> list[tuple[int, float]]:
    """Top `k` admitted rows that state a period, by BM25 (zero scores dropped)."""
    bm, _ = scorer(cur, cache, namespace, terms)
    if bm is None:
        return []
    rowids = np.array([r for (r,) in cur.execute(
        f"SELECT e.rowid FROM entries e WHERE {where} AND e.ts_end IS NOT NULL ORDER BY e.rowid", params)],
        dtype=np.int64)
    return rank_dated(rowids, bm.of(rowids), k) if len(rowids) else []
