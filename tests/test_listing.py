"""Listing with stable cursors, namespaces, and the search options a server passes through
(k beyond the channels' depth, threshold, presets as data, bad arguments as InputError)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import Entry, InputError, Memory
from engramdb.cli import main


def page_all(mem: Memory, **kwargs) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = mem.list(cursor=cursor, **kwargs)
        seen += [e.id for e in page]  # type: ignore[misc]
        cursor = page.next_cursor
        if cursor is None:
            return seen


def test_pages_cover_every_entry_once_in_order(mem: Memory) -> None:
    ids = mem.add([Entry(text=f"fact {i}", persons=["Alice"] if i % 3 == 0 else []) for i in range(23)])
    assert page_all(mem, limit=5) == ids[::-1]
    assert page_all(mem, limit=4, order="oldest") == ids
    assert page_all(mem, limit=100) == ids[::-1]
    alice = page_all(mem, limit=2, filters={"person": "Alice"})
    assert alice == [ids[i] for i in range(22, -1, -1) if i % 3 == 0]
    last = mem.list(limit=23)
    assert last.next_cursor is None and len(last) == 23
    assert mem.list(namespace="elsewhere").results == []


def test_pages_neither_repeat_nor_skip_while_others_write(mem: Memory) -> None:
    stable = mem.add([f"stable fact {i}" for i in range(60)])
    churn = mem.add([f"churn fact {i}" for i in range(60)])
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        n = 0
        try:
            while not stop.is_set() and n < 400:
                mem.add([f"new fact {n}"])
                if n < len(churn):
                    mem.delete(churn[n])
                n += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for order in ("newest", "oldest"):
            seen = page_all(mem, limit=7, order=order)
            assert len(seen) == len(set(seen)), "a page repeated an entry"
            positions = [seen.index(i) for i in stable]  # every stable entry, exactly once
            assert positions == sorted(positions, reverse=order == "newest")
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not errors


def test_cursor_and_limit_errors(mem: Memory) -> None:
    mem.add([f"fact {i}" for i in range(5)])
    cursor = mem.list(limit=2).next_cursor
    with pytest.raises(InputError, match="made for order='newest'"):
        mem.list(cursor=cursor, order="oldest")
    for bad in ("garbage", "", "eyJ2IjoxfQ", 5):
        with pytest.raises(InputError, match="cursor"):
            mem.list(cursor=bad)  # type: ignore[arg-type]
    for bad_limit in (0, 1001, "10", True):
        with pytest.raises(InputError, match="limit must be"):
            mem.list(limit=bad_limit)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="order must be"):
        mem.list(order="random")


def test_namespaces_with_counts(mem: Memory) -> None:
    mem.add(["a fact", "another"], namespace="alice")
    mem.add_conversation([("Bob", "I moved to Lisbon last week.")], session_id="s", namespace="bob")
    rows = {r["namespace"]: r for r in mem.namespaces()}
    assert rows["alice"] == {"namespace": "alice", "count": 2, "current": 2, "kinds": {"fact": 2}}
    assert rows["bob"]["kinds"]["turn"] == 1 and rows["bob"]["count"] == mem.count(namespace="bob")
    [old] = mem.add("Alice lives in Berlin.", namespace="carol")
    mem.add("Alice moved to Lisbon.", namespace="carol", supersedes=[old])
    carol = {r["namespace"]: r for r in mem.namespaces()}["carol"]
    assert (carol["count"], carol["current"]) == (2, 1) and carol["current"] == mem.count(namespace="carol")


def test_k_beyond_the_channel_depth_returns_k_hits(mem: Memory) -> None:
    mem.add([f"tea note number {i}" for i in range(320)])
    for preset in ("default", "lexical", "semantic", "rrf"):
        assert len(mem.search("tea note", k=250, preset=preset)) == 250
    assert len(mem.search("tea note", k=1000)) == 320


def test_threshold_drops_low_scores(mem: Memory) -> None:
    mem.add(["Alice likes green tea.", "Bob repairs old bicycles.", "The meeting is on Friday."]
            + [f"filler text {i}" for i in range(30)])
    everything = mem.search("green tea", k=10)
    cut = everything[0].score / 2
    kept = mem.search("green tea", k=10, threshold=cut)
    assert [h.id for h in kept] == [h.id for h in everything if h.score >= cut]
    assert kept.trace["threshold"] == {"value": cut, "dropped": len(everything) - len(kept)}
    assert len(kept) < len(everything)
    for bad in (float("nan"), "0.5", True):
        with pytest.raises(InputError, match="threshold must be a number"):
            mem.search("tea", threshold=bad)  # type: ignore[arg-type]


def test_bad_search_arguments_are_input_errors_even_on_an_empty_store(tmp_path: Path) -> None:
    with Memory(tmp_path / "empty.db", embedder="minilm") as mem:
        for kwargs in ({"group_by": "chapter"}, {"k": 0}, {"k": 10_001}, {"filters": {"colour": "red"}},
                       {"preset": "nope"}, {"preset": {"channels": {"lexical": {"k": "ten"}}}},
                       {"preset": {"fusion": {"method": "weighted", "normalization": "zscore",
                                              "calibration": [float("nan"), 1]}, "channels": {"lexical": {}}}},
                       {"preset": {"channels": {"lexical": {"k": 10**9}}}}, {"preset": 42}, {"planner": "oracle"}):
            with pytest.raises(InputError):
                mem.search("anything", **kwargs)


def test_presets_as_data_and_files_switched_off(tmp_path: Path) -> None:
    user = tmp_path / "mine.toml"
    user.write_text('extends = "default"\n[channels.lexical]\nk = 7\n', encoding="utf-8")
    table = {"extends": "default", "channels": {"lexical": {"k": 7, "weight": 0.6}}}
    with Memory(tmp_path / "p.db", embedder="minilm") as mem:
        mem.add(["Alice likes green tea.", "Bob likes coffee."])
        from_table = mem.search("green tea", k=2, preset=table)
        from_file = mem.search("green tea", k=2, preset=str(user))
        assert from_table[0].text == from_file[0].text == "Alice likes green tea."
        assert from_table.trace["stages"][1]["channels"]["lexical"]["k"] == 7
    with Memory(tmp_path / "p.db", allow_preset_files=False) as locked:
        assert locked.search("green tea", k=1, preset=table)[0].text == "Alice likes green tea."
        assert locked.search("green tea", k=1, preset="molore")[0].text == "Alice likes green tea."
        for refused in (str(user), {"extends": str(user)}, {"extends": "default", "rerank": {"model": "/etc"}}):
            with pytest.raises(InputError, match="switched off"):
                locked.search("green tea", preset=refused)


def test_the_next_page_command_list_prints_runs_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`list` prints the command for the next page on stderr; it used to be `engram list --cursor
    …` alone, which read ./engram.db and dropped the filter and page size. Run as printed (in the
    folder where ./engram.db is another store), its pages hold the rest of the filtered entries."""
    import shlex

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    db = str(tmp_path / "my store.db")  # a space: the printed command quotes it
    assert runner.invoke(main, ["--embedder", "minilm", "add", "a decoy in ./engram.db"]).exit_code == 0
    notes = [{"text": f"{kind} {i}", "kind": kind} for i in range(5) for kind in ("chunk", "fact")]
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(n) + "\n" for n in notes))
    assert runner.invoke(main, ["--db", db, "-n", "team", "--embedder", "minilm", "import", "e.jsonl"]).exit_code == 0
    seen: list[str] = []
    result = runner.invoke(main, ["--db", db, "-n", "team", "list", "--filter", "kind=chunk", "--limit", "2",
                                  "--order", "oldest"])
    for _ in range(5):
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        seen += [line.split("  ")[-1] for line in lines]
        hint = [line for line in result.stderr.splitlines() if line.startswith("more: ")]
        if not hint:
            break
        words = shlex.split(hint[0].removeprefix("more: "))
        assert words[:6] == ["engram", "--db", db, "-n", "team", "list"], words
        result = runner.invoke(main, words[1:])
    assert seen == [f"chunk {i}" for i in range(5)]


