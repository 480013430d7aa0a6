"""Fit the calibration of the default fused score from `engram eval --details` runs.

The default preset scores a candidate by the weighted mean of its per-channel z-scores
(`fuse.weighted`, ``calibration``); this script fits the logistic map
``p = 1 / (1 + exp(-(a · mean + b)))`` so that p is the probability that a hit is relevant,
pooling the datasets given with equal weight each, and prints, per dataset, how well p
matches the observed rate (a reliability table and the expected calibration error), and
what each threshold on p would remove from the top 10.

A question whose time window the temporal channel found entries in has a map of its own
(``[fusion] calibration_window``): the window's weight sits in the divisor of every candidate's
mean, so its means are lower. Its hits are told apart by the details' ``recalled`` counts
(``temporal`` > 0) and fitted apart, over the datasets with at least ``--min-window`` such
questions; every other question makes the main map.

The runs must use a preset whose score is the raw weighted mean, i.e. calibration [1, 0]
(``p = sigmoid(mean)``, inverted here), such as benchmarks/presets/default-uncalibrated.toml:

    engram eval beir ../shared/data/scifact --preset benchmarks/presets/default-uncalibrated.toml \\
        --details --json /tmp/cal-scifact.json -q
    engram eval locomo ../shared/data/locomo/locomo10.json --memory both \\
        --preset benchmarks/presets/default-uncalibrated.toml --details --json /tmp/cal-locomo.json -q
    python benchmarks/calibrate.py /tmp/cal-scifact.json /tmp/cal-locomo.json [--json out.json] [--current A B]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np


Loaded = tuple[str, np.ndarray, np.ndarray, list[list[tuple[float, int]]]]


def windowed(row: dict[str, object]) -> bool:
    """Whether a details row's query had the temporal channel find entries in its window."""
    recalled = row.get("recalled")
    if isinstance(recalled, dict):
        return bool(recalled.get("temporal"))
    plan = row.get("plan")
    return bool(isinstance(plan, dict) and plan.get("window"))


def load(path: str, window: bool | None = None) -> Loaded:
    """(dataset name, raw means, labels, per-query lists) of one details run; with `window`,
    only the questions whose temporal channel found (True) or did not find (False) entries."""
    data = json.loads(Path(path).read_text())
    rows = [row for row in data["results"][0]["per_query"] if window is None or windowed(row) == window]
    queries = []
    for row in rows:
        pairs = []
        for p, rel in row["scored"]:
            p = min(max(p, 1e-12), 1 - 1e-12)
            pairs.append((math.log(p / (1 - p)), int(rel)))
        queries.append(pairs)
    flat = [pair for q in queries for pair in q]
    return data["dataset"], np.array([x for x, _ in flat]), np.array([y for _, y in flat]), queries


def fit(xs: list[np.ndarray], ys: list[np.ndarray]) -> tuple[float, float]:
    """Weighted logistic regression (Newton's method with step halving), each dataset weighing
    the same whatever its number of hits."""
    x = np.concatenate(xs)
    y = np.concatenate(ys).astype(np.float64)
    w = np.concatenate([np.full(len(part), 1.0 / len(part)) for part in xs])

    def loss(a: float, b: float) -> float:
        z = a * x + b
        return float(np.sum(w * (np.logaddexp(0, z) - y * z)))

    a, b = 1.0, 0.0
    for _ in range(200):
        p = 1 / (1 + np.exp(-np.clip(a * x + b, -50, 50)))
        grad = np.array([np.sum(w * (p - y) * x), np.sum(w * (p - y))])
        h = w * p * (1 - p)
        hess = np.array([[np.sum(h * x * x), np.sum(h * x)], [np.sum(h * x), np.sum(h)]]) + 1e-12 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        size, current = 1.0, loss(a, b)
        while size > 1e-6 and loss(a - size * step[0], b - size * step[1]) > current:
            size /= 2
        a, b = a - size * step[0], b - size * step[1]
        if np.abs(size * step).max() < 1e-10:
            break
    return float(a), float(b)


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[list[dict[str, float]], float]:
    rows, ece = [], 0.0
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        mask = (p >= lo) & ((p < hi) if i < bins - 1 else (p <= hi))
        if mask.sum() == 0:
            continue
        mean_p, rate = float(p[mask].mean()), float(y[mask].mean())
        rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": int(mask.sum()), "mean_p": round(mean_p, 3),
                     "relevant": round(rate, 3)})
        ece += mask.sum() / len(p) * abs(mean_p - rate)
    return rows, round(float(ece), 4)


