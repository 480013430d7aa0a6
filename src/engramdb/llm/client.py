"""A small stdlib-only chat client for OpenAI-compatible ``/v1/chat/completions`` servers (vLLM, Ollama, ...)."""

from __future__ import annotations

import http.client
import json
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from ..errors import EngramError

T = TypeVar("T")

_BACKOFF_CAP = 8.0  # seconds; also caps a server's Retry-After so one call cannot stall a pipeline for minutes
_MAX_TRACE = 1000  # per-call records kept in ``LLMClient.calls``; long runs must not grow memory without bound
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class LLMError(EngramError):
    """The LLM endpoint is misconfigured, unreachable, refused the request or kept returning unusable output."""


@dataclass
class LLMConfig:
    """Where and how to reach the chat endpoint. ``base_url`` looks like ``http://host:port/v1``."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 0.5  # first retry delay in seconds, doubled each retry, capped at 8 s
    temperature: float = 0.0

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Build a config from ``ENGRAM_LLM_*`` (or ``OPENAI_*``) variables; keyword overrides win."""
        env = os.environ
        values: dict[str, Any] = {
            "base_url": env.get("ENGRAM_LLM_BASE_URL") or env.get("OPENAI_BASE_URL"),
            "model": env.get("ENGRAM_LLM_MODEL") or env.get("OPENAI_MODEL"),
            "api_key": env.get("ENGRAM_LLM_API_KEY") or env.get("OPENAI_API_KEY"),
        }
        values.update(overrides)
        missing = [f"{var} (or OPENAI_{var[11:]})" for name, var in
                   (("base_url", "ENGRAM_LLM_BASE_URL"), ("model", "ENGRAM_LLM_MODEL")) if not values.get(name)]
        if missing:
            raise LLMError(f"no LLM configured: set {' and '.join(missing)}, "
                           "e.g. ENGRAM_LLM_BASE_URL=http://localhost:8000/v1 ENGRAM_LLM_MODEL=qwen2.5-7b-instruct")
        return cls(**values)


@dataclass
class ChatResponse:
    """One completed chat call. ``latency_ms`` covers all attempts (what the caller waited)."""

    content: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    attempts: int


@dataclass
class LLMUsage:
    """Running totals for one client, safe to share between threads.

    ``calls`` counts logical requests (not HTTP attempts); ``failures`` those that raised or gave unusable JSON;
    ``retries`` the extra requests: transport retries, the response_format fallback and JSON corrections.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        """Add to counters atomically (clients may be shared by worker threads)."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def to_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for traces and JSON output)."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def _one_line(text: object, limit: int = 300) -> str:
    """Collapse an error to one short line: messages are shown to CLI users and fed back to the model."""
    lines = [ln.strip() for ln in str(text).splitlines()
             if ln.strip() and not ln.strip().startswith("For further information")]  # pydantic's doc links
    joined = " ".join(lines)
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def _server_message(exc: urllib.error.HTTPError) -> str:
    """The error text from an HTTP error body, whatever shape the server uses."""
    try:
        raw = exc.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        raw = ""
    try:
        err = json.loads(raw)  # OpenAI: {"error": {"message": ...}}; others: {"error": "..."} or {"detail": ...}
        err = err.get("error", err.get("detail", err.get("message", err))) if isinstance(err, dict) else raw
        err = err.get("message", err) if isinstance(err, dict) else err
    except ValueError:
        err = raw or exc.reason
    return _one_line(err)


def _reason(exc: BaseException) -> str:
    """A short transport failure cause: ``Connection refused``, not ``<urlopen error [Errno 111] ...>``."""
    while isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        exc = exc.reason
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else _one_line(exc or type(exc).__name__)


def extract_json(text: str) -> Any:
    """Parse the JSON in a model reply, tolerating ```json fences and prose around the outermost {...} or [...]."""
    decoder = json.JSONDecoder()
    for candidate in (text.strip(), *(m.strip() for m in _FENCE.findall(text)), text):
        # raw_decode from the first bracket that starts a complete value yields the outermost {...}/[...] and
        # ignores trailing prose (even prose containing braces, which a last-"}" heuristic would swallow).
        for match in re.finditer(r"[{\[]", candidate):
            try:
                return decoder.raw_decode(candidate, match.start())[0]
            except ValueError:
                continue
    raise ValueError("no JSON object or array found in the reply")


