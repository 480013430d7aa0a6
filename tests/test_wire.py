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


PRESET_NAMES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "src/engramdb/pipeline/presets").glob("*.toml"))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_presets_trace_has_the_schema_it_is_published_with(tmp_path: Path, preset: str) -> None:
    """The trace is a typed record (TraceModel): stages in order with their timings, a skipped
    stage's reason, recall's channels and, explained, the candidates with their evidence."""
    from engramdb.schema import TraceModel

    with Memory(tmp_path / "t.db", embedder="minilm") as mem:
        mem.add(["Alice likes oolong tea.", "Bob plays guitar.", "Carol moved to Lisbon in 2021."])
        mem.add_conversation([("Alice", "I adopted a puppy yesterday."), ("Bob", "What's its name?"), ("Alice", "Max.")],
                             session_id="s", session_time="2024-05-02T10:00:00")
        for question in ("what tea does Alice like?", "what did Alice do last week?", "zzz"):
            data = mem.search(question, k=3, preset=preset, explain=True, now="2024-05-08").to_dict()
            trace = TraceModel.model_validate(to_wire("search_result", data)["trace"])
            assert trace.stages[0].stage == "plan" and trace.now == {"value": "2024-05-08T00:00:00+00:00", "from": "given"}
            recall = next(s for s in trace.stages if s.stage == "recall")
            assert recall.channels is not None and all(c.k >= 1 for c in recall.channels.values())
            assert recall.channels or preset == "symbolic"  # the symbolic channel alone runs on a name
            assert all(s.ms is not None for s in trace.stages)
    schema = json.dumps(SearchResultModel.model_json_schema())
    assert "TraceStageModel" in schema and "TraceCandidateModel" in schema
