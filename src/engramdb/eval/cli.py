"""``engram eval``: retrieval quality on BEIR-layout data sets and LoCoMo, preset by preset.

Attached to the main CLI as ``main.add_command(eval_cmd, "eval")``. The Markdown table goes
to stdout; progress bars and notes go to stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import click

from ..errors import EngramError
from .datasets import EvalDataError
from .report import check_plot_path, markdown_table, plot_result

__all__ = ["eval_cmd", "split_presets"]


def split_presets(values: tuple[str, ...]) -> list[str]:
    """Flatten ``--preset a --preset b,c`` into ``[a, b, c]``; ``all`` expands to every preset."""
    names: list[str] = []
    for value in values:
        for name in value.replace(",", " ").split():
            if name == "all":
                from ..pipeline.presets import PRESET_NAMES

                names.extend(PRESET_NAMES)
            else:
                names.append(name)
    return list(dict.fromkeys(names)) or ["default"]


def _common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--preset",
            "presets",
            multiple=True,
            default=("default",),
            show_default=True,
            help="Preset to evaluate; repeat it or give a comma-separated list (e.g. "
            "default,semantic,lexical,symbolic). 'all' runs every preset.",
        ),
        click.option("--k", "k", type=click.IntRange(min=1), default=10, show_default=True,
                     help="Cutoff for the @k metrics (the @10 metrics are always reported)."),
        click.option("--embedder", default="e5-small", show_default=True,
                     help="Embedding model: e5-small (multilingual) or minilm (fast, English)."),
        click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write the result as JSON to this file."),
        click.option("--md", "md_out", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write the Markdown table to this file."),
        click.option("--plot", "plot_out", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write a bar chart to this image file: .png, .svg, .pdf, … (needs matplotlib)."),
        click.option("--limit", "limit", type=click.IntRange(min=1), default=None,
                     help="Evaluate only the first N queries (quick runs)."),
        click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Document-vector cache [default: $ENGRAM_CACHE_DIR or ~/.cache/engram/embeddings]."),
        click.option("--no-cache", is_flag=True, help="Do not read or write the document-vector cache."),
        click.option("--store", "store", metavar="URL", default=None,
                     help="Evaluate on PostgreSQL: a postgresql:// URL of a server (and a database to connect "
                     "to); a scratch database is created there and dropped afterwards. Default: a temporary "
                     "SQLite file."),
        click.option("--details", is_flag=True, help="Include per-query metrics in the JSON output."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bars."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class _Failed(click.ClickException):
    """One ``error: …`` line and exit status 1, as every other command prints (click's own
    says ``Error: …``); works whether `eval_cmd` runs under ``engram`` or on its own."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


def _run(kind: str, target: Path, opts: dict[str, Any]) -> None:
    from .runner import default_cache_dir, run_beir, run_locomo

    if opts["plot_out"]:
        try:
            check_plot_path(opts["plot_out"])  # before the run, which can take minutes
        except ValueError as exc:
            raise _Failed(str(exc)) from None
    cache_dir = None if opts["no_cache"] else (opts["cache_dir"] or default_cache_dir())
    if cache_dir is not None:
        try:  # before the run: a folder that cannot be made was a raw "[Errno 2] …" line after indexing began
            Path(cache_dir).expanduser().mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _Failed(f"--cache-dir {cache_dir}: cannot be used ({exc.strerror or exc}); give another folder, "
                          "or --no-cache") from None
    runner = run_beir if kind == "beir" else run_locomo
    extra: dict[str, Any] = {}
    if kind == "locomo":
        extra = {"memories": [m for m in opts["memory"].replace(",", " ").split()], "extractor": opts["extractor"]}
    elif opts.get("split"):
        extra = {"split": opts["split"]}
    try:
        result = runner(
            target,
            presets=split_presets(opts["presets"]),
            k=opts["k"],
            embedder=opts["embedder"],
            progress=not opts["quiet"],
            limit_queries=opts["limit"],
            cache_dir=cache_dir,
            details=opts["details"],
            store=opts["store"],
            **extra,
        )
    except (EvalDataError, ValueError, EngramError) as exc:
        raise _Failed(str(exc)) from exc
    unmatched = result.get("qrels_unmatched")
    if unmatched:
        click.echo(f"warning: {unmatched['docs']} judgements name documents the corpus does not hold (counted "
                   f"as relevant, never found); {unmatched['queries']} name queries the queries file does not "
                   "hold (not evaluated)", err=True)
    table = markdown_table(result)
    click.echo(table, nl=False)
    if opts["json_out"]:
        opts["json_out"].parent.mkdir(parents=True, exist_ok=True)
        opts["json_out"].write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        click.echo(f"wrote {opts['json_out']}", err=True)
    if opts["md_out"]:
        opts["md_out"].parent.mkdir(parents=True, exist_ok=True)
        opts["md_out"].write_text(table, encoding="utf-8")
        click.echo(f"wrote {opts['md_out']}", err=True)
    if opts["plot_out"]:
        try:
            plot_result(result, opts["plot_out"])
        except (RuntimeError, ValueError) as exc:
            raise _Failed(str(exc)) from exc
        click.echo(f"wrote {opts['plot_out']}", err=True)


