"""`engram`: the command line, a thin layer over the same `Memory` API (parity by design)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.markup import escape
from rich.tree import Tree

from . import __version__
from .conversation import EXTRACTORS
from .cli_text import counted, echo, printable
from .errors import EngramError, InputError
from .ingest import IMPORT_FORMATS
from .memory import Memory, default_db_path
from .model import Entry, Source, timestamp_epoch
from .validation import check_unicode
from .pipeline.presets import CHANNELS
from .store.base import Filters
from .store.open import backend_of, can_write, redact, refuse_folder, store_exists
from .schema import MODELS, json_schema, to_wire
from .cli_lifecycle import parse_meta

out = Console(soft_wrap=True)
err = Console(stderr=True)


class EngramGroup(click.Group):
    """Turns Engram's errors into one clear line and a non-zero exit status."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`engram presets | head`): stop quietly, as Unix tools do.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except EngramError as exc:
            echo(f"error: {exc}", err=True)
            ctx.exit(1)
        except (OSError, json.JSONDecodeError) as exc:
            echo(f"error: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=EngramGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="engram")
@click.option("--db", envvar="ENGRAM_DB", default=None, metavar="PATH|URL",
              help="Store: a SQLite file, or a postgresql:// URL [env ENGRAM_DB; default ./engram.db].")
@click.option("--namespace", "-n", envvar="ENGRAM_NAMESPACE", default="default", show_default=True,
              help="Namespace to read and write [env ENGRAM_NAMESPACE].")
@click.option("--embedder", envvar="ENGRAM_EMBEDDER", default=None,
              help="e5-small (multilingual, default for new stores) | minilm (fast, English) | openai:<model>. "
                   "An existing store keeps the model it was built with [env ENGRAM_EMBEDDER].")
@click.pass_context
def main(ctx: click.Context, db: str | None, namespace: str, embedder: str | None) -> None:
    """Engram: local-first hybrid memory and retrieval for LLM agents."""
    given = ctx.get_parameter_source("namespace") not in (click.core.ParameterSource.DEFAULT, None)
    if db is not None and not db.strip() and ctx.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        # `--db "$STORE"` with the variable unset wrote ./engram.db wherever the script ran
        raise click.BadParameter("names no store (an empty string); leave --db out for $ENGRAM_DB or ./engram.db",
                                 param_hint="--db")
    if ctx.get_parameter_source("embedder") == click.core.ParameterSource.ENVIRONMENT:
        # $ENGRAM_EMBEDDER picks the model of a new store; an existing one keeps its own. Memory
        # reads the variable so itself: passed on as --embedder, a store of another model was an error.
        embedder = None
    ctx.obj = {"db": db or default_db_path(), "namespace": namespace, "embedder": embedder, "namespace_given": given}


@contextmanager
def _memory(ctx: click.Context, must_exist: bool = False, reads_only: bool = False) -> Iterator[Memory]:
    """The store of ``--db``. Commands that only read open a file this process may not write
    (a read-only file, folder or mount) read-only instead of failing."""
    opts = ctx.obj
    refuse_folder(opts["db"])
    if must_exist and not store_exists(opts["db"]):
        raise EngramError(f"no store at {redact(opts['db'])} (import something first, or pass --db)")
    read_only = reads_only and not can_write(opts["db"])
    created = backend_of(opts["db"]) == "sqlite" and not store_exists(opts["db"])
    left_empty = False
    try:
        # Without -n the Memory names no namespace (it acts in "default"): `import` then restores a
        # dump into the namespaces it records; with -n everything, a dump too, goes into that one.
        namespace = opts["namespace"] if opts["namespace_given"] else None
        # A command on an existing store never creates one (a database without the schema on
        # PostgreSQL is "no store", as a missing file is).
        with Memory(opts["db"], namespace=namespace, embedder=opts["embedder"], read_only=read_only,
                    create=not must_exist) as mem:
            try:
                yield mem
            except BaseException:
                left_empty = created and not mem.store.namespaces()
                raise
    finally:
        if left_empty:  # a command that failed on a store it created leaves no empty file behind
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(Path(opts["db"]).expanduser()) + suffix).unlink(missing_ok=True)


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Any]:
    if quiet or not sys.stderr.isatty():
        # Non-interactive: one line at the end instead of a redrawn bar.
        yield lambda done, total: None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@main.command()
