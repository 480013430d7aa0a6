"""Bad input gets one clear error and loses nothing: validation is complete before the
first write, and no input reaches the user as a traceback (a server would answer 500)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import Entry, InputError, Memory
from engramdb.cli import main
from engramdb.store.base import Filters

BAD_FIELDS = [
    ({"location": 5}, "entry location must be a string"),
    ({"topic": ["a"]}, "entry topic must be a string"),
    ({"source": {"speaker": 3}}, "source.speaker must be a string"),
    ({"source": "file.md"}, "source must be a JSON object"),
    ({"source": {"heading_path": "H1"}}, "source.heading_path must be a list of strings"),
    ({"source": {"chunk_index": "x"}}, "source.chunk_index must be a non-negative integer"),
    ({"created_at": "garbage"}, "created_at 'garbage' is not ISO 8601"),
    ({"timestamp": 1700000000}, "timestamp must be ISO 8601 text"),
    ({"timestamp": "9999-12-31T23:59:59-05:00"}, "out of range"),
    ({"timestamp": "0001-01-01T00:00:00+01:00"}, "out of range"),
    ({"id": 10**30}, "entry id must be a string"),
    ({"id": ""}, "entry id must not be empty"),
    ({"persons": "Alice"}, "entry persons must be a list of strings"),
    ({"metadata": {"n": math.nan}}, "NaN and Infinity are not allowed"),
    ({"metadata": {"n": 2**70}}, "integer out of the 64-bit range"),
    ({"metadata": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}, "nested more than"),
    ({"text": "lone \udc80 surrogate"}, "not valid Unicode"),
    # PostgreSQL cannot store NUL in text: refused on every backend, before the first write.
    ({"text": "a NUL \x00 inside"}, "entry text contains a NUL character"),
    ({"metadata": {"note": "nul\x00"}}, "contains a NUL character"),
    ({"persons": ["Al\x00ice"]}, "contains a NUL character"),
    ({"kind": "memo"}, "entry kind must be one of"),
    ({"id": "."}, "entry id must not be '.': '.' and '..' cannot be addressed in a URL path"),
    ({"id": ".."}, "entry id must not be '..'"),
]


@pytest.mark.parametrize("fields, message", BAD_FIELDS, ids=[m for _, m in BAD_FIELDS])
def test_a_late_bad_item_writes_nothing(mem: Memory, fields: dict, message: str) -> None:
    items = [{"text": f"valid entry number {i}"} for i in range(300)] + [{"text": "the bad one", **fields}]
    with pytest.raises(InputError, match="item 300: .*" + message.split("(")[0][:40].replace("'", ".")):
        mem.add(items, batch_size=64)
    assert mem.count() == 0


@pytest.mark.parametrize("fields, message", BAD_FIELDS[:12], ids=[m for _, m in BAD_FIELDS[:12]])
def test_a_late_bad_jsonl_line_writes_nothing(mem: Memory, tmp_path: Path, fields: dict, message: str) -> None:
    lines = [json.dumps({"text": f"valid line {i}"}) for i in range(300)]
    lines.append(json.dumps({"text": "the bad one", **fields}))
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"late.jsonl:301: "):
        mem.import_path(path)
    assert mem.count() == 0


RAW_LINES = {
    "bad utf-8": (b'{"text": "caf\xe9"}', "not UTF-8 text"),
    "5,000-digit integer": (b'{"text": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}", "4,300 digits"),
    "deep nesting": (b'{"text": "x", "metadata": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
                     "nested too deeply"),
    "NaN": (b'{"text": "x", "metadata": {"n": NaN}}', "NaN is not valid JSON"),
    "Infinity": (b'{"text": "x", "metadata": {"n": -Infinity}}', "Infinity is not valid JSON"),
    "not an object": (b'["text"]', "an entry must be a JSON object"),
    "lone surrogate escape": (b'{"text": "\\udc80"}', "not valid Unicode"),
}


@pytest.mark.parametrize("name", list(RAW_LINES))
def test_raw_jsonl_lines_give_one_error_line_in_the_cli(tmp_path: Path, name: str) -> None:
    line, message = RAW_LINES[name]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text": "fine"}\n' + line + b"\n")
    db = tmp_path / "cli.db"
    result = CliRunner().invoke(main, ["--db", str(db), "--embedder", "minilm", "import", str(path)])
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert result.output.startswith(f"error: {path}:2: ") and message in result.output, result.output
    assert result.output.count("\n") == 1
    with Memory(db) as check:
        assert check.count() == 0


@pytest.fixture()
def cli_store(tmp_path: Path):
    db = tmp_path / "cli.db"
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db), "--embedder", "minilm", "add", "Alice flew to Oslo.",
                                "--timestamp", "2024-03-14"]).exit_code == 0

    def run(*args: str):
        return runner.invoke(main, ["--db", str(db), *args])

    return run


SEARCHES = {
    "since at the calendar limit": (["tea", "--filter", "since=9999-12-31T23:59:59-05:00"], "out of range"),
    "until at the calendar limit": (["tea", "--filter", "until=0001-01-01T00:00:00+01:00"], "out of range"),
    "now at the calendar limit": (["tea", "--now", "9999-12-31T23:59:59-05:00"], "out of range"),
    "no such day": (["tea", "--filter", "until=2023-02-30"], "value '2023-02-30' is not a date that exists"),
    "empty now": (["tea", "--now", ""], "now must be an ISO 8601 time"),
    "lone surrogate": (["tea \udc80"], "not valid Unicode"),
    "unknown filter": (["tea", "--filter", "colour=red"], "unknown filter 'colour'"),
    "bad metadata key": (["tea", "--filter", "metadata.=1"], "a metadata filter names its key"),
    "k of zero": (["tea", "-k", "0"], "k must be an integer from 1"),
    "huge k": (["tea", "-k", "99999999"], "k must be an integer from 1"),
    "k of 31 digits": (["tea", "-k", "1" + "0" * 30], "k must be an integer from 1 to 1000, not an integer of 31 digits"),
}


def test_an_out_of_range_number_is_quoted_without_changing_it(tmp_path: Path) -> None:
    """The error quoted the first 20 characters of the value: k = 10**30 read "not
    10000000000000000000" (10**19), and an integer of more than 4,300 digits raised Python's
    own ValueError from printing it."""
    with Memory(tmp_path / "k.db", embedder="minilm") as mem:
        mem.add(["tea"])
        for k, quoted in ((10**30, "an integer of 31 digits"), (10**5000, "an integer of over 4,000 digits"),
                          ("x" * 40, "'xxxxxxxxxxxxxxxxxx…"), (-5, "-5")):
            with pytest.raises(InputError) as caught:
                mem.search("tea", k=k)  # type: ignore[arg-type]
            assert str(caught.value) == f"k must be an integer from 1 to 1000, not {quoted}"
            with pytest.raises(InputError, match="limit must be an integer"):
                mem.list(limit=k)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(SEARCHES))
def test_bad_search_arguments_give_one_error_line(cli_store, name: str) -> None:
    args, message = SEARCHES[name]
    result = cli_store("search", *args)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and message in result.output, result.output


@pytest.mark.parametrize("preset", ["default", "simplemem", "ping", "lychee", "molore"])
@pytest.mark.parametrize("now", ["9999-12-31T23:59:59+00:00", "0001-01-01T00:00:00+00:00"])
def test_relative_time_at_the_calendar_limits_still_searches(cli_store, preset: str, now: str) -> None:
    for query in ("what happened next week?", "what did Alice do last year?", "10 years ago", "下个月", "上周"):
        result = cli_store("search", query, "--now", now, "--preset", preset, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["trace"]["now"]["value"] == now


def test_query_length_is_capped_and_configurable(tmp_path: Path) -> None:
    with Memory(tmp_path / "cap.db", embedder="minilm", max_query_chars=50) as mem:
        mem.add(["Alice likes tea."])
        assert mem.search("tea " * 12, k=1)[0].text == "Alice likes tea."
        with pytest.raises(InputError, match="query is 52 characters long; the limit is 50"):
            mem.search("tea " * 13)


def test_metadata_filters_match_json_types_exactly(mem: Memory) -> None:
    mem.add([
        Entry(text="null value", metadata={"x": None}),
        Entry(text="missing key", metadata={}),
        Entry(text="true value", metadata={"x": True}),
        Entry(text="one value", metadata={"x": 1}),
        Entry(text="one point zero", metadata={"x": 1.0}),
        Entry(text="text one", metadata={"x": "1"}),
    ])

    def texts(value: object) -> set[str]:
        ids = mem.store.ids("default", Filters.parse({"metadata.x": value}))
        return {e.text for e in mem.get(ids)}

    assert texts(None) == {"null value"}
    assert texts(True) == {"true value"}
    assert texts(1) == {"one value", "one point zero"}
    assert texts("1") == {"text one"}
    assert texts(False) == set()
    # The CLI reads JSON scalars: null, true and 1 keep their type; "NaN" is text.
    assert {e.text for e in mem.get(mem.store.ids("default", Filters.parse_cli(["metadata.x=null"])))} == {"null value"}
    assert Filters.parse_cli(["metadata.x=NaN"]).metadata == {"x": "NaN"}
    assert Filters.parse_cli(["metadata.x=1e999"]).metadata == {"x": "1e999"}
    # Search applies the same filter inside every channel.
    assert [h.text for h in mem.search("value", filters={"metadata.x": None})] == ["null value"]


def test_get_json_is_always_valid_json(cli_store) -> None:
    added = cli_store("--embedder", "minilm", "add", "with metadata", "--meta", "n=NaN", "--meta", "big=1e999",
                      "--json")
    assert added.exit_code == 0, added.output
    entry_id = json.loads(added.output)["ids"][0]
    shown = cli_store("get", entry_id, "--json")
    data = json.loads(shown.output)  # strict JSON: NaN/Infinity would fail here
    assert data["entries"][0]["metadata"] == {"n": "NaN", "big": "1e999"}


def test_python_nan_metadata_is_refused(mem: Memory) -> None:
    with pytest.raises(InputError, match="NaN and Infinity are not allowed"):
        mem.add([Entry(text="x", metadata={"score": float("inf")})])
    assert mem.count() == 0


def test_bad_namespaces_and_ids_are_input_errors(mem: Memory) -> None:
    for bad in ("", "a" * 300, "tab\there", 5):
        with pytest.raises(InputError):
            mem.add(["x"], namespace=bad)  # type: ignore[arg-type]
        with pytest.raises(InputError):
            mem.get("x", namespace=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="id must be a string"):
        mem.get([12345])  # type: ignore[list-item]
    for call in (lambda: mem.get(None), lambda: mem.history(None), lambda: mem.update(123, text="x"),
                 lambda: mem.delete(5)):
        with pytest.raises(InputError, match=r"ids must be an id or a list of ids, not (NoneType|int)"):
            call()  # type: ignore[arg-type]
    with pytest.raises(InputError, match="add takes a string, an Entry, a dict or a list of them, not NoneType"):
        mem.add(None)  # type: ignore[arg-type]
    assert mem.count(all_namespaces=True) == 0
    # A bidi override makes a name read as another in every list ("rtl\u202ens" shows as "rtlsn"),
    # and a C1 control is a control character too (an outside check saw both accepted).
    for bad in ("rtl\u202ens", "iso\u2067late", "c1\x85ctl"):
        with pytest.raises(InputError, match="control characters"):
            mem.add(["x"], namespace=bad)
        with pytest.raises(InputError, match="control characters"):
            mem.add([{"text": "x", "id": bad}])
    assert mem.count(all_namespaces=True) == 0
    assert mem.add(["x"], namespace="עברית ו-English")  # right-to-left text itself is a name like any


def test_a_bad_turn_in_a_later_session_writes_no_session(mem: Memory, tmp_path: Path) -> None:
    lines = [json.dumps({"session_id": "s1", "speaker": "Alice", "text": f"Turn {i} of the first session."})
             for i in range(50)]
    lines.append(json.dumps({"session_id": "s2", "speaker": "Bob", "text": "fine"}))
    lines.append(json.dumps({"session_id": "s2", "speaker": "Bob\udc80", "text": "a bad speaker"}))
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="session 's2', turn 2: .*not valid Unicode"):
        mem.import_path(path)
    assert mem.count() == 0
    with pytest.raises(InputError):
        mem.add_conversation([("Alice", "hi"), ("Bob", "caf\udce9")], session_id="live")
    assert mem.count() == 0


def test_query_cap_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "env.db"
    with Memory(db, embedder="minilm") as mem:
        mem.add(["Alice likes tea."])
    monkeypatch.setenv("ENGRAM_MAX_QUERY_CHARS", "10")
    result = CliRunner().invoke(main, ["--db", str(db), "search", "a query of some length"])
    assert result.exit_code == 1 and "the limit is 10" in result.output
    monkeypatch.setenv("ENGRAM_MAX_QUERY_CHARS", "ten")
    result = CliRunner().invoke(main, ["--db", str(db), "search", "tea"])
    assert result.exit_code == 1 and "ENGRAM_MAX_QUERY_CHARS must be a whole number" in result.output


def test_an_entry_text_is_capped_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2 MB text took over a minute of embedding in one `add` (and of a server's CPU for one
    request): an entry's text is capped (100,000 characters, $ENGRAM_MAX_TEXT_CHARS), checked
    with every other field, so a batch or a file holding one writes nothing."""
    db = tmp_path / "text.db"
    huge = "The quarterly report says revenue grew. " * 2_600  # 103,999 characters once stripped
    with Memory(db, embedder="minilm") as mem:
        with pytest.raises(InputError, match=r"item 1: entry text is 103,999 characters long; the limit is 100,000"):
            mem.add(["Alice likes tea.", huge])
        source = tmp_path / "big.jsonl"
        source.write_text(json.dumps({"text": "Bob likes coffee."}) + "\n" + json.dumps({"text": huge}) + "\n")
        with pytest.raises(InputError, match=r"big.jsonl:2: .*the limit is 100,000"):
            mem.import_path(source)
        assert mem.count() == 0
        [tea] = mem.add("Alice likes tea.")
        with pytest.raises(InputError, match="the limit is 100,000"):
            mem.update(tea, text=huge)
        assert mem.get(tea)[0].text == "Alice likes tea."
        monkeypatch.setenv("ENGRAM_MAX_TEXT_CHARS", "200000")
        assert len(mem.add(huge)) == 1
        monkeypatch.setenv("ENGRAM_MAX_TEXT_CHARS", "20")
        with pytest.raises(InputError, match="the limit is 20 "):
            mem.add("A note a little longer than twenty characters.")
    result = CliRunner().invoke(main, ["--db", str(db), "add", "Another note longer than twenty characters."])
    assert result.exit_code == 1 and "the limit is 20 ($ENGRAM_MAX_TEXT_CHARS)" in result.output


