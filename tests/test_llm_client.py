"""The OpenAI-compatible chat client against a scripted local server (the only fake: an external endpoint)."""

from __future__ import annotations

import socket
import threading

import pytest
from llm_server import FakeLLMServer
from pydantic import BaseModel

from engramdb.llm import ChatResponse, LLMClient, LLMConfig, LLMError, llm_from_env
from engramdb.llm import client as client_module

USER = [{"role": "user", "content": "hello there world"}]
ENV_VARS = ["ENGRAM_LLM_BASE_URL", "ENGRAM_LLM_MODEL", "ENGRAM_LLM_API_KEY",
            "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"]


class Person(BaseModel):
    name: str
    age: int


def make_client(base_url: str, sleeps: list[float] | None = None, **config) -> LLMClient:
    """A client whose backoff sleeps are recorded instead of waited through."""
    record = sleeps if sleeps is not None else []
    return LLMClient(LLMConfig(base_url=base_url, model=config.pop("model", "test-model"), **config),
                     sleep=record.append)


def test_request_protocol_and_response():
    with FakeLLMServer(["hi back", '{"x": 1}']) as srv:
        llm = make_client(srv.base_url + "/", api_key="sk-test", temperature=0.3)
        response = llm.chat(USER, max_tokens=16)
        llm.chat(USER, json_mode=True, temperature=0.9)
    assert isinstance(response, ChatResponse)
    assert (response.content, response.model, response.attempts) == ("hi back", "test-model", 1)
    assert (response.prompt_tokens, response.completion_tokens) == (3, 2)
    assert response.latency_ms > 0
    first, second = srv.requests
    assert first["path"] == "/v1/chat/completions"  # trailing slash of base_url stripped
    assert first["headers"]["authorization"] == "Bearer sk-test"
    assert first["headers"]["content-type"] == "application/json"
    assert first["json"] == {"model": "test-model", "messages": USER, "temperature": 0.3, "max_tokens": 16}
    assert second["json"]["response_format"] == {"type": "json_object"}
    assert second["json"]["temperature"] == 0.9 and "max_tokens" not in second["json"]


def test_no_authorization_header_without_key():
    with FakeLLMServer(["ok"]) as srv:
        make_client(srv.base_url).chat(USER)
    assert "authorization" not in srv.requests[0]["headers"]


