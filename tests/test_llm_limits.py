"""How long an LLM call may wait, and settings that are wrong: the environment's limits, a deadline across retries,
the circuit breaker for a down endpoint, and a base URL without a scheme (the only fake: the external endpoint)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import FakeLLMServer

from engramdb import InputError, Memory
from engramdb.llm import LLMClient, LLMConfig, LLMError, llm_from_env

USER = [{"role": "user", "content": "hello there world"}]
ENV_VARS = ["ENGRAM_LLM_BASE_URL", "ENGRAM_LLM_MODEL", "ENGRAM_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL",
            "OPENAI_API_KEY", "ENGRAM_LLM_TIMEOUT", "ENGRAM_LLM_MAX_RETRIES", "ENGRAM_LLM_DEADLINE",
            "ENGRAM_LLM_COOLDOWN"]
QUESTION = "when did Priya book the flights?"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def refused_url() -> Iterator[str]:
    """A bound but non-listening socket: a port that refuses connections."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def plan_of(result: object) -> dict[str, Any]:
    """The plan the search's trace records."""
    return dict(next(s for s in result.trace["stages"] if s["stage"] == "plan")["plan"])  # type: ignore[attr-defined]


@pytest.fixture()
def small(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "small.db", embedder="minilm") as memory:
        memory.add(["Priya booked the flights to Lisbon on 3 May 2024.", "Tom repainted the kitchen."])
        yield memory


def test_defaults_bound_a_call() -> None:
    config = LLMConfig(base_url="http://h/v1", model="m")
    assert (config.timeout, config.max_retries, config.deadline, config.cooldown) == (30.0, 3, 60.0, 30.0)


def test_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "m")
    monkeypatch.setenv("ENGRAM_LLM_TIMEOUT", "5")
    monkeypatch.setenv("ENGRAM_LLM_MAX_RETRIES", "1")
    monkeypatch.setenv("ENGRAM_LLM_DEADLINE", "12.5")
    monkeypatch.setenv("ENGRAM_LLM_COOLDOWN", "0")
    config = LLMConfig.from_env()
    assert (config.timeout, config.max_retries, config.deadline, config.cooldown) == (5.0, 1, 12.5, 0.0)
    assert LLMConfig.from_env(timeout=2.0).timeout == 2.0  # keyword overrides still win


@pytest.mark.parametrize(("var", "value"), [("ENGRAM_LLM_TIMEOUT", "abc"), ("ENGRAM_LLM_TIMEOUT", "0"),
                                            ("ENGRAM_LLM_MAX_RETRIES", "-1"), ("ENGRAM_LLM_MAX_RETRIES", "1.5"),
                                            ("ENGRAM_LLM_DEADLINE", "nan"), ("ENGRAM_LLM_COOLDOWN", "-3")])
def test_a_malformed_limit_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch, var: str,
                                                           value: str) -> None:
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "m")
    monkeypatch.setenv(var, value)
    with pytest.raises(LLMError) as err:
        llm_from_env()
    assert str(err.value).startswith(f"{var} must be ") and "\n" not in str(err.value)


def test_the_deadline_bounds_all_transport_retries() -> None:
    sleeps: list[float] = []
    with FakeLLMServer([{"delay": 30}] * 6) as srv:
        llm = LLMClient(LLMConfig(base_url=srv.base_url, model="m", timeout=0.3, max_retries=5, deadline=0.5),
                        sleep=sleeps.append)
        started = time.monotonic()
        with pytest.raises(LLMError, match="within the 0.5 s deadline"):
            llm.chat(USER)
        assert time.monotonic() - started < 2
    assert len(srv.requests) == 1 and sleeps == []  # a 0.5 s backoff would pass the deadline: no second try


def test_the_deadline_bounds_json_corrections_too() -> None:
    with FakeLLMServer([{"delay": 0.3, "content": "{bad"}] * 6) as srv:
        llm = LLMClient(LLMConfig(base_url=srv.base_url, model="m", json_retries=5, deadline=0.5),
                        sleep=lambda _: None)
        started = time.monotonic()
        with pytest.raises(LLMError, match="deadline"):  # the second try either times out or is the last
            llm.chat_json(USER)
        assert time.monotonic() - started < 1.5
    assert len(srv.requests) == 2


