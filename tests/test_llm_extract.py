"""The LLM fact extractor against a local OpenAI-compatible test server (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeLLMServer

from engramdb import Memory
from engramdb.conversation import Conversation, Turn, get_extractor
from engramdb.conversation.llm_extract import LLMExtractor
from engramdb.errors import InputError
from engramdb.llm import LLMClient, LLMConfig
from engramdb.store.base import Filters

FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


def _client(srv: FakeLLMServer, retries: int = 1) -> LLMClient:
    return LLMClient(LLMConfig(base_url=srv.base_url, model="test-model", max_retries=retries, json_retries=retries),
                     sleep=lambda _: None)


def _reply(*facts: dict[str, Any]) -> str:
    return json.dumps({"facts": list(facts)})


GOOD = _reply(
    {"text": "Caroline attended an LGBTQ support group on 7 May 2023.", "source_turns": ["s1:1"],
     "persons": ["Caroline"], "entities": ["LGBTQ support group"], "keywords": ["support group"],
     "topic": "community", "time": "2023-05-07"},
    {"text": "Melanie plans to paint a sunrise with her kids in the week of 15 May 2023.",
     "source_turns": ["s1:2", "s1:1"], "persons": ["Melanie"], "time": None},
)


def test_llm_facts_keep_provenance_and_event_time(mem: Memory) -> None:
    with FakeLLMServer([GOOD, _reply()]) as srv:
        mem.llm = _client(srv)
        report = mem.import_path(FIXTURES / "turns.jsonl", extractor="llm")
        sent = srv.chat_requests
    assert report["extractor"] == "llm" and report["failures"] == [] and report["facts"] == 2
    assert report["llm"]["calls"] == 2 and report["llm"]["prompt_tokens"] > 0
    # The prompt carries turn ids, speakers and the turn's absolute time, and asks for JSON.
    user = sent[0]["messages"][1]["content"]
    assert "[s1:1] (2023-05-08 13:56) Caroline: I went to a LGBTQ support group yesterday." in user
    assert sent[0]["response_format"] == {"type": "json_object"}
    facts = {f.text: f for f in mem.get(mem.store.ids("default", Filters(kinds=["fact"])))}
    support = facts["Caroline attended an LGBTQ support group on 7 May 2023."]
    assert support.timestamp == "2023-05-07T00:00:00+00:00" and support.metadata["extractor"] == "llm"
    (turn,) = mem.get(support.derived_from)
    assert turn.source.turn_id == "s1:1" and turn.kind == "turn"
    painting = facts["Melanie plans to paint a sunrise with her kids in the week of 15 May 2023."]
    assert [t.source.turn_id for t in mem.get(painting.derived_from)] == ["s1:2", "s1:1"]
    assert painting.timestamp == "2023-05-08T13:56:00+00:00"  # no event time: when it was said


def test_invented_turn_ids_are_corrected_or_the_window_is_reported(mem: Memory) -> None:
    invented = _reply({"text": "Caroline adopted Oscar.", "source_turns": ["s9:9"]})
    fixed = _reply({"text": "Caroline adopted a puppy named Oscar on 3 June 2023.", "source_turns": ["s2:1"]})
    # Session 1: invalid twice -> reported; session 2: invalid once, then corrected.
    with FakeLLMServer([invented, "not json at all", invented, fixed]) as srv:
        mem.llm = _client(srv, retries=1)
        report = mem.import_path(FIXTURES / "turns.jsonl", extractor="llm")
        second_try = srv.chat_requests[3]["messages"][-1]["content"]
    assert report["turns"] == 5 and report["facts"] == 1
    (failure,) = report["failures"]
    assert failure["session_id"] == "s1" and failure["turns"] == ["s1:1", "s1:2"]
    assert "no valid JSON" in failure["error"]
    assert "s9:9" in second_try  # the model is told what was wrong
    # The failed window's turns are stored anyway, as raw turns.
    assert mem.count(filters={"kind": "turn", "session_id": "s1"}) == 2
    assert mem.count(filters={"kind": "fact", "session_id": "s1"}) == 0


def test_unreachable_endpoint_is_reported_not_fatal(mem: Memory) -> None:
    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, timeout=2),
                       sleep=lambda _: None)
    report = mem.add_conversation([("Ann", "I bought a red bicycle yesterday.")], session_id="x",
                                  session_time="2024-01-02T10:00:00", extractor=LLMExtractor(client))
    assert report.facts == 0 and report.turns == 1
    assert "unreachable" in report.failures[0]["error"]
    assert mem.count(filters={"kind": "turn"}) == 1


def test_windows_overlap_and_cover_every_turn() -> None:
    extractor = LLMExtractor(client=None, window=40, overlap=2)  # type: ignore[arg-type]
    turns = [Turn("A", f"t{i}", f"s:{i}", "s") for i in range(100)]
    windows = extractor.windows(turns)
    assert [(w[0].turn_id, w[-1].turn_id) for w in windows] == [("s:0", "s:39"), ("s:38", "s:77"), ("s:76", "s:99")]
    with pytest.raises(ValueError):
        LLMExtractor(client=None, window=4, overlap=4)  # type: ignore[arg-type]


def test_duplicate_facts_from_overlapping_windows_are_stored_once() -> None:
    fact = {"text": "Ann bought a red bicycle on 1 January 2024.", "source_turns": ["s:2"]}
    with FakeLLMServer([_reply(fact), _reply(fact)]) as srv:
        extractor = LLMExtractor(_client(srv), window=3, overlap=1)
        turns = [Turn("Ann", f"turn {i}", f"s:{i}", "s") for i in range(1, 5)]
        result = extractor.extract(Conversation("s", turns), {t.turn_id: f"id{i}" for i, t in enumerate(turns)}, "ns")
    assert len(result.facts) == 1 and result.facts[0].derived_from == ["id1"]


def test_llm_extractor_without_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGRAM_LLM_BASE_URL", "OPENAI_BASE_URL", "ENGRAM_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InputError, match="ENGRAM_LLM_BASE_URL"):
        get_extractor("llm")


def test_failed_or_other_extractor_sessions_are_extracted_again(mem: Memory) -> None:
    with FakeLLMServer([{"status": 500, "body": "down"}, _reply()]) as srv:
        mem.llm = _client(srv, retries=0)
        first = mem.import_path(FIXTURES / "turns.jsonl", extractor="llm")
    assert len(first["failures"]) == 1 and first["failures"][0]["session_id"] == "s1"
    (turn,) = mem.get(mem.store.ids("default", Filters(kinds=["turn"], turn_id="s1:1")))
    assert turn.metadata["extracted_by"] == "llm (failed)"
    # Re-import: only the failed session is extracted again; the good one is a no-op.
    with FakeLLMServer([GOOD]) as srv:
        mem.llm = _client(srv)
        second = mem.import_path(FIXTURES / "turns.jsonl", extractor="llm")
        assert len(srv.chat_requests) == 1
    assert second["sessions_unchanged"] == 1 and second["facts"] == 2 and second["failures"] == []
    (turn,) = mem.get(mem.store.ids("default", Filters(kinds=["turn"], turn_id="s1:1")))
    assert turn.metadata["extracted_by"] == "llm"
    # Switching extractor replaces the LLM facts with offline ones.
    third = mem.import_path(FIXTURES / "turns.jsonl", extractor="offline")
    assert third["sessions_unchanged"] == 0 and third["removed"] >= 2
    extractors = {f.metadata["extractor"] for f in mem.get(mem.store.ids("default", Filters(kinds=["fact"])))}
    assert extractors == {"offline"}


def test_add_conversation_and_add_turn_report_their_llm_usage(mem: Memory) -> None:
    fact = _reply({"text": "Priya booked the flights to Lisbon.", "source_turns": ["s1:1"]})
    with FakeLLMServer([{"content": fact, "usage": {"prompt_tokens": 40, "completion_tokens": 9}},
                        "not json", {"content": _reply(), "usage": {"prompt_tokens": 30, "completion_tokens": 2}}]) as srv:
        mem.llm = _client(srv)
        first = mem.add_conversation([("Priya", "I booked the flights to Lisbon.")], session_id="s1", extractor="llm")
        second = mem.add_turn("Tom", "Nice!", session_id="s1", extractor="llm")
        again = mem.add_turn("Tom", "Nice!", session_id="s1", extractor="llm")  # a retry: no call
    assert first.llm == {"calls": 1, "prompt_tokens": 40, "completion_tokens": 9, "failures": 0, "retries": 0}
    assert second.llm is not None and second.llm["calls"] == 2 and second.llm["failures"] == 1
    assert second.llm["prompt_tokens"] >= 30 and second.llm["retries"] == 1  # this call's usage, not the client's
    assert again.turns == 0 and again.llm == {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                              "failures": 0, "retries": 0}
    assert mem.add_conversation([("A", "b")], session_id="s2").llm is None  # the offline extractor


def test_cli_import_warns_of_failed_extraction_on_stderr_with_json_too(tmp_path: Path) -> None:
    """CLI.md: extraction failures "are also printed as warnings". With --json they were not:
    the report on stdout holds them, and stderr now says so too, as it does without --json."""
    from click.testing import CliRunner

    from engramdb.cli import main

    env = {"ENGRAM_LLM_BASE_URL": "http://127.0.0.1:9/v1", "ENGRAM_LLM_MODEL": "m", "ENGRAM_LLM_MAX_RETRIES": "0",
           "ENGRAM_LLM_TIMEOUT": "2", "ENGRAM_EMBEDDER": "minilm"}
    args = ["--db", str(tmp_path / "m.db"), "import", str(FIXTURES / "turns.jsonl"), "--extractor", "llm", "-q"]
    for extra in (["--json"], []):
        result = CliRunner().invoke(main, [*args, *extra], env=env)
        assert result.exit_code == 0, result.output
        assert "warning: extraction failed for s1" in result.stderr and "(kept as raw turns)" in result.stderr
        if extra:
            assert json.loads(result.stdout)["failures"][0]["session_id"] == "s1"
        else:
            assert "2 sessions, 5 turns, 0 facts" in result.stdout, result.stdout