def test_token_accounting_and_call_trace():
    script = [{"content": "a", "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
              {"content": '{"k": 2}', "usage": {"prompt_tokens": 7, "completion_tokens": 4}},
              {"content": "no usage block", "usage": None},
              {"status": 403, "body": {"error": {"message": "forbidden model"}}}]
    with FakeLLMServer(script) as srv:
        llm = make_client(srv.base_url)
        llm.chat(USER, purpose="rewrite")
        value, _ = llm.chat_json(USER, purpose="extract")
        assert llm.chat(USER).prompt_tokens == 0
        with pytest.raises(LLMError):
            llm.chat(USER, purpose="doomed")
    assert value == {"k": 2}
    assert llm.usage.to_dict() == {"calls": 4, "prompt_tokens": 17, "completion_tokens": 7, "failures": 1,
                                   "retries": 0}
    assert [c["purpose"] for c in llm.calls] == ["rewrite", "extract", "", "doomed"]
    assert [c["ok"] for c in llm.calls] == [True, True, True, False]
    assert llm.calls[0]["prompt_tokens"] == 10 and llm.calls[0]["completion_tokens"] == 3
    assert llm.calls[0]["latency_ms"] > 0
    assert "forbidden model" in llm.calls[3]["error"]


def test_usage_is_consistent_under_concurrent_calls():
    with FakeLLMServer(lambda request: {"content": "x", "usage": {"prompt_tokens": 2, "completion_tokens": 1}}) as srv:
        llm = make_client(srv.base_url)
        threads = [threading.Thread(target=lambda: [llm.chat(USER) for _ in range(5)]) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert llm.usage.to_dict() == {"calls": 40, "prompt_tokens": 80, "completion_tokens": 40, "failures": 0,
                                   "retries": 0}
    assert len(llm.calls) == 40


def test_call_trace_is_capped(monkeypatch):
    monkeypatch.setattr(client_module, "_MAX_TRACE", 3)
    with FakeLLMServer(["a", "b", "c", "d", "e"]) as srv:
        llm = make_client(srv.base_url)
        for purpose in "12345":
            llm.chat(USER, purpose=purpose)
    assert [c["purpose"] for c in llm.calls] == ["3", "4", "5"]
    assert llm.usage.calls == 5


def test_retry_on_500_then_success():
    sleeps: list[float] = []
    with FakeLLMServer([{"status": 500, "body": {"error": {"message": "overloaded"}}}, "recovered"]) as srv:
        llm = make_client(srv.base_url, sleeps)
        response = llm.chat(USER)
    assert response.content == "recovered" and response.attempts == 2
    assert llm.usage.retries == 1 and llm.usage.failures == 0 and llm.usage.calls == 1
    assert sleeps == [0.5]
    assert len(srv.requests) == 2


def test_backoff_doubles_and_is_capped():
    sleeps: list[float] = []
    with FakeLLMServer([{"status": 503}] * 3 + ["ok"]) as srv:
        assert make_client(srv.base_url, sleeps, backoff=3.0).chat(USER).attempts == 4
    assert sleeps == [3.0, 6.0, 8.0]


def test_5xx_exhausted_names_status_and_message():
    sleeps: list[float] = []
    with FakeLLMServer([{"status": 502, "body": {"error": {"message": "bad gateway"}}}] * 4) as srv:
        llm = make_client(srv.base_url, sleeps)
        with pytest.raises(LLMError) as err:
            llm.chat(USER)
    assert str(err.value) == f"LLM endpoint {srv.base_url} failed after 4 attempts: HTTP 502: bad gateway"
    assert sleeps == [0.5, 1.0, 2.0]
    assert llm.usage.to_dict() == {"calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "failures": 1,
                                   "retries": 3}


def test_no_retry_on_401():
    sleeps: list[float] = []
    with FakeLLMServer([{"status": 401, "body": {"error": {"message": "Invalid API key provided"}}}, "never"]) as srv:
        llm = make_client(srv.base_url, sleeps, api_key="wrong")
        with pytest.raises(LLMError) as err:
            llm.chat(USER)
    message = str(err.value)
    assert "401" in message and "Invalid API key provided" in message and "\n" not in message
    assert len(srv.requests) == 1 and sleeps == []
    assert llm.usage.failures == 1 and llm.usage.retries == 0


@pytest.mark.parametrize(("retry_after", "expected"), [("2", 2.0), ("0.25", 0.25), ("120", 8.0)])
def test_retry_after_is_honoured_and_capped(retry_after, expected):
    sleeps: list[float] = []
    with FakeLLMServer([{"status": 429, "headers": {"Retry-After": retry_after}}, "ok"]) as srv:
        assert make_client(srv.base_url, sleeps).chat(USER).attempts == 2
    assert sleeps == [expected]


def test_timeout_is_retried_then_succeeds():
    sleeps: list[float] = []
    with FakeLLMServer([{"delay": 30}, "in time"]) as srv:
        response = make_client(srv.base_url, sleeps, timeout=0.2).chat(USER)
    assert response.content == "in time" and response.attempts == 2
    assert sleeps == [0.5]


def test_timeout_exhausted_raises():
    sleeps: list[float] = []
    with FakeLLMServer([{"delay": 30}, {"delay": 30}]) as srv:
        llm = make_client(srv.base_url, sleeps, timeout=0.2, max_retries=1)
        with pytest.raises(LLMError) as err:
            llm.chat(USER)
    assert str(err.value) == f"LLM endpoint {srv.base_url} unreachable after 2 attempts: timed out after 0.2 s"
    assert len(srv.requests) == 2 and sleeps == [0.5]


def test_connection_refused_message():
    # A bound but non-listening socket reserves a port that refuses connections.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        sleeps: list[float] = []
        llm = make_client(base_url, sleeps)
        with pytest.raises(LLMError) as err:
            llm.chat(USER)
    assert str(err.value) == f"LLM endpoint {base_url} unreachable after 4 attempts: Connection refused"
    assert sleeps == [0.5, 1.0, 2.0]
    assert llm.calls[-1]["ok"] is False


def test_unexpected_reply_is_an_llm_error():
    with (FakeLLMServer([{"status": 200, "body": "<html>not an API</html>"}]) as srv,
          pytest.raises(LLMError, match="unexpected reply.*not an API")):
            make_client(srv.base_url).chat(USER)


def test_exhausted_script_says_so():
    with FakeLLMServer([]) as srv, pytest.raises(LLMError, match="no scripted response left"):
            make_client(srv.base_url, max_retries=0).chat(USER)


def test_base_url_without_scheme_is_rejected():
    with pytest.raises(LLMError, match="http://"):
        LLMClient(LLMConfig(base_url="localhost:8000/v1", model="m"))


@pytest.mark.parametrize(("content", "expected"), [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": {"b": [1, 2]}}\n```', {"a": {"b": [1, 2]}}),
    ('```\n[1, 2, 3]\n```\nThese are the ids.', [1, 2, 3]),
    ('Sure! Here is the result: {"name": "Ada", "tags": ["x"]} Let me know if {anything} else is needed.',
     {"name": "Ada", "tags": ["x"]}),
    ('Answer:\n[{"id": 1}, {"id": 2}]\n', [{"id": 1}, {"id": 2}]),
])
def test_chat_json_extracts_json_from_fences_and_prose(content, expected):
    with FakeLLMServer([content]) as srv:
        llm = make_client(srv.base_url)
        value, response = llm.chat_json(USER)
    assert value == expected and response.content == content
    assert srv.requests[0]["json"]["response_format"] == {"type": "json_object"}
    assert llm.usage.retries == 0


def test_invalid_json_gets_a_corrective_retry():
    sleeps: list[float] = []
    with FakeLLMServer(["I cannot answer in JSON, sorry.", '{"name": "Ada", "age": 36}']) as srv:
        llm = make_client(srv.base_url, sleeps)
        person, response = llm.chat_json(USER, validate=Person.model_validate, purpose="extract")
    assert person == Person(name="Ada", age=36)
    assert response.content == '{"name": "Ada", "age": 36}'
    retry_messages = srv.requests[1]["json"]["messages"]
    assert retry_messages[: len(USER)] == USER
    assert retry_messages[-2] == {"role": "assistant", "content": "I cannot answer in JSON, sorry."}
    assert retry_messages[-1]["role"] == "user" and "no JSON object or array" in retry_messages[-1]["content"]
    assert llm.usage.to_dict()["retries"] == 1 and llm.usage.calls == 2 and llm.usage.failures == 1
    assert [c["ok"] for c in llm.calls] == [False, True]
    assert sleeps == []  # the server was fine; no backoff needed


def test_validation_failure_exhausts_retries():
    bad = '{"name": "Ada", "age": "very old"}'
    with FakeLLMServer([bad] * 3 + ['{"name": "Ada", "age": 36}']) as srv:
        llm = make_client(srv.base_url, max_retries=2, json_retries=2)
        with pytest.raises(LLMError) as err:
            llm.chat_json(USER, validate=Person.model_validate)
    message = str(err.value)
    assert "after 3 tries" in message and "age" in message and "valid integer" in message
    assert "\n" not in message and "errors.pydantic.dev" not in message
    assert len(srv.requests) == 3  # json_retries=2 → 3 tries, the 4th scripted answer is never requested
    assert "valid integer" in srv.requests[2]["json"]["messages"][-1]["content"]
    assert llm.usage.failures == 3 and llm.usage.retries == 2


def test_response_format_rejection_falls_back_once_and_is_remembered():
    sleeps: list[float] = []
    rejection = {"status": 400, "body": {"error": {"message": "Unsupported parameter: 'response_format'"}}}
    with FakeLLMServer([rejection, '{"a": 1}', '{"b": 2}']) as srv:
        llm = make_client(srv.base_url, sleeps)
        first, response = llm.chat_json(USER)
        second, _ = llm.chat_json(USER)
    assert (first, second) == ({"a": 1}, {"b": 2})
    assert response.attempts == 2
    assert "response_format" in srv.requests[0]["json"]
    assert "response_format" not in srv.requests[1]["json"] and "response_format" not in srv.requests[2]["json"]
    assert sleeps == [] and llm.usage.failures == 0


def test_other_400_in_json_mode_is_not_retried():
    with (FakeLLMServer([{"status": 400, "body": {"error": {"message": "context length exceeded"}}}]) as srv,
          pytest.raises(LLMError, match="HTTP 400: context length exceeded")):
            make_client(srv.base_url).chat_json(USER)
    assert len(srv.requests) == 1


def test_llm_from_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert llm_from_env() is None
    with pytest.raises(LLMError, match="ENGRAM_LLM_BASE_URL.*ENGRAM_LLM_MODEL"):
        LLMConfig.from_env()
    monkeypatch.setenv("ENGRAM_LLM_BASE_URL", "http://127.0.0.1:8000/v1/")
    assert llm_from_env() is None  # a model is still missing
    with pytest.raises(LLMError) as err:
        LLMConfig.from_env()
    assert str(err.value).startswith("no LLM configured: set ENGRAM_LLM_MODEL (or OPENAI_MODEL), e.g.")

    monkeypatch.setenv("ENGRAM_LLM_MODEL", "qwen")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    llm = llm_from_env(timeout=5.0)
    assert isinstance(llm, LLMClient)
    assert llm.config.base_url == "http://127.0.0.1:8000/v1"
    assert (llm.config.model, llm.config.api_key, llm.config.timeout) == ("qwen", "sk-fallback", 5.0)

    monkeypatch.setenv("ENGRAM_LLM_API_KEY", "sk-engram")
    assert llm_from_env().config.api_key == "sk-engram"
    assert llm_from_env(model="other").config.model == "other"


def test_openai_env_fallback(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-x")
    config = LLMConfig.from_env()
    assert (config.base_url, config.model, config.api_key) == ("https://api.example.com/v1", "gpt-x", None)
    assert (config.max_retries, config.backoff, config.temperature) == (3, 0.5, 0.0)
