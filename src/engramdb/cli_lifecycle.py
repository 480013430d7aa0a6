"""The lifecycle commands of `engram`: update, history, purge-expired, reindex (one per `Memory` method).

`register` adds them to the main group; it is handed the CLI's store opener and JSON printer
so this module needs nothing from `engramdb.cli` itself.
"""

from __future__ import annotations

import json
from typing import Any, Callable, ContextManager

import click

from .cli_text import counted, echo
from .memory import Memory
from .schema import to_wire
from .validation import json_or_text

OpenMemory = Callable[..., ContextManager[Memory]]


def parse_meta(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--meta KEY=VALUE`` options as metadata: JSON values keep their type, the rest is text."""
    metadata: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair or not pair.split("=", 1)[0].strip():  # a key "" could never be filtered on
            raise click.UsageError(f"--meta expects KEY=VALUE with a key, got {pair!r}")
        key, value = pair.split("=", 1)
        metadata[key] = json_or_text(value)
    return metadata


def register(main: click.Group, open_memory: OpenMemory, print_json: Callable[[Any], None],
             progress: Callable[[str, bool], ContextManager[Callable[[int, int], None]]]) -> None:
    @main.command()
    @click.argument("entry_id", metavar="ID")
    @click.option("--text", default=None, help="New text (analysed and embedded again).")
    @click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE",
                  help="Metadata (repeatable); replaces the entry's metadata whole.")
    @click.option("--person", "persons", multiple=True, help="Replace the persons (repeatable).")
    @click.option("--keyword", "keywords", multiple=True, help="Replace the keywords (repeatable).")
    @click.option("--entity", "entities", multiple=True, help="Replace the entities (repeatable).")
    @click.option("--location", default=None, help="New location ('' clears it).")
    @click.option("--topic", default=None, help="New topic ('' clears it).")
    @click.option("--timestamp", default=None, help="New event time, ISO 8601.")
    @click.option("--timestamp-end", "timestamp_end", default=None, metavar="ISO",
                  help="New end of the period the entry is about, exclusive ('' clears it).")
    @click.option("--expires", default=None, metavar="ISO", help="New expiry time ('' clears it).")
    @click.option("--actor", default=None, help="Who makes the change (recorded in the history).")
    @click.option("--json", "as_json", is_flag=True, help="Print the updated entry as JSON.")
    @click.pass_context
    def update(ctx: click.Context, entry_id: str, text: str | None, meta: tuple[str, ...], persons: tuple[str, ...],
               keywords: tuple[str, ...], entities: tuple[str, ...], location: str | None, topic: str | None,
               timestamp: str | None, timestamp_end: str | None, expires: str | None, actor: str | None,
               as_json: bool) -> None:
        """Change an entry in place (same id); the old version stays in its history."""
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = text
        if meta:
            changes["metadata"] = parse_meta(meta)
        if persons:
            changes["persons"] = list(persons)
        if keywords:
            changes["keywords"] = list(keywords)
        if entities:
            changes["entities"] = list(entities)
        for name, value in (("location", location), ("topic", topic), ("timestamp_end", timestamp_end)):
            if value is not None:
                changes[name] = value or None
        if timestamp is not None:
            changes["timestamp"] = timestamp
        if expires is not None:
            changes["expires_at"] = expires or None
        if not changes:
            raise click.UsageError("give at least one of --text, --meta, --person, --keyword, --entity, --location, "
                                   "--topic, --timestamp, --timestamp-end, --expires")
        with open_memory(ctx, must_exist=True) as mem:
            entry = mem.update(entry_id, actor=actor, **changes)
        if as_json:
            print_json(to_wire("entry", entry.to_dict()))
        else:
            click.echo(json.dumps(entry.to_dict(), ensure_ascii=False))

    @main.command()
    @click.argument("entry_id", metavar="ID")
    @click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON list, oldest first.")
    @click.pass_context
    def history(ctx: click.Context, entry_id: str, as_json: bool) -> None:
        """Every ADD, UPDATE and DELETE of an entry, oldest first (also after a delete)."""
        with open_memory(ctx, must_exist=True, reads_only=True) as mem:
            events = mem.history(entry_id)
        if as_json:
            print_json(to_wire("history_event", [e.to_dict() for e in events]))
            return
        for event in events:
            shown = event.new or event.old
            text = " ".join(shown.text.split())[:100] if shown else ""
            echo(f"{event.at}  {event.event:<6} {event.actor or '-':<12} {text}")

    @main.command("purge-expired")
    @click.option("--all-namespaces", is_flag=True, help="Purge every namespace, not only the current one.")
    @click.option("--actor", default=None, help="Who purges (recorded in the history).")
    @click.option("--json", "as_json", is_flag=True)
    @click.pass_context
    def purge_expired(ctx: click.Context, all_namespaces: bool, actor: str | None, as_json: bool) -> None:
        """Delete the entries whose expiry has passed (they are already out of search)."""
        with open_memory(ctx, must_exist=True) as mem:
            n = mem.purge_expired(all_namespaces=all_namespaces, actor=actor)
        if as_json:
            print_json({"deleted": n})
        else:
            echo(f"deleted {counted(n, 'expired entry', 'expired entries')}")

    @main.command()
    @click.option("--all-namespaces", is_flag=True, help="Reindex every namespace, not only the current one.")
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
    @click.pass_context
    def reindex(ctx: click.Context, all_namespaces: bool, as_json: bool, quiet: bool) -> None:
        """Write every entry's index terms again with this version's text analysis (after an
        upgrade: e.g. Chinese names found in either script). Nothing is embedded again; fields,
        history and session order are kept."""
        with open_memory(ctx, must_exist=True) as mem, progress("reindexing", quiet) as bar:
            report = mem.reindex(all_namespaces=all_namespaces, progress=bar)
        if as_json:
            print_json(report)
        else:
            echo(f"reindexed {report['reindexed']} of {report['entries']} entries in "
                 f"{counted(len(report['namespaces']), 'namespace')} ({report['skipped']} skipped: changed meanwhile "
                 "or without a vector)")
