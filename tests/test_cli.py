"""The `engram` command line, run in-process with click's runner on a real store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb.cli import main

NOTES = Path(__file__).resolve().parents[1] / "examples" / "notes"


@pytest.fixture()
def run(tmp_path: Path):
    runner = CliRunner()
    db = str(tmp_path / "cli.db")

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(main, ["--db", db, "--embedder", "minilm", *args], input=input)

    return invoke


def test_import_search_json_stats_delete(run):
    result = run("import", str(NOTES), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["files"] == 5 and report["written"] == report["entries"]

    result = run("search", "staging database port", "-k", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["query"] == "staging database port"
    top = data["hits"][0]
    assert set(top) >= {"id", "text", "score", "source", "channels"}
    assert "5433" in top["text"] and top["source"]["path"] == "projects/release-v2.3.md"
    assert top["channels"]["lexical"]["rank"] == 1 and "score" in top["channels"]["semantic"]

    result = run("search", "staging database port", "--explain")
    assert result.exit_code == 0 and "recall" in result.output and "lexical:" in result.output
    # Idle stages say why, brackets and all (the tree must not read "[diversify]" as markup).
    assert "diversify · skipped: no [diversify] mmr_lambda" in result.output
    assert "rerank · skipped: no cross-encoder (set [rerank] model or ENGRAM_RERANKER)" in result.output
    assert "group" in result.output and "group · skipped" not in result.output
    assert "preset: default (plan → recall → fuse" in result.output
    # a fused term of a channel that did not return the candidate says so (it sits at the floor)
    lines = [line for line in result.output.splitlines() if "= semantic" in line]
    assert lines and any("lexical" in line and "(not found)" not in line for line in lines)
    assert any("lexical" in line and "(not found)" in line for line in lines)
    context = run("search", 'User: "I moved the staging box." Assistant: "Which port?" User: "The database port"',
                  "--explain")
    assert "embedded: moved staging box" in context.output  # what the semantic channel read is in the tree

    stats = json.loads(run("stats", "--json").output)
    assert stats["count"] == report["entries"]

    result = run("delete", "--filter", "path=projects/onboarding.md", "--json")
    assert json.loads(result.output)["deleted"] == 2
    assert json.loads(run("stats", "--json").output)["count"] == report["entries"] - 2


def test_add_with_fields_and_filtered_search(run):
    result = run("add", "Dinner with Carla at Luigi's", "--person", "Carla", "--meta", "source=diary",
                 "--timestamp", "2024-02-03T19:00:00")
    assert result.exit_code == 0
    entry_id = result.output.strip()
    run("add", "Dinner with Marek at home", "--person", "Marek")
    found = json.loads(run("search", "dinner", "--filter", "person=carla", "--json").output)
    assert [h["id"] for h in found["hits"]] == [entry_id]
    found = json.loads(run("search", "dinner", "--filter", "metadata.source=diary", "--json").output)
    assert [h["id"] for h in found["hits"]] == [entry_id]
    got = json.loads(run("get", entry_id, "--json").output)
    assert got["entries"][0]["persons"] == ["Carla"] and got["entries"][0]["metadata"] == {"source": "diary"}


def test_errors_are_one_line_with_nonzero_exit(run, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": 3}\n', encoding="utf-8")
    result = run("import", str(bad))
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: ") and "bad.jsonl:2" in result.output
    assert len(result.output.strip().splitlines()) == 1

    result = run("search", "anything", "--filter", "colour=red")
    assert result.exit_code != 0 and "error" in result.output.lower()
    result = run("search", "x", "--filter", "person=a", "--preset", "nope")
    assert result.exit_code != 0


def test_a_failed_import_into_a_new_path_leaves_no_store_behind(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": 3}\n', encoding="utf-8")
    db = tmp_path / "new.db"
    result = CliRunner().invoke(main, ["--db", str(db), "import", str(bad)])
    assert result.exit_code == 1 and "bad.jsonl:2" in result.output
    assert not list(tmp_path.glob("new.db*"))
    good = tmp_path / "good.jsonl"
    good.write_text('{"text": "kept"}\n', encoding="utf-8")
    assert CliRunner().invoke(main, ["--db", str(db), "import", str(good)]).exit_code == 0
    assert CliRunner().invoke(main, ["--db", str(db), "import", str(bad)]).exit_code == 1
    assert db.exists()  # a store with entries is never removed


def test_search_on_missing_store_is_a_clear_error(tmp_path: Path):
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "none.db"), "search", "hello"])
    assert result.exit_code == 1 and "no store at" in result.output


def test_slips_in_a_store_path_a_filter_or_a_time_are_named(run, tmp_path: Path, monkeypatch):
    """From an outside check: `--db ""` (an unset variable) wrote ./engram.db; a folder given as
    the store blamed a missing folder; an object as a metadata filter matched nothing in the CLI
    while the library refused it; `--meta =3` stored a key no filter can name; a zone name read as
    "no such time of day"; the trace's expiry clock was an epoch number."""
    from engramdb import InputError, Memory, StoreError

    monkeypatch.chdir(tmp_path)
    empty = CliRunner().invoke(main, ["--db", "", "add", "where does this go?"])
    assert empty.exit_code == 2 and "names no store" in empty.output and not (tmp_path / "engram.db").exists()
    with pytest.raises(InputError, match="the store path is an empty string"):
        Memory("")
    folder = tmp_path / "adir"
    folder.mkdir()
    for args in (["add", "x"], ["search", "x"]):
        result = CliRunner().invoke(main, ["--db", str(folder), *args])
        assert result.exit_code == 1 and "adir is a folder; a store is a file" in result.output, result.output
    with pytest.raises(StoreError, match="is a folder"):
        Memory(folder)
    assert run("add", "cfg note", "--meta", 'cfg={"a": 1}').exit_code == 0
    listed = run("list", "--filter", 'metadata.cfg={"a": 1}', "--json")
    assert listed.exit_code == 1 and "not a JSON object" in listed.output
    assert json.loads(run("list", "--filter", 'metadata.cfg="{\\"a\\": 1}"', "--json").output)["results"] == []
    keyless = run("add", "empty key", "--meta", "=3")
    assert keyless.exit_code == 2 and "KEY=VALUE with a key" in keyless.output
    zone = run("add", "x", "--timestamp", "2024-01-01T10:00:00 PST")
    assert zone.exit_code == 1 and "a time zone it cannot read ('PST')" in zone.output
    assert run("add", "-", input="").output.count("stdin (-) held no text") == 1
    trace = json.loads(run("search", "cfg", "--explain", "--json").output)["trace"]
    assert trace["filters"]["visible_at"].endswith("+00:00")
    twice = run("list", "--filter", "until=2024-01-01", "--filter", "until=2025-01-01")  # the last one won
    assert twice.exit_code == 1 and "filter until is given twice" in twice.output
    assert run("list", "--filter", "person=Ann", "--filter", "person=Bob").exit_code == 0  # a list filter adds up
    typo = run("-n", "typo", "search", "cfg")  # a mistyped namespace: said, with the ones that hold entries
    assert typo.exit_code == 0 and "no results: namespace 'typo' holds no entries (the store's namespaces: default)" \
        in typo.output