@pytest.mark.parametrize("url, reason", [
    ("postgresql://postgres@[::1/x", "Invalid IPv6 URL"),
    ("postgresql://u:secret@127.0.0.1:99999/x", "Port out of range"),
    ("postgresql://u:secret@127.0.0.1:abc/x", "Port could not be cast"),
    # A password with a character a URL must encode: its text showed in urllib's or libpq's
    # message ("as 'Tr0ub4dor'", "failed to resolve host 'ssw0rd!@127.0.0.1'"); said before either reads it.
    ("postgresql://u:secret#3@127.0.0.1:5432/x", "'#' as %23"),
    ("postgresql://u:s@cret!@127.0.0.1:5432/x", "'@' as %40"),
    ("postgresql://u:sec/ret@127.0.0.1:5432/x", "'/' as %2F"),
    ("postgresql://u:s%zcret@127.0.0.1:5432/x", "'%' as %25"),
    ("postgresql://u:s%ecret@127.0.0.1:5432/x", "not UTF-8 text"),  # a raw UnicodeDecodeError from the driver
])
def test_a_malformed_store_url_is_one_error_line_without_its_password(url: str, reason: str) -> None:
    from click.testing import CliRunner

    from engramdb.cli import main

    for args in (["--db", url, "search", "hi"], ["migrate", url, "unused.db"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and result.output.startswith("error: store URL ") and reason in result.output
        for part in ("secret", "cret", "ret!", "#3", "ecret"):
            assert part not in result.output, (part, result.output)
        assert "Traceback" not in result.output
    with pytest.raises(InputError, match="is not a valid URL"):
        Memory(url)


def test_a_url_with_a_slash_missing_is_no_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"postgresql:/u:secret@host/db" was a file path, and its error printed it whole."""
    from click.testing import CliRunner

    from engramdb.cli import main

    monkeypatch.chdir(tmp_path)
    for typo in ("postgresql:/u:secret@127.0.0.1/memory", "postgres:u:secret@127.0.0.1/memory"):
        result = CliRunner().invoke(main, ["--db", typo, "add", "hello"])
        assert result.exit_code == 1 and "a slash missing" in result.output and "secret" not in result.output
        assert not list(tmp_path.iterdir())


def test_a_postgres_store_without_its_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without psycopg (the base install is SQLite only) a postgresql:// store printed a
    ModuleNotFoundError traceback; now one line names the extra to install, in the CLI, the
    library and `engram eval --store`."""
    import sys

    from click.testing import CliRunner

    from engramdb.cli import main
    from engramdb.errors import StoreError

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError
    url = "postgresql://u:secret@127.0.0.1:1/memory"
    for args in (["--db", url, "stats"], ["migrate", url, "unused.db"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert result.output.startswith("error: ") and "engramdb[postgres]" in result.output, result.output
        assert "Traceback" not in result.output and "secret" not in result.output
    with pytest.raises(StoreError, match=r"pip install 'engramdb\[postgres\]'"):
        Memory(url)


@pytest.mark.parametrize("dots", [".", ".."])
def test_dot_segment_ids_are_refused_before_any_write(mem: Memory, tmp_path: Path, dots: str) -> None:
    """An id '.' or '..' could be stored but never reached over HTTP (a URL path folds it): it
    is refused in `add`, a JSONL line and a dump line, naming the item or line, before anything
    is written; ids that merely hold dots are fine."""
    with pytest.raises(InputError, match=f"item 1: entry id must not be '{dots}'"):
        mem.add([{"text": "fine", "id": "a.b"}, {"text": "dot", "id": dots}])
    lines = tmp_path / "dots.jsonl"
    lines.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"id": dots, "text": "dot dot id"}) + "\n")
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "cli.db"), "--embedder", "minilm", "import", str(lines)])
    assert result.exit_code == 1 and result.output.startswith(f"error: {lines}:2: entry id must not be '{dots}'")
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps({"engram_export": 1, "namespaces": ["default"]}) + "\n"
                    + json.dumps({"entry": {"id": dots, "text": "dot"}}) + "\n")
    with pytest.raises(InputError, match=f"dump.jsonl:2: entry id must not be '{dots}'"):
        mem.import_path(dump)
    assert mem.count() == 0 and not (tmp_path / "cli.db").exists()
    assert mem.add([{"text": "dots inside", "id": "..a"}, {"text": "and", "id": "v1.2."}]) == ["..a", "v1.2."]


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "8"])
def test_batch_size_is_checked(mem: Memory, size: object) -> None:
    with pytest.raises(InputError, match="batch_size must be a positive integer"):
        mem.add(["a", "b"], batch_size=size)  # type: ignore[arg-type]
    assert mem.count() == 0


