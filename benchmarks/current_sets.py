"""The three current-state sets at once, one model load: how many questions put the right note
first, and nDCG@10, for questions about now, unchanged facts and former states.

    python benchmarks/current_sets.py default,variant.toml [--json out.json]

The sets: `benchmarks/data/current` (the current-state dev set), `current_apart/big` (the set
written apart) and the ten small stores `current_apart/tiny/t01..t10`, each searched in a store
of its own; splits `current` (now), `stable` (unchanged facts) and `past` (before). A row lists,
per preset, nDCG@10 and right-first / questions; `--json` also keeps which questions were wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

from engramdb.eval.datasets import load_beir
from engramdb.eval.runner import default_cache_dir, run_beir

DATA = Path(__file__).resolve().parent / "data"
SETS = {"current": [DATA / "current"], "apart": [DATA / "current_apart" / "big"],
        "tiny": sorted((DATA / "current_apart" / "tiny").glob("t*"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("presets", help="comma-separated presets (names or .toml files)")
    parser.add_argument("--json", help="write the counts and the wrong questions here")
    args = parser.parse_args()
    presets = args.presets.split(",")
    from engramdb.eval.runner import _embedder  # one model for every store

    embedder, _ = _embedder("e5-small", default_cache_dir())
    out: dict[str, dict[str, dict[str, object]]] = {}
    for split in ("current", "stable", "past"):
        for name, dirs in SETS.items():
            totals = {p: {"ndcg": 0.0, "first": 0, "n": 0, "wrong": []} for p in presets}
            for directory in dirs:
                try:
                    load_beir(directory, split)
                except Exception:  # a small store without questions of this split
                    continue
                with contextlib.redirect_stdout(io.StringIO()):
                    result = run_beir(directory, presets, embedder=embedder, progress=False, details=True, split=split)
                for row in result["results"]:
                    total = totals[row["preset"]]
                    for query in row["per_query"]:
                        total["ndcg"] += query["ndcg@10"]  # type: ignore[operator]
                        total["n"] += 1  # type: ignore[operator]
                        if query["mrr@10"] == 1.0:
                            total["first"] += 1  # type: ignore[operator]
                        else:
                            total["wrong"].append(f"{directory.name}:{query['id']}")  # type: ignore[union-attr]
            cells = [f"{p}: {t['ndcg'] / max(int(t['n']), 1):.3f} {t['first']}/{t['n']}"  # type: ignore[operator]
                     for p, t in totals.items()]
            print(f"{name:8s} {split:8s} | " + " | ".join(cells), flush=True)
            out[f"{name}/{split}"] = totals  # type: ignore[assignment]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
