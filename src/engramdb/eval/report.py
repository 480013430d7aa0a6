"""Human-readable views of an evaluation result: a Markdown table and a PNG bar chart.

Both take the JSON-able dict produced by :mod:`engramdb.eval.runner` (see docs/EVAL.md).
matplotlib is optional (``pip install 'engramdb[eval]'``) and imported only by
:func:`plot_result`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["markdown_table", "category_table", "plot_result", "PLOT_METRICS"]

#: (key in a result row, column title) in display order; absent keys are skipped.
_COLUMNS: list[tuple[str, str]] = [
    ("ndcg@10", "nDCG@10"),
    ("recall@5", "R@5"),
    ("recall@10", "R@10"),
    ("recall@100", "R@100"),
    ("mrr@10", "MRR@10"),
    ("hit@10", "Hit@10"),
]
#: metrics drawn by :func:`plot_result` (when present in the result)
PLOT_METRICS: list[str] = ["ndcg@10", "recall@5", "recall@10", "recall@100", "mrr@10", "hit@10"]
_CATEGORY_COLUMNS: list[tuple[str, str]] = [
    ("n", "n"),
    ("recall@5", "R@5"),
    ("recall@10", "R@10"),
    ("hit@10", "Hit@10"),
    ("ndcg@10", "nDCG@10"),
    ("mrr@10", "MRR@10"),
]


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _p(value: float) -> str:
    """A p-value as reported: 3 decimals, or "<0.001"."""
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _present(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(key, title) for key, title in columns if any(row.get(key) is not None for row in rows)]


def _label(row: dict[str, Any]) -> str:
    """A row's name: its preset, plus what was indexed when a LoCoMo run compares memories."""
    preset = str(row.get("preset", "?"))
    return f"{preset} · {row['memory']}" if row.get("memory") else preset


def markdown_table(result: dict[str, Any]) -> str:
    """One row per preset: quality metrics, latency p50/p95 (ms), index time (s), peak RSS (MB)."""
    rows: list[dict[str, Any]] = list(result.get("results", []))
    cols = _present(rows, _COLUMNS)
    primary = "ndcg@10" if result.get("kind") == "beir" else "recall@10"
    compared = [row for row in rows if row.get("vs_first", {}).get(primary)]
    versus = (f"Δ {dict(_COLUMNS)[primary]} vs {compared[0]['vs_first']['preset']} (p)") if compared else None
    header = ["preset"] + [t for _, t in cols] + ([versus] if versus else []) + ["p50 ms", "p95 ms", "index s"]
    lines = [
        f"**{result.get('dataset', '?')}** · {result.get('n_queries', '?')} queries"
        + (f" · embedder `{result['embedder']}`" if result.get("embedder") else "")
        + (f" · peak RSS {result['peak_rss_mb']:.0f} MB" if result.get("peak_rss_mb") else ""),
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for row in rows:
        lat = row.get("latency_ms") or {}
        cells = [_label(row)]
        cells += [_fmt(row.get(key)) for key, _ in cols]
        if versus:
            vs = row.get("vs_first", {}).get(primary)
            cells.append(f"{vs['delta']:+.3f} ({_p(vs['p'])})" if vs else "")
        cells += [_fmt(lat.get("p50"), 1), _fmt(lat.get("p95"), 1), _fmt(row.get("index_s"), 1)]
        lines.append("| " + " | ".join(cells) + " |")
    cat = category_table(result)
    if cat:
        lines += ["", cat]
    return "\n".join(lines) + "\n"


def category_table(result: dict[str, Any]) -> str:
    """Per-category rows (LoCoMo) for every preset, category 5 last; '' when there are none."""
    names: dict[str, str] = result.get("categories") or {}
    body: list[list[str]] = []
    all_rows: list[dict[str, Any]] = []
    for row in result.get("results", []):
        cats: dict[str, dict[str, Any]] = dict(row.get("by_category") or {})
        if row.get("category_5"):
            cats["5"] = row["category_5"]
        for cat_id in sorted(cats, key=lambda c: (len(c), c)):
            all_rows.append(cats[cat_id])
            label = f"{cat_id} {names.get(cat_id, '')}".strip()
            body.append([_label(row), label, cat_id])
    if not body:
        return ""
    cols = _present(all_rows, _CATEGORY_COLUMNS)
    header = ["preset", "category"] + [t for _, t in cols]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---", "---"] + ["---:"] * len(cols)) + "|",
    ]
    for (preset, label, _), metrics in zip(body, all_rows):
        cells = [preset, label] + [_fmt(metrics.get(key)) for key, _ in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: image formats a chart can be written as (matplotlib's own, which the name's suffix chooses)
PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "webp", "eps", "ps", "tif", "tiff")


def check_plot_path(out: str | Path) -> None:
    """Raise ValueError unless `out` ends in an image format a chart can be written as — before
    an evaluation runs, not after it."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ValueError(f"--plot {out}: plotting needs matplotlib, which is not installed: "
                         "pip install matplotlib (in a clone: pip install -e '.[eval]')")
    suffix = Path(out).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise ValueError(f"--plot {out}: name an image file ({', '.join('.' + f for f in PLOT_FORMATS)}), "
                         f"not {('.' + suffix) if suffix else 'a name without a suffix'}")


def plot_result(result: dict[str, Any], out: str | Path) -> Path:
    """Write a grouped bar chart (one group per metric, one bar per preset) to a PNG file.

    Raises RuntimeError with an install hint if matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "plotting needs matplotlib: pip install matplotlib (in a clone: pip install -e '.[eval]')"
        ) from exc

    check_plot_path(out)
    rows: list[dict[str, Any]] = list(result.get("results", []))
    metrics = [m for m in PLOT_METRICS if any(isinstance(r.get(m), (int, float)) for r in rows)]
    if not rows or not metrics:
        raise ValueError("nothing to plot: the result has no metric values")
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(metrics) + 0.4 * len(rows)), 4.2))
    try:
        for i, row in enumerate(rows):
            xs = [j + (i - (len(rows) - 1) / 2) * width for j in range(len(metrics))]
            ys = [float(row.get(m) or 0.0) for m in metrics]
            bars = ax.bar(xs, ys, width=width, label=_label(row))
            for bar, y in zip(bars, ys):
                ax.annotate(f"{y:.2f}", (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom",
                            fontsize=7, xytext=(0, 1), textcoords="offset points")
        ax.set_xticks(range(len(metrics)))
        ax.set_xticklabels(metrics)
        ax.set_ylim(0, 1.08)
        ax.set_ylabel("score")
        title = f"{result.get('dataset', '?')} ({result.get('n_queries', '?')} queries"
        if result.get("embedder"):
            title += f", {result['embedder']}"
        ax.set_title(title + ")")
        ax.legend(fontsize=8, ncols=min(4, len(rows)))
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out_path, dpi=120)
    finally:
        plt.close(fig)
    return out_path