def test_cli_list_namespaces_and_threshold(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "cli.db")

    def run(*args: str):
        return runner.invoke(main, ["--db", db, "--embedder", "minilm", *args])

    assert run("add", "one", "two", "three").exit_code == 0
    assert run("-n", "bob", "add", "four").exit_code == 0
    first = json.loads(run("list", "--limit", "2", "--json").output)
    assert [e["text"] for e in first["results"]] == ["three", "two"] and first["next_cursor"]
    second = json.loads(run("list", "--limit", "2", "--cursor", first["next_cursor"], "--json").output)
    assert second == {"results": second["results"], "next_cursor": None}
    assert [e["text"] for e in second["results"]] == ["one"]
    plain = run("list", "--limit", "2")
    assert plain.exit_code == 0 and "three" in plain.output and f"more: engram --db {db} list --limit 2 --cursor" in plain.output
    # An undated entry's line says when it was added; a dated one shows when it happened.
    added = first["results"][0]["created_at"][:10]
    assert f"fact  added {added}  three" in plain.output
    bad = run("list", "--cursor", "nope")
    assert bad.exit_code == 1 and bad.output.startswith("error: cursor")
    rows = json.loads(run("namespaces", "--json").output)
    assert [(r["namespace"], r["count"]) for r in rows] == [("bob", 1), ("default", 3)]
    found = json.loads(run("search", "three", "--threshold", "1.01", "--json").output)
    assert found["hits"] == [] and found["trace"]["threshold"]["value"] == 1.01
    assert run("-n", "dated", "add", "Bob visited Berlin", "--timestamp", "2023-05-01").exit_code == 0
    dated = run("-n", "dated", "list", "--limit", "1").output.splitlines()[0]
    assert dated.endswith("fact  2023-05-01        Bob visited Berlin") and "added" not in dated