@pytest.mark.parametrize("data", [b"some bytes", bytearray(b"x"), memoryview(b"x")])
def test_bytes_are_named_not_iterated(mem: Memory, data: object) -> None:
    with pytest.raises(InputError) as err:
        mem.add(data)  # type: ignore[arg-type]
    assert f"not {type(data).__name__} (decode it first" in str(err.value) and "int" not in str(err.value)


@pytest.mark.parametrize(("stamp", "message"), [
    ("2024-02-30", "'2024-02-30' is not a date that exists (day is out of range for month)"),
    ("2023-02-29T10:00:00Z", "is not a date that exists"),
    ("2024-13-01", "is not a date that exists (month must be in 1..12)"),
    ("2024", "'2024' is a year, not a time: give a day, e.g. 2024-01-01"),
    ("2024-02", "'2024-02' is a month, not a time: give a day, e.g. 2024-02-01"),
    ("2024-02-10T25:00", "has no such time of day"),
    ("last tuesday", "is not ISO 8601"),
    ("10000-01-01", "'10000-01-01' has year 10000, out of range (years 1 to 9999)"),
    ("２０２４-０３-１４", "has digits other than 0-9"),  # it said "has no such time of day"
])
def test_timestamp_messages_say_what_is_wrong(mem: Memory, stamp: str, message: str) -> None:
    with pytest.raises(InputError, match=f"item 0: timestamp .*{message.replace('(', '.').replace(')', '.')}"):
        mem.add(Entry(text="x", timestamp=stamp))
    with pytest.raises(InputError, match="since"):
        mem.search("x", filters={"since": stamp})


def test_a_closed_memory_says_so(mem: Memory) -> None:
    from engramdb import MemoryClosedError, StoreError

    mem.add("tea with Ana")
    mem.close()
    for use in (lambda: mem.count(), lambda: mem.search("tea"), lambda: mem.add("more"), lambda: mem.list(),
                lambda: mem.add_turn("A", "hi", session_id="s")):
        with pytest.raises(MemoryClosedError, match=r"^this Memory is closed \(store .*\); open a new Memory"):
            use()
    assert issubclass(MemoryClosedError, StoreError)
    mem.close()  # closing twice is fine


def test_a_namespace_with_spaces_at_its_ends_is_a_slip_not_a_name(mem: Memory) -> None:
    """" pad " was a namespace apart from "pad" (an all-spaces one was refused), over the API too."""
    for call in (lambda: mem.add("x", namespace=" pad "), lambda: mem.search("x", namespace="pad "),
                 lambda: mem.add([Entry(text="x", namespace="\u3000pad")], namespace="\u3000pad")):
        with pytest.raises(InputError, match="has spaces at its ends; give 'pad'"):
            call()
    assert mem.count(all_namespaces=True) == 0
