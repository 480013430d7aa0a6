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