class LLMClient:
    """Chat completions with retries, JSON extraction/validation and token accounting."""

    def __init__(self, config: LLMConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        if not config.base_url.startswith(("http://", "https://")):  # urllib would raise a bare ValueError later
            raise LLMError(f"LLM base URL must start with http:// or https://, got {config.base_url!r}")
        self.config = replace(config, base_url=config.base_url.rstrip("/"))
        self.usage = LLMUsage()
        self.calls: list[dict[str, Any]] = []
        self._sleep = sleep  # injectable so tests do not wait through backoff
        self._json_mode_ok = True  # flipped off once the server rejects response_format
        self._trace_lock = threading.Lock()

    def chat(self, messages: list[dict[str, Any]], *, json_mode: bool = False, max_tokens: int | None = None,
             temperature: float | None = None, purpose: str = "") -> ChatResponse:
        """Send ``messages`` and return the assistant reply; raise ``LLMError`` once retries are exhausted."""
        response = self._complete(messages, json_mode, max_tokens, temperature, purpose)
        self._record(purpose, response, None)
        return response

    def chat_json(self, messages: list[dict[str, Any]], *, validate: Callable[[Any], T] | None = None,
                  max_tokens: int | None = None, purpose: str = "") -> tuple[T, ChatResponse]:
        """Ask for JSON, parse it and run ``validate`` (e.g. ``Model.model_validate``) on it. Unusable output is
        retried up to ``max_retries`` times with the error fed back to the model (transport retries are separate)."""
        history = list(messages)
        last_error = ""
        for round_ in range(self.config.max_retries + 1):
            response = self._complete(history, True, max_tokens, None, purpose)
            try:
                value = extract_json(response.content)
                result = validate(value) if validate is not None else value
            except Exception as exc:  # noqa: BLE001 - any validator rejection is worth one more try
                last_error = _one_line(exc)
                self._record(purpose, response, f"invalid output: {last_error}")
                if round_ < self.config.max_retries:
                    self.usage.add(retries=1)
                    history += [{"role": "assistant", "content": response.content},
                                {"role": "user", "content": f"That reply was not usable: {last_error}. "
                                 "Answer again with only the corrected JSON, no prose or code fences."}]
                continue
            self._record(purpose, response, None)
            return result, response  # type: ignore[return-value]  # T is Any when validate is None
        raise LLMError(f"LLM {self.config.model} gave no valid JSON after {self.config.max_retries + 1} tries: "
                       f"{last_error}")

    def _record(self, purpose: str, response: ChatResponse | None, error: str | None) -> None:
        """Count one logical call and keep a small trace entry for pipeline traces."""
        prompt = response.prompt_tokens if response else 0
        completion = response.completion_tokens if response else 0
        self.usage.add(calls=1, prompt_tokens=prompt, completion_tokens=completion, failures=int(error is not None))
        entry: dict[str, Any] = {"purpose": purpose, "prompt_tokens": prompt, "completion_tokens": completion,
                                 "latency_ms": response.latency_ms if response else None, "ok": error is None,
                                 **({"error": error} if error else {})}
        with self._trace_lock:
            self.calls.append(entry)
            del self.calls[:-_MAX_TRACE]

    def _complete(self, messages: list[dict[str, Any]], json_mode: bool, max_tokens: int | None,
                  temperature: float | None, purpose: str) -> ChatResponse:
        """One logical request; a failure is recorded here so both public methods count it the same way."""
        try:
            return self._request(messages, json_mode, max_tokens, temperature)
        except LLMError as exc:
            self._record(purpose, None, str(exc))
            raise

    def _request(self, messages: list[dict[str, Any]], json_mode: bool, max_tokens: int | None,
                 temperature: float | None) -> ChatResponse:
        """POST with retries and backoff on transient failures, and the response_format fallback."""
        cfg = self.config
        url = f"{cfg.base_url}/chat/completions"
        payload: dict[str, Any] = {"model": cfg.model, "messages": messages,
                                   "temperature": cfg.temperature if temperature is None else temperature,
                                   **({"max_tokens": max_tokens} if max_tokens is not None else {})}
        use_json = json_mode and self._json_mode_ok
        headers = {"Content-Type": "application/json"}
        if cfg.api_key:
            headers["Authorization"] = f"Bearer {cfg.api_key}"
        started = time.perf_counter()
        attempts = failed = 0
        last = ""
        while True:
            attempts += 1
            body = dict(payload, response_format={"type": "json_object"}) if use_json else payload
            request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers)
            delay = min(cfg.backoff * 2**failed, _BACKOFF_CAP)
            try:
                with urllib.request.urlopen(request, timeout=cfg.timeout) as reply:
                    raw = reply.read()
                break
            except urllib.error.HTTPError as exc:
                message = _server_message(exc)
                if exc.code == 400 and use_json and "response_format" in message.lower():
                    # Some llama.cpp/Ollama builds reject JSON mode; the prompt still asks for JSON, so go on without.
                    use_json = self._json_mode_ok = False
                    self.usage.add(retries=1)
                    continue
                if exc.code != 429 and exc.code < 500:
                    raise LLMError(f"LLM endpoint {cfg.base_url} rejected the request: HTTP {exc.code}: {message}")
                last = f"HTTP {exc.code}: {message}"
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                try:
                    delay = min(max(float(retry_after), 0.0), _BACKOFF_CAP) if retry_after else delay
                except ValueError:
                    pass  # an HTTP-date; the normal backoff is a fine substitute
                verb = "failed"
            except (TimeoutError, OSError, http.client.HTTPException) as exc:  # URLError is an OSError
                cause = _reason(exc)
                last = f"timed out after {cfg.timeout:g} s" if "timed out" in cause.lower() else cause
                verb = "unreachable"
            if failed >= cfg.max_retries:
                raise LLMError(f"LLM endpoint {cfg.base_url} {verb} after {attempts} attempts: {last}")
            failed += 1
            self.usage.add(retries=1)
            self._sleep(delay)
        try:
            data = json.loads(raw)
            usage = data.get("usage") or {}  # some servers omit it; tokens then count as 0
            return ChatResponse(content=data["choices"][0]["message"].get("content") or "",
                                model=str(data.get("model") or cfg.model),
                                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                                completion_tokens=int(usage.get("completion_tokens") or 0),
                                latency_ms=(time.perf_counter() - started) * 1000, attempts=attempts)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMError(f"LLM endpoint {url} sent an unexpected reply ({type(exc).__name__}: {_one_line(exc)}): "
                           f"{_one_line(raw.decode('utf-8', 'replace'), 120)}") from None


def llm_from_env(**overrides: Any) -> LLMClient | None:
    """A client from the environment (see ``LLMConfig.from_env``), or None when no endpoint/model is configured."""
    try:
        config = LLMConfig.from_env(**overrides)
    except LLMError:
        return None  # callers fall back to their offline behaviour
    return LLMClient(config)