CONVERSATIONS = Path(__file__).resolve().parent / "fixtures" / "conversations"


def test_conversation_import_search_now_and_add_turn(run):
    result = run("import", str(CONVERSATIONS / "openai_chat.json"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["format"] == "openai" and report["turns"] == 3 and report["extractor"] == "offline"
    again = run("import", str(CONVERSATIONS / "openai_chat.json"))
    assert again.exit_code == 0 and "1 session unchanged" in again.output
    assert report["skipped"] == {"system": 1} and "; 1 message skipped: 1 system" in again.output

    # "last month" said on 8 May 2023 -> April 2023; "上周" -> 1-7 May 2023.
    result = run("search", "Where did the user move last month?", "-k", "3", "--json", "--explain")
    data = json.loads(result.output)
    assert data["trace"]["now"]["value"] == "2023-05-08T13:56:00+00:00"
    assert "Berlin" in data["hits"][0]["text"]
    facts = [h for h in data["hits"] if h["kind"] == "fact"]
    assert any("in April 2023" in h["text"] for h in facts)
    later = run("search", "who visited last week", "--now", "2023-05-10", "--json", "--explain")
    window = json.loads(later.output)["trace"]["stages"][0]["time_window"]
    assert window["start"].startswith("2023-05-01") and window["end"].startswith("2023-05-08")

    result = run("add-turn", "assistant", "Say hi to 小王 from me!", "--session", "chat-42", "--json")
    assert result.exit_code == 0, result.output
    reported = json.loads(result.output)
    assert reported["turns"] == 1 and reported["turn_id"] == "chat-42:5"  # the session held four turns
    assert json.loads(run("get", reported["id"], "--json").output)["entries"][0]["source"]["turn_id"] == "chat-42:5"
    # a turn in a language the offline extractor does not restate is stored all the same, and says so
    russian = run("add-turn", "user", "Вчера я купила новую машину.", "--session", "chat-42")
    assert russian.exit_code == 0 and "added turn chat-42:6 [" in russian.output and "and 0 facts" in russian.output
    assert "restates English and Chinese" in russian.output
    one = run("add-turn", "user", "Yesterday I bought a new car.", "--session", "chat-42")
    assert "and 1 fact to chat-42" in one.output and "restates" not in one.output
    again = run("add-turn", "user", "Yesterday I bought a new car.", "--session", "chat-42")
    assert again.output.strip() == "chat-42 holds that turn already (chat-42:7): nothing added"

    bad = run("import", str(CONVERSATIONS / "bad_turns.jsonl"))
    assert bad.exit_code == 1 and "bad_turns.jsonl:3: missing 'speaker'" in bad.output
    wrong = run("import", str(CONVERSATIONS / "turns.jsonl"), "--format", "locomo")
    assert wrong.exit_code == 1 and "turns.jsonl" in wrong.output


def test_presets_lists_checks_and_shows(tmp_path: Path):
    runner = CliRunner()
    listing = runner.invoke(main, ["presets", "--json"])
    assert listing.exit_code == 0
    rows = json.loads(listing.output)
    by_name = {row["name"]: row for row in rows}
    assert {"default", "simplemem", "ping", "lychee", "molore"} <= set(by_name)
    assert by_name["ping"]["stages"] == ["plan", "recall", "fuse", "gate", "group"]
    shown = json.loads(runner.invoke(main, ["presets", "molore", "--json"]).output)
    assert shown["group"]["per_group"] == 3 and shown["gate"]["retry_min_relative"] == 0.2
    assert runner.invoke(main, ["presets", "ping", "--toml"]).output.startswith("# PingHybridSearch")
    mine = tmp_path / "mine.toml"
    mine.write_text(runner.invoke(main, ["presets", "default", "--toml"]).output.replace("k = 100", "k = 7", 1))
    ok = runner.invoke(main, ["presets", str(mine), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.output)["channels"]["semantic"]["k"] == 7
    mine.write_text('[channels.lexical]\nk = 5\n[pipeline]\nstages = ["gate", "recall", "fuse"]\n')
    bad = runner.invoke(main, ["presets", str(mine)])
    assert bad.exit_code == 1 and "error: preset 'mine': pipeline.stages: 'gate' must come after 'fuse'" in bad.output


def test_update_sets_every_field_memory_update_does(run):
    entry_id = run("add", "The spring exhibition opens.").output.strip()
    done = run("update", entry_id, "--timestamp", "2024-04-01", "--timestamp-end", "2024-07-01", "--location", "Oslo",
               "--topic", "art", "--entity", "National Museum", "--json")
    assert done.exit_code == 0, done.output
    entry = json.loads(done.output)
    assert (entry["timestamp_end"], entry["location"], entry["topic"], entry["entities"]) == \
        ("2024-07-01T00:00:00+00:00", "Oslo", "art", ["National Museum"])
    cleared = json.loads(run("update", entry_id, "--timestamp-end", "", "--location", "", "--json").output)
    assert (cleared["timestamp_end"], cleared["location"], cleared["topic"]) == (None, None, "art")


def test_add_reads_stdin_where_a_dash_stands(run):
    """`-` among the TEXTs is stdin's lines, in its place (as `cat a - b`); never the text "-"."""
    result = run("add", "first", "-", "last", "--json", input="from stdin\n\nalso from stdin\n")
    assert result.exit_code == 0, result.output
    ids = json.loads(result.output)["ids"]
    got = json.loads(run("get", *ids, "--json").output)["entries"]
    assert [e["text"] for e in got] == ["first", "from stdin", "also from stdin", "last"]
    bom = json.loads(run("add", "-", "--json", input="\ufeffwith a byte-order mark\r\n").output)["ids"]
    assert json.loads(run("get", *bom, "--json").output)["entries"][0]["text"] == "with a byte-order mark"
    twice = run("add", "-", "x", "-", input="a\n")
    assert twice.exit_code == 2 and "once" in twice.output
    listed = json.loads(run("list", "--json").output)["results"]
    assert "-" not in [e["text"] for e in listed] and len(listed) == 5


def test_stored_text_cannot_drive_the_terminal(run):
    """An entry's text came to the terminal raw: an OSC sequence set the window title or wrote
    the clipboard, BEL rang and backspaces overwrote what was printed."""
    text = "Meeting notes \x1b]0;PWNED\x07 \x1b]52;c;ZWNobyBwd25lZA==\x07 done abc\x08\x08\x08XYZ \x1b[31mred\x9b"
    added = run("add", text)
    assert added.exit_code == 0, added.output
    entry_id = added.output.strip()
    outputs = {args: run(*args).output for args in (("list",), ("search", "meeting notes", "-k", "1"),
                                                    ("search", "meeting notes", "-k", "1", "--explain"),
                                                    ("history", entry_id))}
    for args, output in outputs.items():
        assert "Meeting notes" in output, args
        assert not [c for c in output if ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f], (args, output)
        assert "PWNED" not in output and "ZWNo" not in output, args
    shown = run("list", "--json").output  # --json keeps the text, escaped
    assert [e["text"] for e in json.loads(shown)["results"]] == [text]


def test_text_in_another_encoding_is_named_where_the_user_gave_it(run, tmp_path: Path):
    """A Latin-1 byte in an argument or on stdin was "item 1: … not valid Unicode (a lone
    surrogate …)" — for stdin's line 3 too. Now its TEXT or stdin line, and the byte."""
    bad = run("add", "ok", "caf\udce9 au lait")  # how Python hands over argv bytes it cannot decode
    assert bad.exit_code == 1
    assert bad.output.strip() == ("error: TEXT 2 is not valid UTF-8 (byte 0xe9 at position 3; is the terminal or "
                                  "file in another encoding?)")
    # a real process reading real bytes on stdin, on the fixture's store
    piped = subprocess.run([sys.executable, "-c", "from engramdb.cli import main; main()", "--db", str(tmp_path / "cli.db"),
                            "--embedder", "minilm", "add", "first", "-"],
                           input=b"good line\n\n\xe9t\xe9 line\n", capture_output=True, timeout=300)
    assert piped.returncode == 1
    assert piped.stderr.decode().startswith("error: stdin line 3 is not valid UTF-8 (byte 0xe9"), piped.stderr
    assert run("list", "--json").output.count('"id"') == 0  # nothing written


def test_engram_embedder_in_the_environment_picks_a_new_stores_model_only(tmp_path: Path) -> None:
    """$ENGRAM_EMBEDDER is what a new store is built with, in the CLI as in the library: a store
    of another model is opened with its own (the variable used to be passed on as --embedder,
    and a search of an e5-small store with ENGRAM_EMBEDDER=minilm was a model-mismatch error).
    --embedder given on the command line still must match."""
    runner = CliRunner()
    e5_store, mini_store = str(tmp_path / "e5.db"), str(tmp_path / "mini.db")
    assert runner.invoke(main, ["--db", mini_store, "add", "Alice likes green tea."],
                         env={"ENGRAM_EMBEDDER": "minilm"}).exit_code == 0
    assert runner.invoke(main, ["--db", e5_store, "--embedder", "e5-small", "add", "Alice likes green tea."]).exit_code == 0
    stats = {db: json.loads(runner.invoke(main, ["--db", db, "stats", "--json"]).output)["embedder"]
             for db in (e5_store, mini_store)}
    assert "e5" in stats[e5_store] and "MiniLM" in stats[mini_store], stats
    for db, other in ((e5_store, "minilm"), (mini_store, "e5-small")):
        found = runner.invoke(main, ["--db", db, "search", "green tea", "--json"], env={"ENGRAM_EMBEDDER": other})
        assert found.exit_code == 0, found.output
        assert json.loads(found.output)["hits"][0]["text"] == "Alice likes green tea."
    refused = runner.invoke(main, ["--db", e5_store, "--embedder", "minilm", "search", "green tea"])
    assert refused.exit_code == 1 and "--embedder" in refused.output
