"""The substring channel: literal strings of a query found verbatim, fused like any channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.store.base import Filters
from engramdb.text.patterns import exact_patterns


@pytest.mark.parametrize(("query", "patterns"), [
    ("what fixed ERR_CONN_RESET in v2.3.1?", ["err_conn_reset", "v2.3.1"]),
    ("staging db port 5433", ["5433"]),
    ("ticket ENG-1234 status", ["eng-1234"]),
    ('who wrote "tram 28" notes', ["tram 28", "28"]),
    ("《三体》的作者是谁", ["三体"]),
    ("When did Caroline go to the support group?", []),
])
def test_exact_patterns(query: str, patterns: list[str]) -> None:
    assert exact_patterns(query) == patterns


def test_substring_channel_finds_literals_and_is_fused(mem: Memory, tmp_path: Path) -> None:
    mem.add([
        "Release v2.3.1 fixed ERR_CONN_RESET on reconnect.",
        "Release v2.3.0 added the export button.",
        "The staging database listens on port 5433.",
        "《三体》是刘慈欣写的科幻小说。",
        "Connection resets were common before the fix.",
    ])
    rows = mem.store.substring(["err_conn_reset", "v2.3.1"], 10, "default", Filters())
    texts = {r: e.text for r, e in mem.store.fetch([r for r, _ in rows]).items()}
    assert [(texts[r], n) for r, n in rows] == [("Release v2.3.1 fixed ERR_CONN_RESET on reconnect.", 2.0)]
    assert mem.store.substring(["v2.3"], 10, "default", Filters(kinds=["turn"])) == []  # filters apply
    preset = tmp_path / "literal.toml"
    preset.write_text('[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[channels.substring]\nk = 10\n'
                      'weight = 0.5\n[fusion]\nmethod = "weighted"\n')
    res = mem.search("which release fixed v2.3.1 reset?", k=2, preset=str(preset))
    assert res.hits[0].text.startswith("Release v2.3.1") and res.hits[0].channels["substring"].rank == 1
    assert "substring" not in mem.search("which release fixed resets?", preset=str(preset)).trace["stages"][1][
        "channels"]  # no literal in the query: the channel does not run
    zh = mem.search("《三体》的作者", k=1, preset=str(preset))
    assert zh.hits[0].text.startswith("《三体》") and "substring" in zh.hits[0].channels


def _scan(store, patterns, k, namespace, filters):  # type: ignore[no-untyped-def]
    """The channel's answer without the index (what a read-only store without it does)."""
    channel = store._substring
    ready = channel.ready
    channel.ready, store._db.read_only = False, True
    try:
        from engramdb.store.substring import TRIGRAM_TABLE

        conn = store._reader()
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TRIGRAM_TABLE,)).fetchone()
        assert not has or ready  # the scan path below only runs when the index is absent or ignored
        patterns = list(patterns)
        where, params = store._where(namespace, filters)
        matched = " + ".join("(instr(lower(e.text), ?) > 0)" for _ in patterns)
        rows = conn.execute(f"SELECT e.rowid, {matched} AS n FROM entries e WHERE {where} AND n > 0 "
                            "ORDER BY n DESC, e.rowid DESC LIMIT ?", [*patterns, *params, k]).fetchall()
        return [(int(r), float(n)) for r, n in rows]
    finally:
        channel.ready, store._db.read_only = ready, False


@pytest.mark.sqlite_only
def test_trigram_index_gives_exactly_the_scan_answer(mem: Memory, db_path: Path) -> None:
    texts = ["Release v2.3.1 fixed ERR_CONN_RESET.", "v2.3.10 is not v2.3.1x", "Ticket ENG-1234 reopened",
             "ENG-12345 is another ticket", "项目 XYZ 下个月开始收费", "下个月 见", "The “quoted” phrase",
             'A "tram 28" ride', "port 5433 and 54330"]
    mem.add(texts)
    mem.add([{"text": "v2.3.1 in another namespace"}], namespace="other")
    store = mem.store
    cases = [["v2.3.1"], ["eng-1234"], ["下个月"], ["tram 28"], ["5433"], ["err_conn_reset", "v2.3.1"],
             ['say "hi"'], ["nothing-here"]]
    from engramdb.store.substring import TRIGRAM_TABLE

    expected = {tuple(p): _scan(store, p, 20, "default", Filters()) for p in cases}
    assert store._reader().execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TRIGRAM_TABLE,)).fetchone() is None
    for patterns in cases:
        assert store.substring(patterns, 20, "default", Filters()) == expected[tuple(patterns)], patterns
    assert store._substring.ready  # built on first use
    assert [t for t in expected[("v2.3.1",)]] and len(expected[("eng-1234",)]) == 2
    # Later writes and deletes reach the index through its triggers.
    new = mem.add(["Hotfix v2.3.1b shipped"])
    found = store.substring(["v2.3.1"], 20, "default", Filters())
    assert found == _scan(store, ["v2.3.1"], 20, "default", Filters()) and len(found) == 3
    mem.delete(new)
    assert store.substring(["v2.3.1"], 20, "default", Filters()) == expected[("v2.3.1",)]
    # Short literals (two-digit numbers) still scan; filters and namespaces apply either way.
    assert store.substring(["28"], 20, "default", Filters()) == _scan(store, ["28"], 20, "default", Filters())
    assert len(store.substring(["v2.3.1"], 20, "other", Filters())) == 1
    # Another connection (or process) writing to the file keeps the index current too.
    with Memory(db_path, embedder="minilm") as other:
        other.add(["Rollback of v2.3.1 planned"])
    assert len(store.substring(["v2.3.1"], 20, "default", Filters())) == 3


@pytest.mark.sqlite_only
def test_a_read_only_store_without_the_index_scans(db_path: Path) -> None:
    with Memory(db_path, embedder="minilm") as mem:
        mem.add(["Release v2.3.1 fixed ERR_CONN_RESET.", "Release v2.3.0"])
    with Memory(db_path, read_only=True) as ro:
        assert ro.store.substring(["v2.3.1"], 5, "default", Filters())[0][1] == 1.0
        assert not ro.store._substring.ready
