"""The records that cross a process boundary: pydantic models, their JSON Schemas, and the
CLI's --json output checked through them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
from click.testing import CliRunner

from engramdb import Entry, Memory
from engramdb.cli import main
from engramdb.schema import MODELS, HitModel, SearchResultModel, to_wire


def test_a_hit_carries_the_full_entry(mem: Memory) -> None:
    mem.add([Entry(text="Alice fixed the sync bug in Lisbon.", persons=["Alice"], entities=["sync"],
                   keywords=["bug"], location="Lisbon", topic="work", metadata={"ticket": 42})])
    result = mem.search("sync bug", k=1)
    hit = result.to_dict()["hits"][0]
    for key, value in {"namespace": "default", "entities": ["sync"], "keywords": ["bug"], "location": "Lisbon",
                       "topic": "work", "metadata": {"ticket": 42}, "persons": ["Alice"], "kind": "fact"}.items():
        assert hit[key] == value, key
    assert set(hit) == set(HitModel.model_fields) - {"context"}  # context only when asked for
    assert set(mem.search("sync bug", k=1, context=1).to_dict()["hits"][0]) == set(HitModel.model_fields)
    assert SearchResultModel.model_validate(result.to_dict()).hits[0].channels["lexical"].rank == 1


def test_wire_models_refuse_what_they_do_not_describe() -> None:
    with pytest.raises(pydantic.ValidationError):
        to_wire("entry", {"id": "x", "namespace": "n", "kind": "memo", "text": "t"})
    with pytest.raises(pydantic.ValidationError):
        to_wire("entry", {"id": "x", "namespace": "n", "kind": "fact", "text": "t", "colour": "red"})


def test_engram_schema_prints_every_model(tmp_path: Path) -> None:
    everything = json.loads(CliRunner().invoke(main, ["schema"]).output)
    assert set(everything) == set(MODELS)
    hit = json.loads(CliRunner().invoke(main, ["schema", "hit"]).output)
    assert {"metadata", "entities", "namespace", "score", "channels", "superseded_by"} <= set(hit["properties"])
    module = subprocess.run([sys.executable, "-m", "engramdb.schema", "history_event"], capture_output=True,
                            text=True, check=True)
    assert json.loads(module.stdout)["properties"]["event"]["enum"] == ["ADD", "UPDATE", "DELETE"]


def test_every_json_output_matches_its_model(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "w.db")

    def run(*args: str):
        result = runner.invoke(main, ["--db", db, "--embedder", "minilm", *args])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    notes = Path(__file__).resolve().parents[1] / "examples" / "notes"
    MODELS["import_report"].model_validate(run("import", str(notes), "--json"))
    entry_id = run("add", "Alice moved to Lisbon.", "--json")["ids"][0]
    SearchResultModel.model_validate(run("search", "Lisbon", "--json"))
    MODELS["page"].model_validate(run("list", "--json"))
    [MODELS["entry"].model_validate(e) for e in run("get", entry_id, "--json")["entries"]]
    MODELS["entry"].model_validate(run("update", entry_id, "--text", "Alice moved to Porto.", "--json"))
    [MODELS["history_event"].model_validate(e) for e in run("history", entry_id, "--json")]
    [MODELS["namespace"].model_validate(n) for n in run("namespaces", "--json")]
    MODELS["stats"].model_validate(run("stats", "--json"))
    turn = run("add-turn", "Alice", "I adopted a cat.", "--session", "s1", "--timestamp", "2024-03-14T10:00", "--json")
    assert MODELS["turn_report"].model_validate(turn).turns == 1
    again = run("add-turn", "Alice", "I adopted a cat.", "--session", "s1", "--timestamp", "2024-03-14T10:00", "--json")
    assert MODELS["turn_report"].model_validate(again).turns == 0