@click.argument("texts", nargs=-1)
@click.option("--kind", type=click.Choice(["fact", "turn", "chunk"]), default="fact", show_default=True)
@click.option("--person", "persons", multiple=True, help="A person the entry is about (repeatable).")
@click.option("--entity", "entities", multiple=True, help="An entity (repeatable).")
@click.option("--keyword", "keywords", multiple=True, help="A keyword (repeatable).")
@click.option("--location", default=None)
@click.option("--topic", default=None)
@click.option("--timestamp", default=None, help="Event time, ISO 8601 (naive times are UTC).")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Metadata (repeatable).")
@click.option("--expires", default=None, metavar="ISO", help="Out of search, list and count after this time.")
@click.option("--supersedes", multiple=True, metavar="ID",
              help="The new TEXT replaces these entries as the truth; they are kept, marked superseded (repeatable).")
@click.option("--actor", default=None, help="Who makes the change (recorded in the history).")
@click.option("--json", "as_json", is_flag=True, help="Print the ids as JSON.")
@click.pass_context
def add(ctx: click.Context, texts: tuple[str, ...], kind: str, persons: tuple[str, ...], entities: tuple[str, ...],
        keywords: tuple[str, ...], location: str | None, topic: str | None, timestamp: str | None,
        meta: tuple[str, ...], expires: str | None, supersedes: tuple[str, ...], actor: str | None,
        as_json: bool) -> None:
    """Add one entry per TEXT; a TEXT of - reads one entry per non-blank line from stdin, in its place."""
    if texts.count("-") > 1:
        raise click.UsageError("- (stdin) may be given once")
    # Each text with what an error calls it: "TEXT 2", "stdin line 3" (blank lines counted).
    named = [(f"TEXT {i}", t) for i, t in enumerate(texts, start=1)]
    if "-" in texts:  # `engram add first - last`: stdin's lines where the dash stands, as `cat a - b`
        at = texts.index("-")
        piped = sys.stdin.read().removeprefix("\ufeff")  # a byte-order mark is not the first entry's
        lines = [(f"stdin line {n}", line.rstrip("\r")) for n, line in enumerate(piped.split("\n"), start=1)
                 if line.strip()]
        named = named[:at] + lines + named[at + 1:]
    if not named:
        raise click.UsageError("stdin (-) held no text: nothing to add" if "-" in texts
                               else "give at least one TEXT (or - for stdin)")
    for label, text in named:  # before anything is written, named as the user gave it
        undecoded = next((i for i, ch in enumerate(text) if "\udc80" <= ch <= "\udcff"), None)
        if undecoded is not None:  # a byte Python could not read as UTF-8 (its surrogateescape)
            raise InputError(f"{label} is not valid UTF-8 (byte 0x{ord(text[undecoded]) - 0xDC00:02x} at position "
                             f"{undecoded}; is the terminal or file in another encoding?)")
        try:
            check_unicode(text, label)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    texts = tuple(text for _, text in named)
    metadata = parse_meta(meta)
    entries = [
        Entry(text=t, kind=kind, persons=list(persons), entities=list(entities), keywords=list(keywords),
              location=location, topic=topic, timestamp=timestamp, metadata=dict(metadata), source=Source())
        for t in texts
    ]
    with _memory(ctx) as mem:
        ids = mem.add(entries, expires_at=expires, supersedes=list(supersedes) or None, actor=actor)
    if as_json:
        _print_json({"ids": ids})
    else:
        for entry_id in ids:
            echo(entry_id)


