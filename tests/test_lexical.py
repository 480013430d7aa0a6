"""The in-memory BM25 index: scores checked against the formula by hand, masks, appends."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engramdb.store.lexical import LexicalIndex


def _bm25(tf: float, df: int, n: int, dl: float, avgdl: float, k1: float = 1.2, b: float = 0.75) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


def _index() -> LexicalIndex:
    index = LexicalIndex()
    index.append([
        (1, "a", "fact", "cat sat mat", ""),
        (2, "a", "fact", "cat cat dog", ""),
        (3, "b", "turn", "dog bark", "cat"),
        (5, "a", "chunk", "bird sing", ""),
    ])
    return index


def test_scores_match_the_bm25_formula():
    index = _index()
    # lengths: 3, 3, 2 + 0.6 (tag), 2 -> avgdl = 10.6 / 4
    avgdl = 10.6 / 4
    got = dict(index.search(["cat"], 10, None))
    assert got[2] == pytest.approx(_bm25(2, 3, 4, 3, avgdl), rel=1e-5)
    assert got[1] == pytest.approx(_bm25(1, 3, 4, 3, avgdl), rel=1e-5)
    assert got[3] == pytest.approx(_bm25(0.6, 3, 4, 2.6, avgdl), rel=1e-5)
    assert [r for r, _ in index.search(["cat"], 10, None)] == [2, 1, 3]
    two = dict(index.search(["cat", "dog"], 10, None))
    assert two[2] == pytest.approx(_bm25(2, 3, 4, 3, avgdl) + _bm25(1, 2, 4, 3, avgdl), rel=1e-5)


def test_masks_limit_rows_before_top_k():
    index = _index()
    assert [r for r, _ in index.search(["cat", "dog"], 1, index.rows.mask("b", [], None))] == [3]
    assert [r for r, _ in index.search(["cat"], 5, index.rows.mask(None, ["fact"], {1}))] == [1]
    assert index.search(["cat"], 5, index.rows.mask("nope", [], None)) == []
    assert index.search(["unknown"], 5, None) == []


def test_appends_update_statistics_and_skip_known_rows():
    index = _index()
    before = dict(index.search(["bird"], 5, None))[5]
    assert index.append([(5, "a", "chunk", "bird sing", ""), (6, "a", "fact", "bird bird bird", "")]) == 1
    after = dict(index.search(["bird"], 5, None))
    assert after[5] < before  # df grew, so idf fell
    positions = np.array([index.rows.pos[5], index.rows.pos[1]])
    assert index.score_positions(["bird"], positions).tolist() == [pytest.approx(after[5]), 0.0]
    assert np.isfinite(list(after.values())).all()
