"""Is a difference between two presets more than noise? A paired randomization test.

Both presets answered the same queries, so the test works on per-query differences: under
the null hypothesis either preset could have produced either score, so each difference's
sign is a coin flip. The p-value is the share of sign flips whose mean difference is at
least as far from zero as the observed one (two-sided), estimated with a fixed seed so a
report is reproducible. This is the test Smucker, Allan and Carterette (CIKM 2007)
recommend for IR evaluation.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["paired_randomization_test", "compare_rows"]


def paired_randomization_test(a: Sequence[float], b: Sequence[float], iterations: int = 10_000,
                              seed: int = 0) -> tuple[float, float]:
    """(mean of b − a, two-sided p-value) over paired per-query scores."""
    if len(a) != len(b):
        raise ValueError("paired scores must have the same length")
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if diff.size == 0:
        return 0.0, 1.0
    observed = abs(diff.mean())
    if not np.any(diff):
        return 0.0, 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(iterations, diff.size))
    means = np.abs((signs * diff).mean(axis=1))
    # +1 on both sides: the observed assignment is one of the permutations (never p = 0).
    p = (np.count_nonzero(means >= observed - 1e-12) + 1) / (iterations + 1)
    return float(diff.mean()), float(p)


def compare_rows(base: list[dict[str, float]], other: list[dict[str, float]],
                 metrics: Sequence[str] = ("ndcg@10", "recall@10")) -> dict[str, dict[str, float]]:
    """Per metric: the mean difference other − base and its p-value."""
    out: dict[str, dict[str, float]] = {}
    for metric in metrics:
        if base and metric in base[0]:
            delta, p = paired_randomization_test([r[metric] for r in base], [r[metric] for r in other])
            out[metric] = {"delta": round(delta, 4), "p": round(p, 4)}
    return out
