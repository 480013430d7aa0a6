"""`engram sessions` and `engram timeline` (the records `engram schema` describes, as
``GET /v1/sessions`` and ``/v1/timeline`` serve them) and `engram list`'s marks for what
``--include-superseded`` and ``--show-expired`` bring in; on each backend."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from engramdb import Memory
from engramdb.cli import main
from engramdb.schema import json_schema, to_wire


@pytest.fixture()
def filled(store_target: str) -> str:
    with Memory(store_target, embedder="minilm") as mem:
        mem.add_conversation([("Alice", "I flew to Oslo yesterday."), ("Bob", "How was it?")], session_id="trip",
                             session_time="2024-03-14T10:00:00")
        mem.add_conversation([("Carol", "我下周去上海。")], session_id="会议", session_time="2024-05-20T09:00:00")
        mem.add([{"text": "A note from last year.", "timestamp": "2023-06-01T00:00:00"}])
        mem.add(["Elsewhere."], namespace="other")
    return store_target


def _run(target: str, *args: str):
    result = CliRunner().invoke(main, ["--db", target, *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_sessions_prints_what_memory_sessions_returns(filled: str) -> None:
    with Memory(filled) as mem:
        want = to_wire("session", mem.sessions())
        one = to_wire("session", mem.sessions(limit=1))
    got = json.loads(_run(filled, "sessions", "--json"))
    assert got == want and [s["session_id"] for s in got] == ["会议", "trip"]
    jsonschema.validate(got, {"type": "array", "items": json_schema("session")})
    assert json.loads(_run(filled, "sessions", "--json", "--limit", "1", "--include-superseded",
                           "--show-expired")) == one
    text = _run(filled, "sessions").splitlines()
    facts = ["1 fact" if s["facts"] == 1 else f"{s['facts']} facts" for s in want]
    assert text == [f"会议\t1 turn, {facts[0]}\tCarol\t2024-05-20 09:00",
                    f"trip\t2 turns, {facts[1]}\tAlice, Bob\t2024-03-14 10:00"]  # both turns within a minute
    assert json.loads(_run(filled, "-n", "other", "sessions", "--json")) == []
    bad = CliRunner().invoke(main, ["--db", filled, "sessions", "--limit", "0"])
    assert bad.exit_code == 1 and bad.output.startswith("error: limit must be an integer from 1 to 1000")


def test_timeline_prints_what_memory_timeline_returns(filled: str) -> None:
    with Memory(filled) as mem:
        want = to_wire("timeline", mem.timeline(field="event"))
        days = to_wire("timeline", mem.timeline(field="event", bucket="day", filters={"kind": "turn"}))
        created = to_wire("timeline", mem.timeline())
    got = json.loads(_run(filled, "timeline", "--field", "event", "--json"))
    assert got == want and got["bucket"] == "week" and got["undated"] == 0  # auto: under a year
    jsonschema.validate(got, json_schema("timeline"))
    assert json.loads(_run(filled, "timeline", "--field", "event", "--bucket", "day", "--filter", "kind=turn",
                           "--json")) == days
    assert json.loads(_run(filled, "timeline", "--json")) == created
    text = _run(filled, "timeline", "--field", "event").splitlines()
    assert text[0].startswith("event per week: 2023-06-01 00:00 – 2024-05-2") and text[0].endswith(", 0 undated")
    assert [line.split()[:2] for line in text[1:]] == [[p["start"], str(p["count"])] for p in want["points"]]
    bad = CliRunner().invoke(main, ["--db", filled, "timeline", "--filter", "when=now"])
    assert bad.exit_code == 1 and bad.output.startswith("error: unknown filter 'when'")


def test_list_marks_superseded_and_expired_entries(store_target: str) -> None:
    with Memory(store_target, embedder="minilm") as mem:
        [old] = mem.add(["Alice lives in Berlin."])
        [new] = mem.add(["Alice moved to Lisbon."], supersedes=[old])
        [gone] = mem.add(["The door code is 4471."], expires_at="2001-01-01")
    plain = _run(store_target, "list").splitlines()
    assert len(plain) == 1 and plain[0].startswith(new) and "[" not in plain[0]
    both = {line.split()[0]: line for line in _run(store_target, "list", "--include-superseded",
                                                   "--show-expired").splitlines()}
    assert both[old].endswith(f"[superseded by {new}] Alice lives in Berlin.")
    assert both[gone].endswith("[expired] The door code is 4471.")
    assert both[new].endswith("  Alice moved to Lisbon.")