def test_timeline_counts_entries_per_period_by_added_or_event_time(mem: Memory) -> None:
    mem.add([{"text": "May note.", "timestamp": "2023-05-02T09:00:00"},
             {"text": "Another May note.", "timestamp": "2023-05-30T23:59:00", "kind": "turn"},
             {"text": "July note.", "timestamp": "2023-07-01T00:00:00"},
             {"text": "A note without a time."}])
    by_event = mem.timeline(field="event", bucket="month")
    assert by_event["bucket"] == "month" and by_event["undated"] == 1
    assert by_event["points"] == [{"start": "2023-05-01", "count": 2}, {"start": "2023-07-01", "count": 1}]
    assert by_event["first"] == "2023-05-02T09:00:00+00:00" and by_event["last"] == "2023-07-01T00:00:00+00:00"
    weeks = mem.timeline(field="event", bucket="week")["points"]  # weeks start on Monday (UTC)
    assert weeks == [{"start": "2023-05-01", "count": 1}, {"start": "2023-05-29", "count": 1},
                     {"start": "2023-06-26", "count": 1}]
    assert mem.timeline(field="event")["bucket"] == "day"  # auto: 60 days of data or fewer
    assert mem.timeline(field="event", filters={"kind": "turn"})["points"] == [{"start": "2023-05-30", "count": 1}]
    added = mem.timeline()
    assert added["field"] == "created" and added["undated"] == 0 and sum(p["count"] for p in added["points"]) == 4
    assert mem.timeline(namespace="elsewhere") == {"field": "created", "bucket": "day", "first": None, "last": None,
                                                   "undated": 0, "points": []}
    mem.add([{"text": "Much later.", "timestamp": "2035-01-05T00:00:00"}])
    assert mem.timeline(field="event")["bucket"] == "year"  # auto: over ten years
    for bad in ({"field": "when"}, {"bucket": "hour"}):
        with pytest.raises(InputError):
            mem.timeline(**bad)


def test_sessions_lists_conversations_with_their_turns_facts_and_speakers(mem: Memory) -> None:
    mem.add_conversation([("Alice", "I flew to Oslo yesterday."), ("Bob", "How was it?")], session_id="trip",
                         session_time="2024-03-14T10:00:00")
    mem.add_conversation([("Carol", "我下周去上海。")], session_id="会议", session_time="2024-03-20T09:00:00")
    mem.add(["A note outside any session."])
    sessions = mem.sessions()
    assert [s["session_id"] for s in sessions] == ["会议", "trip"]  # the most recently written first
    trip = sessions[1]
    assert (trip["turns"], trip["speakers"]) == (2, ["Alice", "Bob"]) and trip["facts"] >= 1
    assert trip["count"] == trip["turns"] + trip["facts"] and trip["end"] == "2024-03-14T10:00:00+00:00"
    assert [s["session_id"] for s in mem.sessions(limit=1)] == ["会议"]
    assert mem.sessions(namespace="elsewhere") == []
    with pytest.raises(InputError):
        mem.sessions(limit=0)


def test_a_sessions_time_range_is_its_turns_times(mem: Memory) -> None:
    """A session's start and end are when its turns were said, not the times its facts are about
    ("yesterday", "下周" restated as dates); a session that holds no turns gives its entries'."""
    mem.add_conversation([("Alice", "I flew to Oslo yesterday."), ("Bob", "Are you going back next year?")],
                         session_id="trip", session_time="2024-03-14T10:00:00")
    mem.add_conversation([("Carol", "我下周去上海。")], session_id="会议", session_time="2024-03-20T09:00:00")
    mem.add([{"text": "A fact kept from a session whose turns are gone.", "timestamp": "2023-01-02T03:04:05",
              "source": {"session_id": "old"}}])
    by_id = {s["session_id"]: s for s in mem.sessions()}
    facts = [e for e in mem.list(filters={"kind": "fact"}, limit=100).results if e.source.session_id != "old"]
    assert any(e.timestamp and e.timestamp < "2024-03-14" for e in facts)  # "yesterday": the 13th
    assert any(e.timestamp and e.timestamp > "2024-03-21" for e in facts)  # "下周", "next year": later
    turns = mem.list(filters={"kind": "turn", "session_id": "trip"}, limit=10, order="oldest").results
    assert (by_id["trip"]["start"], by_id["trip"]["end"]) == (turns[0].timestamp, turns[-1].timestamp)
    assert by_id["trip"]["start"].startswith("2024-03-14T10:00") and by_id["trip"]["end"].startswith("2024-03-14")
    assert (by_id["会议"]["start"], by_id["会议"]["end"]) == ("2024-03-20T09:00:00+00:00",) * 2
    assert (by_id["old"]["turns"], by_id["old"]["start"], by_id["old"]["end"]) == (
        0, "2023-01-02T03:04:05+00:00", "2023-01-02T03:04:05+00:00")
