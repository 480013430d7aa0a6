"""One table and one chart for the presets side by side, from `engram eval ... --json` runs.

    python benchmarks/side_by_side.py scifact.json locomo.json cmrc.json \\
        --plot docs/img/side-by-side.png

Each run must hold the same presets (e.g. ``--preset default simplemem ping lychee molore``);
LoCoMo runs with several memory modes give one column per mode. The table is Markdown on
stdout, the best value of each column in bold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

COLUMNS = [("beir", "ndcg@10", "nDCG@10"), ("locomo", "recall@10", "Recall@10"), ("locomo", "hit@10", "Hit@10")]
NAMES = {"scifact": "SciFact", "cmrc2018": "CMRC 2018", "locomo10": "LoCoMo", "madial_en": "MADial-en",
         "crosslingual": "Cross-lingual dev", "current": "Current-state dev (now)"}


def columns(runs: list[dict[str, Any]]) -> list[tuple[str, dict[str, float]]]:
    """(column title, {preset: value}) for every dataset, metric and memory mode."""
    out: list[tuple[str, dict[str, float]]] = []
    for run in runs:
        name = NAMES.get(run["dataset"], run["dataset"])
        modes = sorted({row.get("memory", "") for row in run["results"]}, key=lambda m: (m != "turns", m))
        for kind, metric, label in COLUMNS:
            if kind != run["kind"]:
                continue
            for mode in modes:
                values = {row["preset"]: row[metric] for row in run["results"] if row.get("memory", "") == mode}
                title = f"{name} {label}" + (f" ({mode})" if mode else "")
                out.append((title, values))
    return out


def table(cols: list[tuple[str, dict[str, float]]], presets: list[str]) -> str:
    lines = ["| preset | " + " | ".join(t for t, _ in cols) + " |", "|---|" + "---:|" * len(cols)]
    for preset in presets:
        cells = []
        for _, values in cols:
            value = values.get(preset)
            best = max(values.values())
            cells.append("" if value is None else (f"**{value:.3f}**" if value == best else f"{value:.3f}"))
        lines.append(f"| `{preset}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(cols: list[tuple[str, dict[str, float]]], presets: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(presets)
    fig, ax = plt.subplots(figsize=(max(8, 1.5 * len(cols)), 4.6))
    for i, preset in enumerate(presets):
        xs = [j + (i - (len(presets) - 1) / 2) * width for j in range(len(cols))]
        ax.bar(xs, [values.get(preset, 0) for _, values in cols], width, label=preset,
               edgecolor="black" if preset == "default" else None, linewidth=1.2 if preset == "default" else 0)
    ax.set_xticks(range(len(cols)), [t.replace(" ", "\n", 1) for t, _ in cols], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.set_title("Engram presets side by side (e5-small, no LLM)")
    ax.legend(ncol=len(presets), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="eval --json result files")
    parser.add_argument("--plot", type=Path, help="write the grouped bar chart here (PNG)")
    parser.add_argument("--exclude", nargs="*", default=[], help="presets of the runs to leave out")
    args = parser.parse_args()
    runs = [json.loads(Path(p).read_text()) for p in args.runs]
    presets = [p for p in dict.fromkeys(row["preset"] for run in runs for row in run["results"]) if p not in args.exclude]
    cols = columns(runs)
    print(table(cols, presets), end="")
    if args.plot:
        plot(cols, presets, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
