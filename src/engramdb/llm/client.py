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


class LLMNotConfigured(LLMError):
    """No endpoint or model is set: callers fall back to their offline behaviour (a misconfiguration is an LLMError)."""


# name, type, lower bound, whether the bound itself is allowed
_NUMERIC_ENV: dict[str, tuple[str, type, float, bool]] = {
    "timeout": ("ENGRAM_LLM_TIMEOUT", float, 0.0, False),
    "max_retries": ("ENGRAM_LLM_MAX_RETRIES", int, 0, True),
    "deadline": ("ENGRAM_LLM_DEADLINE", float, 0.0, False),
    "cooldown": ("ENGRAM_LLM_COOLDOWN", float, 0.0, True),
}


def _env_number(var: str, kind: type, low: float, inclusive: bool, raw: str) -> float | int:
    """``raw`` parsed as ``kind`` and checked against ``low``; a one-line LLMError naming ``var`` otherwise."""
    want = f"{'an integer' if kind is int else 'a number of seconds'} {'>=' if inclusive else '>'} {low:g}"
    try:
        value = kind(raw.strip())
    except ValueError:
        raise LLMError(f"{var} must be {want}, not {raw!r:.40}") from None
    if value != value or value < low or (value == low and not inclusive) or value == float("inf"):
        raise LLMError(f"{var} must be {want}, not {raw!r:.40}")
    return value


def check_base_url(url: str, source: str = "base_url") -> str:
    """``url`` without its trailing slash; a one-line LLMError naming ``source`` when it has no http(s) scheme."""
    if not isinstance(url, str) or not url.strip().startswith(("http://", "https://")):
        hint = f" (e.g. http://{url.strip()})" if isinstance(url, str) and "://" not in url and url.strip() else ""
        raise LLMError(f"{source} must start with http:// or https://, got {url!r:.80}{hint}")
    return url.strip().rstrip("/")


