"""Channel scoring every backend computes identically.

The default preset's calibrated score was fitted on these score distributions, so a second
backend (PostgreSQL) must give the same numbers for the same data: it computes them with
these functions (from the statistics it reads) or in SQL that provably agrees. Nothing
here touches storage; the inputs are arrays of row ids, term statistics and times.

* lexical: BM25 (k1 = 1.2, b = 0.75) over analysed body terms plus tag terms (keywords,
  persons, entities, topic) counted `TAG_WEIGHT` of a body occurrence, with collection
  statistics current at query time. Per-row quantities are float32, as the in-memory
  index holds them; terms are summed in the order of their first occurrence in the query.
  The top k: best first, equal scores by the lowest row id (`top_k`).
* symbolic: how many of the query's (field, value) names a row is tagged with; ties by
  BM25 of the query among those rows, then the most recently added (highest row id).
* temporal: the share of a row's period inside the window (an instant inside it is 1.0);
  ties by BM25, then the latest start, then the lowest row id.
* dated: BM25 among rows that state a period, zero scores dropped; ties by row id.
* substring: how many of the patterns a row's ASCII-lower-cased text contains; ties by
  the most recently added.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from ..model import Entry

K1 = 1.2
B = 0.75
TAG_WEIGHT = 0.6
NAME_FIELDS = ("person", "entity", "location")  # the tag fields the gazetteer matches


# -- lexical (BM25) ----------------------------------------------------------------------
def term_frequencies(body: Sequence[str], tags: Sequence[str]) -> Counter[str]:
    """Term -> weighted frequency of one row: body terms count 1, tag terms `TAG_WEIGHT`."""
    counts: Counter[str] = Counter(body)
    for term in tags:
        counts[term] += TAG_WEIGHT  # type: ignore[assignment]  # float counts: Counter is typed int
    return counts


def row_length(counts: Counter[str]) -> float:
    """A row's BM25 length: the sum of its weighted term frequencies, but for alias terms
    (with a ``:``, which the analyser never leaves in a word: a name's key, ``han:wangfang``),
    which stand for words the row already counts. So indexing a row's aliases changes no
    score of a question that does not look them up."""
    return float(sum(n for term, n in counts.items() if ":" not in term))


def average_length(total_length: float, rows: int) -> float:
    """The collection's mean row length (1.0 for an empty or all-empty collection)."""
    return total_length / rows or 1.0


def idf(rows: int, df: int) -> float:
    """BM25's idf of a term found in `df` of `rows` rows (always positive)."""
    return math.log(1.0 + (rows - df + 0.5) / (df + 0.5))


def idf_mass(rows: int, dfs: Sequence[int]) -> float:
    """The summed idf of a query's distinct terms, `dfs` their document frequencies (0 for a
    term no row holds): the BM25 a row of average length holding each term once would score."""
    return float(sum(idf(rows, df) for df in dfs)) if rows else 0.0


def length_norm(lengths: np.ndarray, avgdl: float) -> np.ndarray:
    """``k1 * (1 - b + b * len / avgdl)`` per row (float32 lengths give float32 norms)."""
    return K1 * (1.0 - B + B * lengths / avgdl)


def term_score(term_idf: float, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """One term's BM25 contribution for rows with frequencies `tf` and norms `norm`."""
    return term_idf * tf * (K1 + 1.0) / (tf + norm)


def top_k(rowids: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the `k` best rows, best first; equal scores by the lowest rowid (at the
    cut too, so every backend keeps the same rows). Linear in the rows, plus a sort of the
    rows that score at least the k-th best."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    chosen = np.arange(len(scores))
    if len(scores) > k:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]  # the k-th best score
        chosen = np.flatnonzero(scores >= kth)
    return chosen[np.lexsort((rowids[chosen], -scores[chosen]))][:k]


# -- symbolic ----------------------------------------------------------------------------
def name_tags(entry: Entry) -> list[tuple[str, str]]:
    """The (field, value) tags an entry is found by in the symbolic channel and tag filters:
    persons (its speaker too), entities, keywords, location; stripped, lower-cased, sorted."""
    rows = [("person", p) for p in entry.persons] + [("entity", e) for e in entry.entities]
    rows += [("keyword", k) for k in entry.keywords]
    if entry.location:
        rows.append(("location", entry.location))
    if entry.source.speaker:
        rows.append(("person", entry.source.speaker))
    return sorted({(f, v.strip().lower()) for f, v in rows if v.strip()})


def rank_symbolic(rowids: np.ndarray, names: np.ndarray, lexical: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top `k` (rowid, names matched): most names first, then BM25, then the newest row."""
    order = np.lexsort((-rowids, -lexical, -names))[:k]
    return [(int(rowids[i]), float(names[i])) for i in order]


# -- time --------------------------------------------------------------------------------
def overlap_share(begin: np.ndarray, finish: np.ndarray, start: float, end: float) -> np.ndarray:
    """The share of each period ``[begin, finish]`` inside ``[start, end)``; an instant
    (``finish == begin``) scores 1.0 (the caller only passes rows that overlap)."""
    length = finish - begin
    inside = np.minimum(finish, end) - np.maximum(begin, start)
    return np.where(length > 0, np.clip(inside, 0, None) / np.where(length > 0, length, 1), 1.0)


def rank_temporal(rowids: np.ndarray, begin: np.ndarray, share: np.ndarray, lexical: np.ndarray,
                  k: int) -> list[tuple[int, float]]:
    """Top `k` (rowid, share): most overlap first, then BM25, then the latest start, then
    the lowest row id."""
    order = np.lexsort((rowids, -begin, -lexical, -share))[:k]
    return [(int(rowids[i]), float(share[i])) for i in order]


def rank_dated(rowids: np.ndarray, lexical: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Top `k` (rowid, BM25) with a positive score; ties by the lowest row id."""
    order = np.lexsort((rowids, -lexical))[:k]
    return [(int(rowids[i]), float(lexical[i])) for i in order if lexical[i] > 0]


# -- substring ---------------------------------------------------------------------------
def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only (SQLite's ``lower``; other letters are kept)."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def patterns_matched(text: str, patterns: Sequence[str]) -> int:
    """How many of the (lower-case) patterns occur in `text`, ASCII case folded: the
    substring channel's score."""
    folded = ascii_lower(text)
    return sum(1 for p in patterns if p in folded)