@click.group("eval")
def eval_cmd() -> None:
    """Measure retrieval quality on public benchmarks, one row per preset."""


def _target_and_presets(args: tuple[str, ...], opts: dict[str, Any], want_dir: bool) -> Path:
    """The one data path among the positional arguments; the others are more presets, so
    ``--preset default simplemem ping`` works as well as ``--preset default,simplemem,ping``."""
    from ..pipeline.presets import PRESET_NAMES

    paths = [a for a in args if a not in PRESET_NAMES and a != "all" and not a.endswith(".toml")]
    presets = [a for a in args if a not in paths]
    if len(paths) != 1:
        what = "DATASET_DIR" if want_dir else "PATH"
        raise click.UsageError(f"give exactly one {what} (other arguments must be preset names); got "
                               f"{', '.join(paths) if paths else 'none'}")
    target = Path(paths[0])
    if not target.exists():
        raise click.BadParameter(f"{target} does not exist", param_hint=f"'{'DATASET_DIR' if want_dir else 'PATH'}'")
    if want_dir != target.is_dir():
        raise click.BadParameter(f"{target} is {'not ' if want_dir else ''}a directory",
                                 param_hint=f"'{'DATASET_DIR' if want_dir else 'PATH'}'")
    opts["presets"] = (*opts["presets"], *presets)
    return target


@eval_cmd.command("beir")
@click.argument("args", nargs=-1, required=True, metavar="DATASET_DIR [PRESET]...")
@_common_options
@click.option("--split", default="test", show_default=True, metavar="NAME",
              help="Judgements to score: qrels/NAME.tsv (only the queries it judges run).")
def beir_cmd(args: tuple[str, ...], **opts: Any) -> None:
    """Evaluate a BEIR-layout directory (corpus.jsonl, queries.jsonl, qrels/test.tsv).

    Reports nDCG@10, Recall@10, Recall@100, MRR@10, Hit@10 and per-query latency for
    every preset, all searched against one freshly built temporary store. Presets can
    follow --preset with spaces: --preset default simplemem ping lychee molore.
    """
    _run("beir", _target_and_presets(args, opts, want_dir=True), opts)


@eval_cmd.command("locomo")
@click.argument("args", nargs=-1, required=True, metavar="PATH [PRESET]...")
@_common_options
@click.option("--memory", default="turns", show_default=True, metavar="MODES",
              help="What to index, comma-separated: turns, facts (extracted), both.")
@click.option("--extractor", type=click.Choice(["offline", "llm"]), default="offline", show_default=True,
              help="Fact extractor for the facts/both modes (llm needs ENGRAM_LLM_* settings).")
def locomo_cmd(args: tuple[str, ...], **opts: Any) -> None:
    """Evaluate evidence retrieval on a LoCoMo file (e.g. locomo10.json).

    Each conversation gets its own namespace. A fact hit counts as the turns it was
    derived from. Categories 1-4 make the overall numbers
    (Recall@5/@10, Hit@10, nDCG@10, MRR@10) and the per-category rows; category 5
    (adversarial) is reported separately. Presets can follow --preset with spaces:
    --preset default simplemem ping lychee molore.
    """
    _run("locomo", _target_and_presets(args, opts, want_dir=False), opts)