def test_a_down_endpoint_is_skipped_for_the_cooldown(refused_url: str) -> None:
    sleeps: list[float] = []
    llm = LLMClient(LLMConfig(base_url=refused_url, model="m", cooldown=0.3), sleep=sleeps.append)
    with pytest.raises(LLMError, match="unreachable after 4 attempts: Connection refused"):
        llm.chat(USER)
    assert sleeps == [0.5, 1.0, 2.0]
    with pytest.raises(LLMError) as err:
        llm.chat_json(USER)
    assert "skipped: it was unreachable (Connection refused)" in str(err.value)
    assert "ENGRAM_LLM_COOLDOWN" in str(err.value)
    assert sleeps == [0.5, 1.0, 2.0]  # no backoff, no request
    assert llm.calls[-1]["ok"] is False and "skipped" in llm.calls[-1]["error"]
    time.sleep(0.35)
    with pytest.raises(LLMError, match="unreachable after 4 attempts"):  # the cooldown over, it is tried again
        llm.chat(USER)


def test_cooldown_zero_never_skips(refused_url: str) -> None:
    llm = LLMClient(LLMConfig(base_url=refused_url, model="m", cooldown=0, max_retries=0), sleep=lambda _: None)
    for _ in range(2):
        with pytest.raises(LLMError, match="unreachable after 1 attempt: Connection refused"):
            llm.chat(USER)


def test_an_http_error_does_not_trip_the_breaker() -> None:
    with FakeLLMServer([{"status": 500, "body": "down"}, "up again"]) as srv:
        llm = LLMClient(LLMConfig(base_url=srv.base_url, model="m", max_retries=0), sleep=lambda _: None)
        with pytest.raises(LLMError, match="HTTP 500"):
            llm.chat(USER)
        assert llm.chat(USER).content == "up again"


def test_searches_skip_a_down_environment_endpoint(small: Memory, refused_url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", refused_url)
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "m")
    monkeypatch.setenv("ENGRAM_LLM_MAX_RETRIES", "0")
    first = small.search(QUESTION, planner="llm")
    assert any("Connection refused" in n for n in plan_of(first)["notes"])
    started = time.monotonic()
    second = small.search(QUESTION, planner="llm")
    assert time.monotonic() - started < 5
    (note,) = [n for n in plan_of(second)["notes"] if n.startswith("llm planner failed")]
    assert "skipped: it was unreachable" in note
    assert second.trace["llm_calls"][-1]["ok"] is False
    assert second[0].text.startswith("Priya booked")  # the rules planned it


def test_a_base_url_without_scheme_falls_back_with_a_note(small: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", "localhost:8000/v1")
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "m")
    with pytest.raises(LLMError) as err:
        LLMConfig.from_env()
    assert str(err.value) == ("ENGRAM_LLM_BASE_URL must start with http:// or https://, got 'localhost:8000/v1' "
                              "(e.g. http://localhost:8000/v1)")
    planned = small.search(QUESTION, planner="llm")
    assert plan_of(planned)["planner"] == "rules"
    assert any("ENGRAM_LLM_BASE_URL must start with http://" in n for n in plan_of(planned)["notes"])
    assert small.search(QUESTION, preset="simplemem")[0].text.startswith("Priya booked")  # reflection: no raise
    reflecting = small.search(QUESTION, preset={"extends": "default", "plan": {"reflect_rounds": 1}})
    assert any(n.startswith("reflection skipped (ENGRAM_LLM_BASE_URL") for n in plan_of(reflecting)["notes"])


def test_the_llm_extractor_refuses_a_base_url_without_scheme(small: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:11434/v1")
    monkeypatch.setenv("ENGRAM_LLM_MODEL", "m")
    before = small.count()
    with pytest.raises(InputError) as err:
        small.add_conversation([("Priya", "I booked the flights.")], extractor="llm")
    assert "OPENAI_BASE_URL must start with http://" in str(err.value) and "\n" not in str(err.value)
    assert small.count() == before  # refused before anything was written


def test_bad_planner_output_is_sent_back_once(small: Memory) -> None:
    with FakeLLMServer(["{bad"] * 4) as srv:
        small.llm = LLMClient(LLMConfig(base_url=srv.base_url, model="m"), sleep=lambda _: None)
        result = small.search(QUESTION, planner="llm")
    assert len(srv.chat_requests) == 2  # the answer and one correction (QUERIES.md), not max_retries + 1
    (note,) = [n for n in plan_of(result)["notes"] if n.startswith("llm planner failed")]
    assert "no valid JSON after 2 tries" in note