def threshold_effect(queries: list[list[tuple[float, int]]], a: float, b: float, k: int = 10
                     ) -> list[dict[str, float]]:
    """For floors on p: share of top-k hits removed, and of relevant top-k hits removed."""
    out = []
    for t in (0.05, 0.1, 0.2, 0.3, 0.5):
        shown = removed = rel = rel_removed = 0
        for q in queries:
            for x, y in q[:k]:
                p = 1 / (1 + math.exp(-max(-50.0, min(50.0, a * x + b))))
                shown += 1
                rel += y
                if p < t:
                    removed += 1
                    rel_removed += y
        out.append({"floor": t, "hits_removed": round(removed / max(shown, 1), 3),
                    "relevant_removed": round(rel_removed / max(rel, 1), 4),
                    "precision_kept": round((rel - rel_removed) / max(shown - removed, 1), 3)})
    return out


def describe(name: str, loaded: Loaded, a: float, b: float, current: list[float] | None) -> dict[str, object]:
    """Print and return one dataset's fit quality: ECE, the top hit's mean p against how many
    are relevant, reliability and what each floor removes."""
    _, x, y, queries = loaded
    p = 1 / (1 + np.exp(-(a * x + b)))
    table, ece = reliability(p, y)
    effect = threshold_effect(queries, a, b)
    top = [q[0] for q in queries if q]
    top_p = float(np.mean([1 / (1 + math.exp(-(a * v + b))) for v, _ in top])) if top else 0.0
    top_rate = float(np.mean([r for _, r in top])) if top else 0.0
    out: dict[str, object] = {"n": int(len(y)), "queries": len(queries), "base_rate": round(float(y.mean()), 4),
                              "ece": ece, "top_hit_p": round(top_p, 3), "top_hit_relevant": round(top_rate, 3),
                              "reliability": table, "floors": effect}
    print(f"\n{name}: {len(y)} hits (top 20 of {len(queries)} queries), {y.mean():.3f} relevant, ECE {ece}; "
          f"top hit: mean p {top_p:.3f}, relevant {top_rate:.3f}")
    if current:
        ca, cb = current
        _, current_ece = reliability(1 / (1 + np.exp(-(ca * x + cb))), y)
        cur_top = float(np.mean([1 / (1 + math.exp(-(ca * v + cb))) for v, _ in top])) if top else 0.0
        out.update(ece_current=current_ece, top_hit_p_current=round(cur_top, 3))
        print(f"  with [{ca}, {cb}]: ECE {current_ece}, top hit mean p {cur_top:.3f}")
    print("| p bin | hits | mean p | relevant |\n|---|---:|---:|---:|")
    for row in table:
        print(f"| {row['bin']} | {row['n']} | {row['mean_p']:.3f} | {row['relevant']:.3f} |")
    print("| floor on p | top-10 hits removed | relevant removed | precision of the rest |\n|---:|---:|---:|---:|")
    for row in effect:
        print(f"| {row['floor']} | {row['hits_removed']:.1%} | {row['relevant_removed']:.2%} | "
              f"{row['precision_kept']:.3f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="eval --details JSON files (preset with calibration [1, 0])")
    parser.add_argument("--json", help="write the fit and tables here")
    parser.add_argument("--current", nargs=2, type=float, metavar=("A", "B"),
                        help="also report the expected calibration error of this fit (e.g. the shipped one)")
    parser.add_argument("--current-window", nargs=2, type=float, metavar=("A", "B"),
                        help="likewise for the questions with a time window the temporal channel found")
    parser.add_argument("--min-window", type=int, default=20,
                        help="a dataset joins the window fit with at least this many such questions")
    args = parser.parse_args()
    plain = [load(path, window=False) for path in args.runs]
    timed = [loaded for loaded in (load(path, window=True) for path in args.runs) if len(loaded[3]) >= args.min_window]
    a, b = fit([x for _, x, _, _ in plain], [y for _, _, y, _ in plain])
    report: dict[str, object] = {"a": round(a, 4), "b": round(b, 4), "datasets": {}, "window": {}}
    print(f"calibration = [{a:.4f}, {b:.4f}]   (p = 1 / (1 + exp(-(a * mean_z + b))))")
    for loaded in plain:
        report["datasets"][loaded[0]] = describe(loaded[0], loaded, a, b, args.current)  # type: ignore[index]
    if timed:
        wa, wb = fit([x for _, x, _, _ in timed], [y for _, _, y, _ in timed])
        report.update(window_a=round(wa, 4), window_b=round(wb, 4))
        print(f"\ncalibration_window = [{wa:.4f}, {wb:.4f}]   (questions whose time window the temporal "
              f"channel found entries in: {', '.join(name for name, *_ in timed)})")
        for loaded in timed:
            report["window"][loaded[0]] = describe(loaded[0] + " (time window)", loaded, wa, wb,  # type: ignore[index]
                                                   args.current_window or args.current)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
