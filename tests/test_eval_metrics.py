"""Metric arithmetic checked against values worked out by hand.

Constants used below: 1/log2(2) = 1, 1/log2(3) = 0.6309298, 1/log2(4) = 0.5,
1/log2(5) = 0.4306766.
"""

from __future__ import annotations

import pytest

from engramdb.eval.metrics import hit_at_k, mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k

D3 = 0.6309298  # 1 / log2(3)
D5 = 0.4306766  # 1 / log2(5)


def test_ndcg_binary() -> None:
    # relevant at ranks 2 and 4: DCG = D3 + D5 = 1.0616064; IDCG = 1 + D3 = 1.6309298
    assert ndcg_at_k(["x", "a", "y", "b"], {"a", "b"}, 10) == pytest.approx(0.6509209, abs=1e-6)


def test_ndcg_perfect_and_empty() -> None:
    assert ndcg_at_k(["a", "b", "x"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], {"a"}, 10) == 0.0
    assert ndcg_at_k([], {"a"}, 10) == 0.0
    assert ndcg_at_k(["a"], {}, 10) == 0.0


def test_ndcg_graded_gains_are_linear() -> None:
    # qrels a=2, b=1, ranking b, a: DCG = 1 + 2*D3 = 2.2618596; IDCG = 2 + D3 = 2.6309298
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(0.8597186, abs=1e-6)
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_cutoff_and_ideal_truncated_to_k() -> None:
    assert ndcg_at_k(["x", "y", "a"], {"a"}, 2) == 0.0
    assert ndcg_at_k(["x", "y", "a"], {"a"}, 3) == pytest.approx(0.5)
    # three relevant, one found at rank 1: IDCG@1 = 1 -> 1.0; IDCG@3 = 1 + D3 + 0.5 = 2.1309298
    assert ndcg_at_k(["a"], {"a", "b", "c"}, 1) == pytest.approx(1.0)
    assert ndcg_at_k(["a"], {"a", "b", "c"}, 3) == pytest.approx(1 / 2.1309298, abs=1e-6)


def test_ndcg_ignores_non_positive_grades_and_duplicates() -> None:
    # a has grade 0 and c a negative grade: only b is relevant, found at rank 2
    assert ndcg_at_k(["a", "b"], {"a": 0, "b": 1, "c": -1}, 10) == pytest.approx(D3, abs=1e-6)
    # a repeated: the second a gains nothing. DCG = 1 + 0 + 0.5; IDCG = 1 + D3
    assert ndcg_at_k(["a", "a", "b"], {"a", "b"}, 10) == pytest.approx(1.5 / 1.6309298, abs=1e-6)


def test_grouped_positions() -> None:
    ranking = [("x",), ("a", "b"), ("b", "c")]
    rel = {"a", "b", "c"}
    # position 2 newly covers a and b (gain 1), position 3 newly covers c (gain 1)
    assert ndcg_at_k(ranking, rel, 3) == pytest.approx((D3 + 0.5) / 2.1309298, abs=1e-6)
    assert recall_at_k(ranking, rel, 1) == 0.0
    assert recall_at_k(ranking, rel, 2) == pytest.approx(2 / 3)
    assert recall_at_k(ranking, rel, 3) == pytest.approx(1.0)
    assert mrr_at_k(ranking, rel, 3) == pytest.approx(0.5)
    assert hit_at_k(ranking, rel, 1) == 0.0
    assert hit_at_k(ranking, rel, 2) == 1.0
    # an empty position (a hit that maps to no turn) is simply not relevant
    assert mrr_at_k([(), ("a",)], rel, 10) == pytest.approx(0.5)


def test_grouped_gain_is_the_best_new_grade() -> None:
    # one position covering grades 2 and 1 gains 2, never 3, so nDCG stays <= 1
    # DCG = 2; IDCG = 2 + D3 = 2.6309298
    assert ndcg_at_k([("a", "b")], {"a": 2, "b": 1}, 10) == pytest.approx(2 / 2.6309298, abs=1e-6)


def test_recall() -> None:
    ranking = ["x", "a", "y", "b"]
    rel = {"a", "b", "c"}
    assert recall_at_k(ranking, rel, 1) == 0.0
    assert recall_at_k(ranking, rel, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, rel, 4) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "a"], {"a", "b"}, 10) == pytest.approx(0.5)
    assert recall_at_k(["a"], {}, 10) == 0.0


def test_mrr_and_hit() -> None:
    assert mrr_at_k(["x", "y", "a"], {"a"}, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "a"], {"a"}, 2) == 0.0
    assert mrr_at_k(["a", "b"], {"b": 1, "a": 0}, 10) == pytest.approx(0.5)
    assert hit_at_k(["x", "y", "a"], {"a"}, 3) == 1.0
    assert hit_at_k(["x", "y", "a"], {"a"}, 2) == 0.0


def test_invalid_k() -> None:
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {"a"}, 0)


def test_percentile_linear_interpolation() -> None:
    assert percentile([1, 2, 3, 4], 50) == pytest.approx(2.5)
    # position (4 - 1) * 0.95 = 2.85 -> 3 + 0.85 * (4 - 3)
    assert percentile([4, 1, 3, 2], 95) == pytest.approx(3.85)
    assert percentile([10, 20], 0) == 10
    assert percentile([10, 20], 100) == 20
    assert percentile([7], 95) == 7
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 101)


def test_mean() -> None:
    assert mean([1, 2, 6]) == pytest.approx(3.0)
    with pytest.raises(ValueError):
        mean([])


def test_paired_randomization_test_by_construction():
    from engramdb.eval.significance import compare_rows, paired_randomization_test

    same = [0.1, 0.5, 0.9, 0.3]
    assert paired_randomization_test(same, same) == (0.0, 1.0)
    # Every one of 40 queries gains 0.1: a coin-flip sign pattern almost never reaches that.
    base = [0.5] * 40
    better = [0.6] * 40
    delta, p = paired_randomization_test(base, better)
    assert delta == pytest.approx(0.1) and p < 0.001
    # Gains and losses that cancel: no evidence of a difference.
    mixed = [0.6, 0.4] * 20
    delta, p = paired_randomization_test(base, mixed)
    assert delta == pytest.approx(0.0) and p > 0.5
    # Four queries, each +1: 2 of the 16 sign patterns reach |mean| >= 1 -> p ~ 1/8.
    delta, p = paired_randomization_test([0, 0, 0, 0], [1, 1, 1, 1], iterations=20000)
    assert delta == 1.0 and p == pytest.approx(0.125, abs=0.01)
    # One query of four gains: every sign pattern gives the same |mean| -> no evidence at all.
    assert paired_randomization_test([0, 0, 0, 0], [0, 0, 0, 1])[1] == 1.0
    out = compare_rows([{"ndcg@10": 0.5, "recall@10": 1.0}] * 40, [{"ndcg@10": 0.6, "recall@10": 1.0}] * 40)
    assert out["ndcg@10"]["delta"] == 0.1 and out["recall@10"] == {"delta": 0.0, "p": 1.0}
    with pytest.raises(ValueError):
        paired_randomization_test([1.0], [1.0, 2.0])