@dataclass
class LLMConfig:
    """Where and how to reach the chat endpoint. ``base_url`` looks like ``http://host:port/v1``.

    ``timeout`` bounds one HTTP attempt, ``max_retries`` the transport retries (network errors, timeouts, 429, 5xx)
    of one request, ``json_retries`` the times unusable JSON is sent back with the error, and ``deadline`` the whole
    of one ``chat`` / ``chat_json`` call: attempts, backoff and corrections. After a call fails for transport
    reasons the client skips the endpoint for ``cooldown`` seconds (0: never), failing at once.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 30.0
    max_retries: int = 3
    backoff: float = 0.5  # first retry delay in seconds, doubled each retry, capped at 8 s
    temperature: float = 0.0
    deadline: float = 60.0
    json_retries: int = 1
    cooldown: float = 30.0

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Build a config from ``ENGRAM_LLM_*`` (or ``OPENAI_*``) variables; keyword overrides win.

        Raises `LLMNotConfigured` when no endpoint or model is set, and an `LLMError` naming the variable when one
        is malformed (a base URL without ``http://``, ``ENGRAM_LLM_TIMEOUT=abc``)."""
        env = os.environ
        url_var = "ENGRAM_LLM_BASE_URL" if env.get("ENGRAM_LLM_BASE_URL") else "OPENAI_BASE_URL"
        values: dict[str, Any] = {
            "base_url": env.get("ENGRAM_LLM_BASE_URL") or env.get("OPENAI_BASE_URL"),
            "model": env.get("ENGRAM_LLM_MODEL") or env.get("OPENAI_MODEL"),
            "api_key": env.get("ENGRAM_LLM_API_KEY") or env.get("OPENAI_API_KEY"),
        }
        for name, (var, kind, low, inclusive) in _NUMERIC_ENV.items():
            if env.get(var, "").strip():
                values[name] = _env_number(var, kind, low, inclusive, env[var])
        values.update(overrides)
        missing = [f"{var} (or OPENAI_{var[11:]})" for name, var in
                   (("base_url", "ENGRAM_LLM_BASE_URL"), ("model", "ENGRAM_LLM_MODEL")) if not values.get(name)]
        if missing:
            raise LLMNotConfigured(f"no LLM configured: set {' and '.join(missing)}, e.g. "
                                   "ENGRAM_LLM_BASE_URL=http://localhost:8000/v1 ENGRAM_LLM_MODEL=qwen2.5-7b-instruct")
        if "base_url" not in overrides:
            check_base_url(values["base_url"], url_var)
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
        # urllib would raise a bare ValueError later
        self.config = replace(config, base_url=check_base_url(config.base_url, "LLM base URL"))
        self.usage = LLMUsage()
        self.calls: list[dict[str, Any]] = []
        self._sleep = sleep  # injectable so tests do not wait through backoff
        self._json_mode_ok = True  # flipped off once the server rejects response_format
        self._trace_lock = threading.Lock()
        self._down_until = 0.0  # circuit breaker: monotonic time before which the endpoint is skipped
        self._down_reason = ""

    def chat(self, messages: list[dict[str, Any]], *, json_mode: bool = False, max_tokens: int | None = None,
             temperature: float | None = None, purpose: str = "") -> ChatResponse:
        """Send ``messages`` and return the assistant reply; raise ``LLMError`` once retries are exhausted."""
        deadline = time.monotonic() + self.config.deadline
        response = self._complete(messages, json_mode, max_tokens, temperature, purpose, deadline)
        self._record(purpose, response, None)
        return response

    def chat_json(self, messages: list[dict[str, Any]], *, validate: Callable[[Any], T] | None = None,
                  max_tokens: int | None = None, purpose: str = "") -> tuple[T, ChatResponse]:
        """Ask for JSON, parse it and run ``validate`` (e.g. ``Model.model_validate``) on it. Unusable output is
        sent back with the error ``json_retries`` times (transport retries are separate); the whole call, all
        rounds, ends by the config's ``deadline``."""
        deadline = time.monotonic() + self.config.deadline
        history = list(messages)
        last_error = ""
        rounds = max(self.config.json_retries, 0) + 1
        tries = 0
        while True:
            tries += 1
            response = self._complete(history, True, max_tokens, None, purpose, deadline)
            try:
                value = extract_json(response.content)
                result = validate(value) if validate is not None else value
            except Exception as exc:  # noqa: BLE001 - any validator rejection is worth one more try
                last_error = _one_line(exc)
                self._record(purpose, response, f"invalid output: {last_error}")
                if tries >= rounds or time.monotonic() >= deadline:
                    break
                self.usage.add(retries=1)
                history += [{"role": "assistant", "content": response.content},
                            {"role": "user", "content": f"That reply was not usable: {last_error}. "
                             "Answer again with only the corrected JSON, no prose or code fences."}]
                continue
            self._record(purpose, response, None)
            return result, response  # type: ignore[return-value]  # T is Any when validate is None
        late = f" (the {self.config.deadline:g} s deadline passed)" if tries < rounds else ""
        raise LLMError(f"LLM {self.config.model} gave no valid JSON after {tries} {'try' if tries == 1 else 'tries'}"
                       f"{late}: {last_error}")

    def _trip(self, reason: str) -> None:
        """Open the circuit breaker: calls in the next ``cooldown`` seconds fail at once."""
        if self.config.cooldown > 0:
            self._down_reason = reason
            self._down_until = time.monotonic() + self.config.cooldown

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
                  temperature: float | None, purpose: str, deadline: float) -> ChatResponse:
        """One logical request; a failure is recorded here so both public methods count it the same way."""
        try:
            return self._request(messages, json_mode, max_tokens, temperature, deadline)
        except LLMError as exc:
            self._record(purpose, None, str(exc))
            raise

    def _request(self, messages: list[dict[str, Any]], json_mode: bool, max_tokens: int | None,
                 temperature: float | None, deadline: float) -> ChatResponse:
        """POST with retries and backoff on transient failures, and the response_format fallback; give up by
        ``deadline`` (monotonic), and at once while the circuit breaker holds the endpoint as down."""
        cfg = self.config
        skipped_for = self._down_until - time.monotonic()
        if skipped_for > 0:
            raise LLMError(f"LLM endpoint {cfg.base_url} skipped: it {self._down_reason} "
                           f"{cfg.cooldown - skipped_for:.0f} s ago; the next call tries again in {skipped_for:.0f} s "
                           "(ENGRAM_LLM_COOLDOWN)")
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
            timeout = min(cfg.timeout, max(deadline - time.monotonic(), 0.001))
            try:
                with urllib.request.urlopen(request, timeout=timeout) as reply:
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
                last = f"timed out after {timeout:.3g} s" if "timed out" in cause.lower() else cause
                verb = "unreachable"
            out_of_time = time.monotonic() + delay >= deadline
            if failed >= cfg.max_retries or out_of_time:
                within = f" within the {cfg.deadline:g} s deadline" if out_of_time and failed < cfg.max_retries else ""
                if verb == "unreachable":  # down or too slow; an HTTP error means it is up, so it is not skipped
                    self._trip(f"was unreachable ({last})")
                raise LLMError(f"LLM endpoint {cfg.base_url} {verb} after {attempts} "
                               f"attempt{'s' if attempts != 1 else ''}{within}: {last}")
            failed += 1
            self.usage.add(retries=1)
            self._sleep(delay)
        self._down_until = 0.0
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
    """A client from the environment (see ``LLMConfig.from_env``), or None when no endpoint/model is configured.
    A malformed setting raises `LLMError` naming the variable."""
    try:
        config = LLMConfig.from_env(**overrides)
    except LLMNotConfigured:
        return None  # callers fall back to their offline behaviour
    return LLMClient(config)


class EnvLLM:
    """The client built from the environment, kept while the settings stay the same, so its circuit breaker (and
    response_format memory) outlives one search. ``get`` is `llm_from_env` otherwise."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[LLMConfig, LLMClient] | None = None

    def get(self) -> LLMClient | None:
        try:
            config = LLMConfig.from_env()
        except LLMNotConfigured:
            return None
        with self._lock:
            if self._cached is None or self._cached[0] != config:
                self._cached = (config, LLMClient(config))
            return self._cached[1]