@main.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(IMPORT_FORMATS), default=None,
              help="What PATH holds; recognised from its fields when omitted.")
@click.option("--extractor", type=click.Choice(EXTRACTORS), default="offline", show_default=True,
              help="How conversations become facts: rules, an LLM (ENGRAM_LLM_* settings) or none (turns only).")
@click.option("--skip-bad-files", is_flag=True,
              help="Notes: skip a file that is not text (not UTF-8/UTF-16, NUL bytes) and import the rest.")
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
def import_cmd(ctx: click.Context, path: Path, fmt: str | None, extractor: str, skip_bad_files: bool,
               as_json: bool, quiet: bool) -> None:
    """Import notes (a folder or .md/.txt), a JSONL of entries, a conversation file
    (LoCoMo JSON, JSONL of turns, OpenAI messages) or an `engram export` dump (restored into
    its own namespaces unless -n is given). Re-import is incremental."""
    namespace = ctx.obj["namespace"] if ctx.obj["namespace_given"] else None
    with _memory(ctx) as mem, _progress(f"importing {path.name}", quiet) as progress:
        report = mem.import_path(path, progress=progress, format=fmt, extractor=extractor, namespace=namespace,
                                 skip_bad_files=skip_bad_files)
    if as_json:
        _print_json(to_wire("import_report", report))
    elif "sessions" in report:
        skipped = report.get("skipped") or {}
        total = sum(skipped.values())
        reasons = ", ".join(f"{n} {'without text (tool calls only, or empty)' if why == 'no text' else why}"
                            for why, n in skipped.items())
        echo(
            f"imported {path} ({report['format']}): {counted(report['sessions'], 'session')}, "
            f"{counted(report['turns'], 'turn')}, {counted(report['facts'], 'fact')} ({report['written']} written, "
            f"{counted(report['sessions_unchanged'], 'session')} unchanged, {report['removed']} removed)"
            + (f"; {counted(total, 'message')} skipped: {reasons}" if total else "")
        )
    else:
        files = f"{counted(report['files'], 'file')}, " if "files" in report else ""
        echo(
            f"imported {path}: {files}{counted(report['entries'], 'entry')} "
            f"({report['written']} written, {report['unchanged']} unchanged, {report['removed']} removed)"
        )
    # Warnings go to stderr with --json too: the report holds them, but a script's log should show them.
    for failure in report.get("failures", []):
        echo(f"warning: extraction failed for {failure.get('session_id')} turns "
             f"{failure.get('turns')}: {failure.get('error')} (kept as raw turns)", err=True)
    for skipped_file in report.get("skipped_files", []):
        echo(f"warning: skipped {skipped_file['path']}: {skipped_file['reason']}", err=True)


