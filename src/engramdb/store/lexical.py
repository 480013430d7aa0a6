"""In-memory BM25 over the analysed terms kept in the SQLite file.

The `lexicon` table (rowid -> analysed body terms and tag terms) is the source of truth;
this index mirrors it as per-term posting arrays, like `bm25s`. A query touches only the
postings of its terms and scores them with NumPy, so it costs ~1–2 ms at 100k entries
whatever the filter, where FTS5's `bm25()` with `ORDER BY ... LIMIT` scored every match in
SQL (7–12 ms unfiltered, 24–36 ms joined with a namespace filter; docs/BENCHMARKS.md).

Scoring is the BM25 of `channels` (the definition every backend shares), computed with the
collection statistics current at query time, so scores are exact after any number of appends.
"""

from __future__ import annotations

from array import array
from typing import Iterable

import numpy as np

from .channels import average_length, idf, idf_mass, length_norm, row_length, term_frequencies, term_score, top_k
from .rwlock import ReadWriteLock


class RowCodes:
    """Per-position rowid, namespace code and kind code, shared shape for both indexes, and
    each row's lifecycle status: superseded, and when it expires (rows are immutable, so a
    status never changes under a position)."""

    def __init__(self) -> None:
        self.rowids = array("q")
        self.ns = array("i")
        self.kind = array("b")
        self.pos: dict[int, int] = {}
        self.ns_codes: dict[str, int] = {}
        self.kind_codes: dict[str, int] = {}
        self._np: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Only rows with a status are recorded, so stores without any pay nothing.
        self._superseded: list[int] = []
        self._expiring: dict[int, float] = {}
        self._status_np: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, rowid: int, namespace: str, kind: str, superseded: object = False,
            expires_at: float | None = None) -> int:
        position = len(self.rowids)
        self.rowids.append(rowid)
        self.ns.append(self.ns_codes.setdefault(namespace, len(self.ns_codes)))
        self.kind.append(self.kind_codes.setdefault(kind, len(self.kind_codes)))
        self.pos[rowid] = position
        if superseded:
            self._superseded.append(position)
        if expires_at is not None:
            self._expiring[position] = float(expires_at)
        self._np = self._status_np = None
        return position

    def _status(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._status_np is None:
            self._status_np = (np.array(self._superseded, dtype=np.int64),
                               np.fromiter(self._expiring.keys(), dtype=np.int64, count=len(self._expiring)),
                               np.fromiter(self._expiring.values(), dtype=np.float64, count=len(self._expiring)))
        return self._status_np

    def hidden(self, live_at: float | None, include_superseded: bool) -> np.ndarray | None:
        """Positions out of view: superseded rows (unless included) and rows expired at
        `live_at` (epoch seconds; None: expiry ignored)."""
        superseded, expiring, expires = self._status()
        parts = []
        if not include_superseded and len(superseded):
            parts.append(superseded)
        if live_at is not None and len(expiring):
            parts.append(expiring[expires <= live_at])
        if not parts:
            return None
        return np.concatenate(parts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._np is None:
            self._np = (np.array(self.rowids, dtype=np.int64), np.array(self.ns, dtype=np.int32),
                        np.array(self.kind, dtype=np.int8))
        return self._np

    def mask(self, namespace: str | None, kinds: list[str], allowed: set[int] | None,
             hidden: np.ndarray | None = None) -> np.ndarray | None:
        """Boolean admit-mask over positions, or None when everything is admitted."""
        rowids, ns, kind = self.arrays()
        mask: np.ndarray | None = None
        if namespace is not None:
            code = self.ns_codes.get(namespace)
            if code is None:
                return np.zeros(len(rowids), dtype=bool)
            if len(self.ns_codes) > 1:
                mask = ns == code
        if kinds:
            codes = [self.kind_codes[k] for k in kinds if k in self.kind_codes]
            kind_mask = np.isin(kind, codes)
            mask = kind_mask if mask is None else mask & kind_mask
        if allowed is not None:
            positions = [self.pos[r] for r in allowed if r in self.pos]
            allowed_mask = np.zeros(len(rowids), dtype=bool)
            allowed_mask[positions] = True
            mask = allowed_mask if mask is None else mask & allowed_mask
        if hidden is not None and len(hidden):
            mask = np.ones(len(rowids), dtype=bool) if mask is None else mask.copy()
            mask[hidden] = False
        return mask

    def __len__(self) -> int:
        return len(self.rowids)


class LexicalIndex:
    """Append-only BM25 posting lists (a reload rebuilds it after deletions)."""

    def __init__(self) -> None:
        self.lock = ReadWriteLock()
        self.reset()

    def reset(self) -> None:
        """Forget every row (the lock is kept: other threads may be waiting on it)."""
        self.rows = RowCodes()
        self._postings: dict[str, tuple[array, array]] = {}
        self._lengths = array("f")
        self._total_length = 0.0
        self._lengths_np: np.ndarray | None = None
        self.max_rowid = 0
        self.seq = -1
        self.del_seq = -1

    def __len__(self) -> int:
        return len(self.rows)

    def append(self, rows: Iterable[tuple]) -> int:  # type: ignore[type-arg]
        """Add (rowid, namespace, kind, body terms, tag terms[, superseded, expires_at]) rows;
        terms space-separated."""
        added = 0
        for rowid, namespace, kind, body, tags, *status in rows:
            if rowid in self.rows.pos:
                continue
            position = self.rows.add(rowid, namespace, kind, *status)
            counts = term_frequencies(body.split(), tags.split())
            length = row_length(counts)
            self._lengths.append(length)
            self._total_length += length
            for term, tf in counts.items():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = (array("i"), array("f"))
                postings[0].append(position)
                postings[1].append(tf)
            self.max_rowid = max(self.max_rowid, rowid)
            added += 1
        if added:
            self._lengths_np = None
        return added

    def _dense_scores(self, terms: Iterable[str]) -> np.ndarray | None:
        """BM25 of every row (0 where no term matches), or None when no term is indexed."""
        n = len(self.rows)
        if n == 0:
            return None
        if self._lengths_np is None:
            self._lengths_np = np.array(self._lengths, dtype=np.float32)
        avgdl = average_length(self._total_length, n)
        norm_all = None
        acc: np.ndarray | None = None
        for term in dict.fromkeys(terms):
            postings = self._postings.get(term)
            if postings is None:
                continue
            positions = np.array(postings[0], dtype=np.int64)
            tf = np.array(postings[1], dtype=np.float32)
            df = len(positions)
            if norm_all is None:
                norm_all = length_norm(self._lengths_np, avgdl)
                acc = np.zeros(n, dtype=np.float32)
            acc[positions] += term_score(idf(n, df), tf, norm_all[positions])  # type: ignore[index]
        return acc

    def search(self, terms: list[str], k: int, mask: np.ndarray | None) -> list[tuple[int, float]]:
        """Top-k (rowid, BM25) among admitted rows; ties break on rowid for stable order."""
        acc = self._dense_scores(terms)
        if acc is None or k <= 0:
            return []
        if mask is not None:
            acc = np.where(mask, acc, 0.0)
        positions = np.flatnonzero(acc)
        if len(positions) == 0:
            return []
        scores = acc[positions]
        rowids = self.rows.arrays()[0][positions]
        return [(int(rowids[i]), float(scores[i])) for i in top_k(rowids, scores, k)]

    def idf_mass(self, terms: list[str]) -> float:
        """The summed idf of the distinct `terms` over every indexed row (`channels.idf_mass`)."""
        postings = self._postings
        return idf_mass(len(self.rows), [len(postings[t][0]) if t in postings else 0 for t in dict.fromkeys(terms)])

    def coverage(self, terms: list[str], rowids: list[int]) -> dict[int, int]:
        """How many of the distinct `terms` each row's text or tags contain (0 for unknown rows)."""
        pos = self.rows.pos
        positions = np.array([pos.get(r, -1) for r in rowids], dtype=np.int64)
        counts = np.zeros(len(rowids), dtype=np.int64)
        for term in dict.fromkeys(terms):
            postings = self._postings.get(term)
            if postings is not None:
                counts += np.isin(positions, np.frombuffer(postings[0], dtype=np.int32))
        return {rowid: int(n) for rowid, n in zip(rowids, counts)}

    def score_positions(self, terms: list[str], positions: np.ndarray) -> np.ndarray:
        """BM25 of the rows at `positions` (0 where no term matches)."""
        acc = self._dense_scores(terms)
        if acc is None:
            return np.zeros(len(positions), dtype=np.float32)
        return acc[positions]
