"""The read-only views of `engram` that `engram schema` describes and the HTTP API serves:
``engram sessions`` (`Memory.sessions`, ``GET /v1/sessions``) and ``engram timeline``
(`Memory.timeline`, ``GET /v1/timeline``), with the same options and, with ``--json``, the
same records (``engram schema session``, ``engram schema timeline``).

`register` adds them to the main group; it is handed the CLI's store opener and JSON printer,
as `cli_lifecycle` is.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager

import click

from .cli_text import echo
from .memory import MAX_K, TIMELINE_BUCKETS, TIMELINE_FIELDS, Memory
from .schema import to_wire
from .store.base import Filters

OpenMemory = Callable[..., ContextManager[Memory]]
BAR = 40  # the longest bar of `engram timeline`, in characters


def _day(iso: str | None) -> str:
    return iso[:16].replace("T", " ") if iso else "-"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def register(main: click.Group, open_memory: OpenMemory, print_json: Callable[[Any], None]) -> None:
    @main.command()
    @click.option("--limit", type=int, default=100, show_default=True, help=f"At most this many sessions (1 to {MAX_K:,}).")
    @click.option("--include-superseded", is_flag=True, help="Also entries a newer one superseded.")
    @click.option("--show-expired", is_flag=True, help="Also entries past their expiry.")
    @click.option("--json", "as_json", is_flag=True, help="Print a list of sessions (engram schema session).")
    @click.pass_context
    def sessions(ctx: click.Context, limit: int, include_superseded: bool, show_expired: bool, as_json: bool) -> None:
        """The namespace's conversation sessions, the most recently written first: turns,
        facts, speakers and the time of the first and last turn."""
        with open_memory(ctx, must_exist=True, reads_only=True) as mem:
            rows = mem.sessions(limit=limit, include_superseded=include_superseded, show_expired=show_expired)
        if as_json:
            print_json(to_wire("session", rows))
            return
        for row in rows:
            start, end = _day(row["start"]), _day(row["end"])
            span = start if start == end else f"{start} – {end}"
            echo(f"{row['session_id']}\t{_count(row['turns'], 'turn')}, {_count(row['facts'], 'fact')}\t"
                 f"{', '.join(row['speakers']) or '-'}\t{span}")

    @main.command()
    @click.option("--field", type=click.Choice(TIMELINE_FIELDS), default="created", show_default=True,
                  help="Count entries by when they were added, or by their own time (event).")
    @click.option("--bucket", type=click.Choice(("auto", *TIMELINE_BUCKETS)), default="auto", show_default=True,
                  help="The period counted (UTC; weeks from Monday); auto picks one from the span.")
    @click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE", help="Only entries that match (repeatable).")
    @click.option("--include-superseded", is_flag=True, help="Also entries a newer one superseded.")
    @click.option("--show-expired", is_flag=True, help="Also entries past their expiry.")
    @click.option("--json", "as_json", is_flag=True, help="Print the timeline (engram schema timeline).")
    @click.pass_context
    def timeline(ctx: click.Context, field: str, bucket: str, filters: tuple[str, ...], include_superseded: bool,
                 show_expired: bool, as_json: bool) -> None:
        """How many entries per day, week, month or year, oldest first (empty periods left out)."""
        parsed = Filters.parse_cli(filters)
        with open_memory(ctx, must_exist=True, reads_only=True) as mem:
            data = mem.timeline(filters=parsed, field=field, bucket=bucket, include_superseded=include_superseded,
                                show_expired=show_expired)
        if as_json:
            print_json(to_wire("timeline", data))
            return
        undated = f", {data['undated']} undated" if field == "event" else ""
        echo(f"{data['field']} per {data['bucket']}: {_day(data['first'])} – {_day(data['last'])}{undated}")
        top = max((p["count"] for p in data["points"]), default=0)
        for point in data["points"]:
            bar = "█" * max(1, round(BAR * point["count"] / top))
            echo(f"{point['start']}  {point['count']:>6}  {bar}")