@main.command("export")
@click.option("--all-namespaces", is_flag=True, help="Every namespace, not only the current one.")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None, help="Write here instead of stdout.")
@click.pass_context
def export_cmd(ctx: click.Context, all_namespaces: bool, output: Path | None) -> None:
    """Write the namespace as JSONL: every entry with all its fields, and its history
    (`engram import` reads it back). Streams; constant memory."""
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        if output is None or (output.exists() and not output.is_file()):
            # stdout, or a device or pipe named as a file (/dev/stdout, a FIFO): written in place,
            # never renamed over.
            try:
                with (open(output, "w", encoding="utf-8") if output else contextlib.nullcontext(sys.stdout)) as handle:
                    _write_dump(mem, all_namespaces, handle)
            except IsADirectoryError:
                raise EngramError(f"cannot write {output}: it is a folder") from None
            except OSError as exc:
                if isinstance(exc, BrokenPipeError):
                    raise
                raise EngramError(f"cannot write {output or 'stdout'}: {exc.strerror or exc}") from None
            return
        # Into a file beside the target, renamed over it only once the dump is whole: an export
        # that fails (a damaged store, a full disk, Ctrl-C) leaves the previous backup as it was.
        target = output.resolve() if output.is_symlink() else output  # a link's file, not the link
        try:
            fd, name = tempfile.mkstemp(dir=target.resolve().parent, prefix=f".{target.name}.", suffix=".partial")
        except OSError as exc:
            raise EngramError(f"cannot write {output}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                _write_dump(mem, all_namespaces, handle)
            os.chmod(name, _file_mode(target))  # mkstemp's 0600 -> the file's own, or a new file's
            os.replace(name, target)
        except OSError as exc:
            raise EngramError(f"cannot write {output}: {exc.strerror or exc}") from None
        finally:
            if os.path.exists(name):
                os.unlink(name)


def _write_dump(mem: Memory, all_namespaces: bool, handle: Any) -> None:
    for line in mem.export(all_namespaces=all_namespaces):
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _file_mode(path: Path) -> int:
    """The permission bits of `path`, or those a new file gets under the process's umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@main.command("migrate")
@click.argument("source", metavar="SRC")
@click.argument("destination", metavar="DST")
@click.option("--into-nonempty", is_flag=True,
              help="Merge into a destination that already holds entries (the source's version of an id wins; "
                   "also completes an interrupted migrate).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def migrate_cmd(source: str, destination: str, into_nonempty: bool, as_json: bool, quiet: bool) -> None:
    """Copy the whole store SRC into DST (each a SQLite file or a postgresql:// URL): every
    namespace, entry, vector (not embedded again) and history event, verified by counts.
    DST must be empty unless --into-nonempty. --db is not used."""
    from .migrate import migrate

    with _progress("migrating", quiet) as progress:
        report = migrate(source, destination, into_nonempty=into_nonempty, progress=progress)
    if as_json:
        _print_json(report)
    else:
        echo(f"migrated {report['source']} -> {report['destination']}: {counted(report['entries'], 'entry')} in "
             f"{counted(len(report['namespaces']), 'namespace')} ({report['written']} written, {report['unchanged']} "
             f"unchanged, {report['replaced']} replaced), {report['history']} history events "
             f"({report['history_restored']} restored); counts verified")


@main.command("add-turn")
@click.argument("speaker")
@click.argument("text")
@click.option("--session", "session_id", required=True, help="The session (conversation) the turn belongs to.")
@click.option("--timestamp", default=None, help="When it was said, ISO 8601 (default: now).")
@click.option("--turn-id", default=None, help="Id within the session (default: <session>:<next number>); an id it holds names that turn (a retry, or a correction).")
@click.option("--extractor", type=click.Choice(EXTRACTORS), default="offline", show_default=True)
@click.option("--actor", default=None, help="Who adds it (recorded in the history).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def add_turn(ctx: click.Context, speaker: str, text: str, session_id: str, timestamp: str | None,
             turn_id: str | None, extractor: str, actor: str | None, as_json: bool) -> None:
    """Append one conversation turn (and the facts extracted from it) to a session."""
    with _memory(ctx) as mem:
        report = mem.add_turn(speaker, text, session_id=session_id, timestamp=timestamp, turn_id=turn_id,
                              extractor=extractor, actor=actor).to_dict()
    if as_json:
        _print_json(to_wire("turn_report", report))
    elif report["turns"] == 0:
        echo(f"{session_id} holds that turn already ({report.get('turn_id')}): nothing added")
    else:
        facts = report["facts"]
        note = ""
        if facts == 0 and extractor == "offline" and not re.search(r"[A-Za-z\u4e00-\u9fff]", text):
            # Say why, so a Russian or Arabic turn is not a silent mystery: it is stored and
            # searchable (the embedding is multilingual), only not restated as facts.
            note = " (the offline extractor restates English and Chinese; the turn itself is searchable)"
        echo(f"added turn {report.get('turn_id')} [{report.get('id')}] and {facts} fact{'' if facts == 1 else 's'} "
             f"to {session_id}{note}")


def _unfound(term: str, channels: dict[str, Any]) -> str:
    """" (not found)" after a fused channel's term when that channel did not return the
    candidate: it then counts at its list's floor, which can equal a found row's z-score (the
    second of a two-row list), so the two must read apart."""
    found = term in channels or (term == "lexical" and "translated" in channels)
    return "" if found or term not in CHANNELS else " (not found)"  # "m", a learned feature: no channel


def _render_hit(rank: int, hit: dict[str, Any]) -> str:
    src = hit["source"]
    where = src.get("path") or src.get("doc_id") or src.get("session_id") or hit["kind"]
    if hit.get("timestamp"):
        where += " · " + hit["timestamp"][:10]
    if src.get("heading_path"):
        where += " › " + " › ".join(src["heading_path"])
    channels = ", ".join(f"{name} #{c['rank']} ({c['score']:.3f})" for name, c in hit["channels"].items())
    text = " ".join(hit["text"].split())
    if len(text) > 240:
        text = text[:237] + "..."
    return f"{rank:>2}. [{hit['score']:.4f}] {text}\n    {where} · {hit['id']} · {channels}"


@main.command()
@click.argument("query")
@click.option("-k", "k", type=int, default=10, show_default=True, help="Number of results.")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="Hard filter, repeatable: kind, person, entity, keyword, location, topic, since, until, "
                   "doc_id, path, session_id, turn_id, speaker, metadata.<key>.")
@click.option("--preset", default="default", show_default=True, help="Pipeline preset name or .toml path.")
@click.option("--group-by", type=click.Choice(["doc", "path", "session"]), default=None,
              help="Keep only the best entry per document/path/session.")
@click.option("--now", default=None,
              help="Reference time for 'last week', '上周'... (ISO 8601; default: the newest entry's time "
                   "not after the clock).")
@click.option("--threshold", type=float, default=None, metavar="P",
              help="Drop hits scoring below P (with the calibrated default preset: the chance it is relevant).")
@click.option("--planner", type=click.Choice(["none", "rules", "llm"]), default=None,
              help="How the question is read (default: the preset's): as typed, by rules, or by an LLM.")
@click.option("--no-reflect", is_flag=True, help="Skip the preset's LLM reflection rounds for this query.")
@click.option("--include-superseded", is_flag=True, help="Also entries a newer one superseded.")
@click.option("--show-expired", is_flag=True, help="Also entries past their expiry.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output with the trace (see docs/CLI.md).")
@click.option("--explain", is_flag=True, help="Show the per-stage trace as a tree, with each stage's candidates.")
@click.option("--context", "context", type=click.IntRange(0, 10), default=0, show_default=True,
              help="Show N turns before and after each conversation-turn hit.")
@click.pass_context
def search(ctx: click.Context, query: str, k: int, filters: tuple[str, ...], preset: str, group_by: str | None,
           now: str | None, threshold: float | None, planner: str | None, no_reflect: bool,
           include_superseded: bool, show_expired: bool, as_json: bool, explain: bool, context: int) -> None:
    """Search the store; each hit shows its fused score and every channel that found it."""
    parsed = Filters.parse_cli(filters)
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        result = mem.search(query, k=k, filters=parsed, preset=preset, group_by=group_by, now=now, planner=planner,
                            reflect=not no_reflect, explain=explain, threshold=threshold,
                            include_superseded=include_superseded, show_expired=show_expired, context=context)
        # No hit because the namespace holds nothing (a mistyped -n): say so, and which ones hold some.
        empty = not result.hits and not as_json and not mem.count(include_superseded=True, show_expired=True)
        others = [row["namespace"] for row in mem.namespaces()] if empty else []
    data = result.to_dict()
    if as_json:
        _print_json(to_wire("search_result", data))
        return
    if empty:
        echo(f"no results: namespace {ctx.obj['namespace']!r} holds no entries"
             + (f" (the store's namespaces: {', '.join(others)})" if others else ""))
    elif not data["hits"]:
        echo("no results")
    for rank, hit in enumerate(data["hits"], start=1):
        echo(_render_hit(rank, hit))
        for turn in hit.get("context") or []:
            echo(f"      {turn['offset']:+d} {turn['text'][:160]}")  # a turn's text names its speaker
    if explain:
        Console(highlight=False).print(_trace_tree(result.trace))  # wraps long leaves instead of cropping


def _shown(text: str) -> str:
    """A trace leaf as rich prints it: no terminal control, no markup (a query's "[bold]")."""
    return escape(printable(text))


def _trace_tree(trace: dict[str, Any]) -> Tree:
    """The trace as a tree: one branch per stage, one leaf per recorded field or channel."""
    tree = Tree(f"trace · {trace.get('total_ms', 0):.1f} ms")
    now = trace.get("now")
    if now:
        tree.add(f"now: {now['value']} ({now['from']})", highlight=False)
    if trace.get("preset"):
        tree.add(f"preset: {trace['preset']} ({' → '.join(trace.get('pipeline', []))})", highlight=False)
    for stage in trace.get("stages", []):
        if "skipped" in stage:
            tree.add(f"[dim]{_shown(stage['stage'])} · skipped: {_shown(stage['skipped'])}[/]", highlight=False)
            continue
        node = tree.add(f"[bold]{_shown(stage['stage'])}[/] {stage.get('ms', 0):.2f} ms")
        for key, value in stage.items():
            if key in ("stage", "ms", "channels", "candidates", "plan") or value in (None, {}, []):
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            node.add(_shown(f"{key}: {text}"), highlight=False)
        plan = stage.get("plan")
        if plan:
            shown = {k: v for k, v in plan.items() if k not in ("query", "time_start", "time_end", "planner") and v}
            for key, value in shown.items():
                node.add(_shown(f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"),
                         highlight=False)
        candidates = stage.get("candidates") or []
        if candidates:
            branch = node.add(f"candidates (top {min(len(candidates), 10)} of {len(candidates)} recorded)"
                              if len(candidates) > 10 else f"candidates (top {len(candidates)})")
            for c in candidates[:10]:
                scores = ", ".join(f"{n} #{v['rank']} {v['score']:.3f}" for n, v in c["channels"].items())
                leaf = branch.add(f"{c['id']} {c['score']:.4f}  {scores}", highlight=False)
                if c.get("contributions"):  # what the score is made of (weighted: weight x z; learned: features)
                    leaf.add("= " + ", ".join(f"{k} {v:+.3f}{_unfound(k, c['channels'])}"
                                              for k, v in c["contributions"].items()), highlight=False)
        for name, channel in (stage.get("channels") or {}).items():
            queries = f", {channel['queries']} queries" if channel.get("queries", 1) > 1 else ""
            leaf = node.add(f"{name}: {channel['n']} candidates (k={channel['k']}{queries}) in {channel['ms']:.2f} ms, "
                            f"top score {channel['top_score']}", highlight=False)
            for key, value in channel.items():  # what else the channel recorded: what it embedded, translated…
                if key not in ("n", "k", "ms", "top_score", "queries") and value not in (None, {}, []):
                    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                    leaf.add(_shown(f"{key}: {text}"), highlight=False)
    for call in trace.get("llm_calls", []):
        tree.add(f"llm {call.get('purpose')}: {call.get('prompt_tokens')} + {call.get('completion_tokens')} tokens, "
                 f"{call.get('latency_ms')} ms{'' if call.get('ok') else ' FAILED: ' + str(call.get('error'))}",
                 highlight=False)
    return tree


@main.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def get(ctx: click.Context, ids: tuple[str, ...], as_json: bool) -> None:
    """Show entries by id."""
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        entries = mem.get(list(ids))
        namespace = mem.namespace
    missing = set(ids) - {e.id for e in entries}
    if as_json:
        _print_json({"entries": to_wire("entry", [e.to_dict() for e in entries]), "missing": sorted(missing)})
    else:
        for entry in entries:
            click.echo(json.dumps(entry.to_dict(), ensure_ascii=False))
    if missing:
        raise EngramError(f"not found in namespace {namespace!r}: {', '.join(sorted(missing))}")


@main.command("list")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Only entries that match (repeatable).")
@click.option("--order", type=click.Choice(["newest", "oldest"]), default="newest", show_default=True)
@click.option("--limit", type=int, default=50, show_default=True, help="Entries per page (1 to 1,000).")
@click.option("--cursor", default=None, help="Continue from a page's next_cursor.")
@click.option("--include-superseded", is_flag=True, help="Also entries a newer one superseded.")
@click.option("--show-expired", is_flag=True, help="Also entries past their expiry.")
@click.option("--json", "as_json", is_flag=True, help='Print {"results": [entry, ...], "next_cursor": ...}.')
@click.pass_context
def list_cmd(ctx: click.Context, filters: tuple[str, ...], order: str, limit: int, cursor: str | None,
             include_superseded: bool, show_expired: bool, as_json: bool) -> None:
    """Page through the namespace's entries, newest first (stable while others write)."""
    parsed = Filters.parse_cli(filters)
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        page = mem.list(filters=parsed, order=order, limit=limit, cursor=cursor,
                        include_superseded=include_superseded, show_expired=show_expired)
    if as_json:
        _print_json(to_wire("page", page.to_dict()))
        return
    now = time.time()
    for entry in page.results:
        text = " ".join(entry.text.split())
        # An undated entry says when it was added, so it is not read as when it happened.
        when = entry.timestamp[:10] if entry.timestamp else f"added {(entry.created_at or '')[:10]}"
        # What --include-superseded / --show-expired bring in is marked as such.
        marks = "".join((f"[superseded by {entry.superseded_by}] " if entry.superseded_by else "",
                         "[expired] " if entry.expires_at and (timestamp_epoch(entry.expires_at) or 0) <= now else ""))
        echo(f"{entry.id}  {entry.kind:<5} {when:<16}  {marks}{text[:100] + ('...' if len(text) > 100 else '')}")
    if page.next_cursor:
        args = [word for f in filters for word in ("--filter", f)]
        args += ["--order", order] if order != "newest" else []
        args += ["--limit", str(limit)] if limit != 50 else []
        args += ["--include-superseded"] if include_superseded else []
        args += ["--show-expired"] if show_expired else []
        echo(f"more: {_command_line(ctx, 'list', [*args, '--cursor', page.next_cursor])}", err=True)


def _command_line(ctx: click.Context, command: str, args: list[str]) -> str:
    """An `engram` command to run next, with the --db and -n of this one when they were given on
    the command line (an environment variable still holds for the next), quoted for a shell, a
    store URL's password masked."""
    root = ctx.find_root()
    words = ["engram"]
    if root.get_parameter_source("db") == click.core.ParameterSource.COMMANDLINE:
        words += ["--db", redact(ctx.obj["db"])]
    if root.get_parameter_source("namespace") == click.core.ParameterSource.COMMANDLINE:
        words += ["-n", ctx.obj["namespace"]]
    return " ".join(shlex.quote(w) for w in [*words, command, *args])


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print a list of {namespace, count, kinds}.")
@click.pass_context
def namespaces(ctx: click.Context, as_json: bool) -> None:
    """The store's namespaces with their entry counts."""
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        rows = mem.namespaces()
    if as_json:
        _print_json(to_wire("namespace", rows))
        return
    for row in rows:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(row["kinds"].items()))
        echo(f"{row['namespace']}\t{row['count']} ({row['current']} current)\t{kinds}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output; includes \"count\".")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Entry counts per namespace and kind, the embedding model and the file size."""
    with _memory(ctx, must_exist=True, reads_only=True) as mem:
        data = mem.stats()
    if as_json:
        _print_json(to_wire("stats", data))
        return
    engine = data.get("server_version") or f"SQLite {data.get('sqlite_version')}"
    echo(f"store     {data['path']} ({data['file_bytes'] / 1e6:.1f} MB, {engine})")
    echo(f"embedder  {data['embedder'] or '-'} (dim {data['dim'] or '-'})")
    echo(f"count     {data['count']} entries, {data['vectors']} vectors")
    for ns, info in data["namespaces"].items():
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(info["kinds"].items()))
        echo(f"  {ns}: {info['count']} ({kinds})")


@main.command()
@click.argument("ids", nargs=-1)
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Delete what matches (repeatable).")
@click.option("--all", "delete_all", is_flag=True, help="Delete every entry of the namespace.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def delete(ctx: click.Context, ids: tuple[str, ...], filters: tuple[str, ...], delete_all: bool, as_json: bool) -> None:
    """Delete entries by id and/or filter in the current namespace."""
    parsed = Filters.parse_cli(filters)
    if not ids and parsed.is_empty() and not delete_all:
        raise click.UsageError("give ids, --filter or --all")
    with _memory(ctx, must_exist=True) as mem:
        n = mem.delete(list(ids) if ids else None, filters=parsed, all=delete_all)
    if as_json:
        _print_json({"deleted": n})
    else:
        echo(f"deleted {n} entries")


@main.command("schema")
@click.argument("name", required=False, type=click.Choice(list(MODELS)))
def schema_cmd(name: str | None) -> None:
    """Print the JSON Schema of what --json prints (and the servers send): one model, or all."""
    _print_json(json_schema(name))


@main.command("presets")
@click.argument("preset", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--toml", "as_toml", is_flag=True, help="Print a shipped preset's TOML (to start your own from).")
def presets_cmd(preset: str | None, as_json: bool, as_toml: bool) -> None:
    """List the shipped presets, or check and show one (a name or a .toml path).

    A user preset is validated exactly as a search would: a mistake is one clear error line.
    """
    from .pipeline.presets import PRESET_NAMES, load_preset, preset_source, preset_to_dict

    if preset is None:
        rows = [{"name": p.name, "stages": list(p.stages), "description": p.description}
                for p in map(load_preset, PRESET_NAMES)]
        if as_json:
            _print_json(rows)
            return
        for row in rows:
            echo(f"{row['name']:<10} {row['description']}")
            echo(f"{'':<10} stages: {' → '.join(row['stages'])}")
        return
    resolved = load_preset(preset)
    if as_toml:
        text = preset_source(preset) if not preset.endswith(".toml") else Path(preset).read_text(encoding="utf-8")
        echo(text, nl=False)
    elif as_json:
        _print_json(preset_to_dict(resolved))
    else:
        data = preset_to_dict(resolved)
        echo(f"{resolved.name}: {resolved.description or '(no description)'}")
        for key, value in data.items():
            if key not in ("name", "description"):
                click.echo(f"  {key}: {json.dumps(value, ensure_ascii=False)}")


def _attach_lifecycle() -> None:
    from .cli_lifecycle import register
    from .cli_views import register as register_views
    from .server.cli import register as register_server

    register(main, _memory, _print_json, _progress)
    register_views(main, _memory, _print_json)
    register_server(main, _print_json)


_attach_lifecycle()


def _attach_eval() -> None:
    try:
        from .eval.cli import eval_cmd
    except ImportError:  # pragma: no cover - eval extras missing
        return
    main.add_command(eval_cmd, "eval")


_attach_eval()

if __name__ == "__main__":  # pragma: no cover
    main()
