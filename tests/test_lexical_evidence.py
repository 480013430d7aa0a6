"""The lexical weight follows how much of the query's idf mass its best row matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Entry, Memory
from engramdb.errors import EngramError
from engramdb.pipeline.presets import load_preset

FACTS = ["Alice is allergic to peanuts.", "Alice prefers window seats on flights.", "Alice works at Northwind.",
         "Alice does not drink coffee after 2pm.", "Alice's mother lives in Hangzhou.", "Alice runs every Saturday.",
         "Alice's car is a blue Tesla.", "Alice 不吃香菜。", "Alice 周三晚上上钢琴课。", "Alice 的女儿叫 Lily。",
         "Alice 喜欢喝乌龙茶，不喜欢绿茶。", "Alice supports Arsenal.", "Alice is learning Japanese.",
         "Alice's dentist is Dr. Zhou.", "Alice uses a Kindle for reading.", "Alice's favourite film is Spirited Away.",
         "Alice's gym is on Nanjing Road.", "Alice's laptop is a ThinkPad X1.", "Alice's passport expires in 2027.",
         "Alice is vegetarian on Mondays.", "Alice 住在浦东。", "Alice hates loud restaurants.",
         "Alice plays badminton with Bob.", "Alice has two cats.", "Alice sings in a choir."]


@pytest.fixture(scope="module")
def alice(tmp_path_factory: pytest.TempPathFactory):
    with Memory(tmp_path_factory.mktemp("evidence") / "alice.db") as mem:
        mem.add([Entry(text=t, persons=["Alice"]) for t in FACTS])
        yield mem


def test_a_name_every_entry_carries_does_not_rank_by_length_noise(alice: Memory) -> None:
    # Every row matches only "alice" (idf near 0); "tea" is in no entry. The answer is the
    # embedding's best; BM25's length-normalisation noise, z-scored, had put it 19th of 25.
    result = alice.search("what tea does Alice like?", k=5, explain=True)
    assert "乌龙茶" in result.hits[0].text
    recall = next(s for s in result.trace["stages"] if s["stage"] == "recall")
    lexical = recall["channels"]["lexical"]
    assert lexical["evidence"] < 0.2 and 0 <= lexical["weight_scale"] < 1
    fuse = next(s for s in result.trace["stages"] if s["stage"] == "fuse")
    assert fuse["weights"]["lexical"] < 0.6


def test_a_focused_question_keeps_the_full_lexical_weight(alice: Memory) -> None:
    result = alice.search("Alice ThinkPad laptop", k=3, explain=True)
    assert "ThinkPad" in result.hits[0].text
    recall = next(s for s in result.trace["stages"] if s["stage"] == "recall")
    assert recall["channels"]["lexical"]["evidence"] >= 0.2 and "weight_scale" not in recall["channels"]["lexical"]
    fuse = next(s for s in result.trace["stages"] if s["stage"] == "fuse")
    assert fuse["weights"]["lexical"] == 0.6


def test_evidence_is_a_lexical_setting(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "default"\n[channels.semantic]\nk = 100\nweight = 0.4\nevidence = 0.1\n')
    with pytest.raises(EngramError, match="semantic"):
        load_preset(str(bad))
    assert load_preset("default").channels["lexical"].evidence == 0.2
