"""Property-based fuzzing of everything a caller (or, later, a server client) hands in:
entries, `add`, `search` with filters, `import` lines and CLI arguments.

Two properties, on a real store: only Engram's documented `InputError` escapes a call with
bad input, and a call that fails changes nothing (the store's write counters stand still).
Fixed seed (``derandomize``) and bounded examples, so CI is repeatable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engramdb import Entry, InputError, Memory
from engramdb.cli import main
from engramdb.pipeline.presets import PRESET_NAMES
from engramdb.store.base import FILTER_KEYS, Filters

FUZZ = settings(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Any Unicode, lone surrogates included (hypothesis leaves them out unless asked).
tricky = st.sampled_from(["\udc80", "\ud800", "\x00", "\u202e", "中", "é", " ", "\n", '"', "'", ";", "%", "_"])
any_text = st.one_of(st.text(st.characters(codec=None, exclude_categories=()), max_size=40),
                     st.text(tricky, max_size=8), st.text(max_size=200))
short_text = st.text(st.one_of(st.characters(codec=None, exclude_categories=(), exclude_characters="\x00"),
                               tricky.filter(lambda c: c != "\x00")), min_size=1, max_size=12)
numbers = st.one_of(st.integers(), st.integers(min_value=-(2**80), max_value=2**80), st.floats(allow_nan=True))
timestamps = st.one_of(
    st.sampled_from(["2024-03-14", "2024-03-14T10:00:00+02:00", "9999-12-31T23:59:59-05:00",
                     "0001-01-01T00:00:00+01:00", "", "yesterday", "2024-02-30", "Z"]),
    st.datetimes().map(lambda d: d.isoformat()), numbers, any_text)
json_values = st.recursive(st.one_of(st.none(), st.booleans(), numbers, any_text),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
                           max_leaves=8)
anything = st.one_of(json_values, timestamps, st.lists(any_text, max_size=3))

ENTRY_FIELDS = ["text", "kind", "namespace", "id", "timestamp", "timestamp_end", "persons", "entities", "keywords",
                "location", "topic", "source", "metadata", "derived_from", "created_at"]
SOURCE_FIELDS = ["doc_id", "path", "chunk_index", "heading_path", "session_id", "turn_id", "speaker"]


def field_value(name: str) -> st.SearchStrategy:
    plausible = {
        "text": st.one_of(any_text, st.just("Alice moved to Lisbon.")),
        "kind": st.sampled_from(["fact", "turn", "chunk", "memo", ""]),
        "timestamp": timestamps, "timestamp_end": timestamps, "created_at": timestamps,
        "persons": st.lists(any_text, max_size=3), "metadata": st.dictionaries(any_text, json_values, max_size=3),
        "source": st.one_of(st.dictionaries(st.sampled_from(SOURCE_FIELDS), anything, max_size=3), any_text),
    }.get(name, st.nothing())
    return st.one_of(plausible, anything)


names = st.sampled_from(["Alice", "Bob", "李雷", "", " x ", "Ève"])
plausible_entries = st.fixed_dictionaries(
    {"text": st.one_of(st.text(min_size=1, max_size=60), st.sampled_from(["Alice moved to Lisbon.", "上周去了黄山。"]))},
    optional={"persons": st.lists(names, max_size=2), "keywords": st.lists(names, max_size=2),
              "timestamp": st.one_of(st.none(), st.datetimes().map(lambda d: d.isoformat())),
              "metadata": st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.booleans(), st.integers(),
                                                                         st.text(max_size=5)), max_size=2),
              "location": st.one_of(st.none(), names), "kind": st.sampled_from(["fact", "turn", "chunk"]),
              "source": st.fixed_dictionaries({}, optional={"path": st.text(max_size=8),
                                                            "chunk_index": st.integers(0, 5)})})
entry_dicts = st.one_of(plausible_entries, st.fixed_dictionaries(
    {"text": field_value("text")}, optional={name: field_value(name) for name in ENTRY_FIELDS[1:]}))
valid_filters = st.fixed_dictionaries({}, optional={
    "person": names, "kind": st.sampled_from(["fact", "turn", "chunk"]), "since": st.just("2024-01-01"),
    "metadata.project": st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
    "until": st.datetimes().map(lambda d: d.isoformat())})
filter_dicts = st.dictionaries(
    st.one_of(st.sampled_from([k for k in FILTER_KEYS if "<" not in k] + ["metadata.project", "metadata.x y"]),
              any_text),
    anything, max_size=3)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Memory(tmp_path_factory.mktemp("fuzz") / "fuzz.db", namespace="fuzz", embedder="minilm") as mem:
        mem.add(["Alice moved to Lisbon in May 2023.", "Release v2.3.1 fixed ERR_CONN_RESET.",
                 Entry(text="Bob likes tea.", persons=["Bob"], metadata={"project": "x", "n": 1},
                       timestamp="2024-03-14")])
        yield mem


def state(mem: Memory) -> tuple[tuple[int, int], int]:
    return mem.store._seqs(mem.store._reader()), mem.count(all_namespaces=True)


def strict_json(data: object) -> None:
    json.dumps(data, allow_nan=False).encode("utf-8")  # what crosses a process boundary


@settings(FUZZ, max_examples=200)
@given(items=st.lists(entry_dicts, min_size=1, max_size=3))
def test_add_accepts_or_refuses_whole_batches(store: Memory, items: list[dict]) -> None:
    before = state(store)
    try:
        ids = store.add(items)
    except InputError:
        event("refused")
        assert state(store) == before  # a refused batch writes nothing
        return
    event("stored")
    stored = store.get(ids)
    assert {e.id for e in stored} == set(ids)
    for entry in stored:
        assert entry.namespace == "fuzz"
        strict_json(entry.to_dict())


@settings(FUZZ, max_examples=200)
@given(query=st.one_of(st.text(min_size=1, max_size=80), st.text(min_size=3, max_size=30), any_text, st.sampled_from(
           ["what happened last week?", "v2.3.1 \"ERR_CONN_RESET\"", "上周 Alice 去了哪里", "next year 2024-03-14"])),
       k=st.integers(1, 25),
       filters=st.one_of(st.just({}), st.just({}), valid_filters, valid_filters, filter_dicts),
       preset=st.sampled_from(PRESET_NAMES),
       now=st.one_of(st.none(), st.none(), st.datetimes().map(lambda d: d.isoformat()), timestamps))
def test_search_returns_hits_or_an_input_error(store: Memory, query, k, filters, preset, now) -> None:
    before = state(store)
    try:
        result = store.search(query, k=k, filters=filters, preset=preset, now=now)
    except InputError as exc:
        event("refused")
        return
    finally:
        assert state(store)[1] == before[1]  # a search never adds or removes entries
    event("searched")
    assert len(result.hits) <= k
    assert all(hit.entry.namespace == "fuzz" for hit in result.hits)
    strict_json(result.to_dict())


@settings(FUZZ, max_examples=100)
@given(k=st.one_of(st.integers(-5, 5000), anything), planner=st.one_of(st.none(), st.sampled_from(["rules", "x"])),
       group_by=st.one_of(st.none(), st.sampled_from(["doc", "session", "path", "nope"])))
def test_search_options_are_validated(store: Memory, k, planner, group_by) -> None:
    try:
        result = store.search("where did Alice move?", k=k, planner=planner, group_by=group_by)
    except InputError:
        event("refused")
        return
    event("searched")
    assert 1 <= len(result.hits) <= k


@FUZZ
@given(data=st.one_of(filter_dicts, anything))
def test_filters_parse_or_raise_input_error(data) -> None:
    try:
        parsed = Filters.parse(data)
    except InputError:
        return
    assert isinstance(parsed, Filters)


line_bytes = st.one_of(
    entry_dicts.map(lambda d: json.dumps(d, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")),
    entry_dicts.map(lambda d: json.dumps(d, allow_nan=True).encode("ascii")),
    st.binary(max_size=40),
)


@FUZZ
@given(lines=st.lists(line_bytes, min_size=1, max_size=4))
def test_import_of_fuzzed_lines_is_all_or_nothing(store: Memory, tmp_path_factory, lines: list[bytes]) -> None:
    path = tmp_path_factory.mktemp("lines") / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = state(store)
    try:
        report = store.import_path(path, format="entries")
    except InputError as exc:
        event("refused")
        assert str(exc).startswith(str(path))  # names the file (and line)
        assert state(store) == before
        return
    event("imported")
    assert report["entries"] <= len(lines)


@settings(derandomize=True, deadline=None, database=None, max_examples=60,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(st.one_of(short_text, st.sampled_from(
    ["-k", "--filter", "--now", "--preset", "--json", "--explain", "-n", "since=2024", "metadata.x=NaN"])),
    min_size=1, max_size=5))
def test_cli_search_never_shows_a_traceback(tmp_path_factory, args: list[str]) -> None:
    db = tmp_path_factory.getbasetemp() / "cli-fuzz.db"
    if not db.exists():
        with Memory(db, embedder="minilm") as mem:
            mem.add(["Alice moved to Lisbon.", "Bob likes tea."])
    result = CliRunner().invoke(main, ["--db", str(db), "search", *args])
    # Exit 0 (results), 1 (one error line) or 2 (a usage error from click); never an exception.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2)
    if result.exit_code == 1:
        assert result.output.startswith("error: ")


UPDATABLE = ["text", "metadata", "persons", "entities", "keywords", "location", "topic", "timestamp",
             "timestamp_end", "expires_at", "kind", "id"]


@settings(FUZZ, max_examples=100)
@given(changes=st.dictionaries(st.sampled_from(UPDATABLE), anything, max_size=3))
def test_update_applies_or_refuses_whole(store: Memory, changes: dict) -> None:
    from engramdb import NotFoundError

    [target] = store.add([Entry(text="The fuzzed fact to update.", persons=["Bob"])])
    before = state(store), store.get(target)[0].to_dict()
    try:
        updated = store.update(target, **changes)
    except (InputError, NotFoundError):
        event("refused")
        assert (state(store), store.get(target)[0].to_dict()) == before
        return
    event("updated")
    assert updated.id == target
    strict_json(updated.to_dict())
    store.update(target, text="The fuzzed fact to update.", persons=["Bob"], metadata={}, expires_at=None,
                 timestamp=None, timestamp_end=None, location=None, topic=None, entities=[], keywords=[])


@settings(FUZZ, max_examples=100)
@given(limit=st.one_of(st.integers(-2, 1200), anything), order=st.one_of(st.sampled_from(["newest", "oldest"]),
       anything), cursor=st.one_of(st.none(), any_text, anything), filters=st.one_of(st.just({}), valid_filters))
def test_list_pages_or_raises_input_error(store: Memory, limit, order, cursor, filters) -> None:
    try:
        page = store.list(limit=limit, order=order, cursor=cursor, filters=filters)
    except InputError:
        event("refused")
        return
    event("listed")
    assert len(page.results) <= limit and all(e.namespace == "fuzz" for e in page.results)
    strict_json(page.to_dict())
