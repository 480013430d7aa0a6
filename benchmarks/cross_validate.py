"""Cross-validated choice of a preset setting from `engram eval --details` runs.

Each candidate preset is one value of a setting (e.g. `[neighbours] lift` 0.3 / 0.5 / 0.7).
Leave one group out: for every group (a LoCoMo conversation, ``sample_id``; a BEIR data set
when several files are given), choose the candidate with the best mean metric on the *other*
groups, and score that choice on the held-out group only. The per-query scores of those
held-out choices make the cross-validated figure, reported next to each candidate's and the
baseline's figure over all queries (which saw every group when it was chosen).

    engram eval locomo locomo10.json --memory turns --preset default,a.toml,b.toml,c.toml --details --json cv.json
    python benchmarks/cross_validate.py cv.json --baseline default --metric recall@10 [--memory turns]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def per_query(paths: list[str], memory: str | None, metric: str,
              skip_categories: set[int]) -> dict[str, dict[tuple[str, str], float]]:
    """preset -> {(group, query key): metric}, without LoCoMo's `skip_categories`."""
    out: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for path in paths:
        data = json.load(open(path, encoding="utf-8"))
        for result in data["results"]:
            if memory and result.get("memory", memory) != memory:
                continue
            for i, row in enumerate(result["per_query"]):
                if row.get("category") in skip_categories:
                    continue
                group = row.get("sample_id") or data.get("dataset") or path
                key = str(row.get("qa_index", row.get("id", i)))
                out[result["preset"]][(group, key)] = row[metric]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--baseline", default="default", help="the preset to compare with (not a candidate)")
    parser.add_argument("--metric", default="recall@10")
    parser.add_argument("--memory", default=None, help="LoCoMo: turns, facts or both")
    parser.add_argument("--skip-category", type=int, action="append", default=None,
                        help="LoCoMo categories left out (default: 5, adversarial, as in the headline numbers)")
    args = parser.parse_args()
    skip = set(args.skip_category if args.skip_category is not None else [5])
    scores = per_query(args.runs, args.memory, args.metric, skip)
    candidates = [p for p in scores if p != args.baseline]
    groups = sorted({g for (g, _) in next(iter(scores.values()))})
    chosen: dict[str, str] = {}
    held_out: list[float] = []
    for group in groups:
        def mean_outside(preset: str) -> float:
            vals = [v for (g, _), v in scores[preset].items() if g != group]
            return sum(vals) / len(vals)
        best = max(candidates, key=mean_outside)
        chosen[group] = best
        held_out += [v for (g, _), v in scores[best].items() if g == group]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"{args.metric}{' · ' + args.memory if args.memory else ''}, {len(groups)} groups, "
          f"{len(held_out)} queries")
    if args.baseline in scores:
        print(f"  baseline {args.baseline}: {mean(list(scores[args.baseline].values())):.4f}")
    for preset in candidates:
        print(f"  {preset}: {mean(list(scores[preset].values())):.4f} (all groups)")
    print(f"  leave-one-group-out choice: {mean(held_out):.4f}")
    for group in groups:
        print(f"    held out {group}: chose {chosen[group]}")


if __name__ == "__main__":
    main()
