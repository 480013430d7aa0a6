"""A scripted OpenAI-compatible chat server for tests (the one fake allowed: an external endpoint).

Not a test module. Tests import it as ``from llm_server import FakeLLMServer``; that works because ``tests/``
has no ``__init__.py``, so pytest's default "prepend" import mode puts ``tests/`` on ``sys.path``.

    with FakeLLMServer(["hello", {"status": 500}, '{"a": 1}']) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="m"))

Each scripted item answers one request, in order:

* ``str`` — a 200 reply with that assistant content and a usage block of rough (whitespace-word) token counts;
* ``{"content": str, "usage": {...}}`` — the same with explicit usage (``usage`` optional, ``model`` optional);
* ``{"status": int, "body": dict | str, "headers": {...}}`` — an error (or any raw) reply;
* ``{"delay": seconds, ...}`` — wait first (to trigger client timeouts), then answer with the rest of the item
  (empty content if nothing else is given).

``responses`` may instead be a callable ``(request_json) -> item``. Once the list is exhausted the server answers
500 with a message saying so. Every request is recorded in ``srv.requests`` as
``{"path": str, "headers": {lower-cased name: value}, "json": body}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Item = str | dict[str, Any]


def rough_tokens(text: str) -> int:
    """Whitespace-separated words: deterministic, so tests can assert exact token totals."""
    return len(text.split())


class FakeLLMServer:
    """A local ``/v1/chat/completions`` endpoint answering from a script; use as a context manager."""

    def __init__(self, responses: list[Item] | Callable[[dict[str, Any]], Item] | None = None) -> None:
        self.responses: list[Item] | Callable[[dict[str, Any]], Item] = (
            responses if callable(responses) else list(responses or []))
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # wakes delayed handlers at shutdown instead of letting them sleep on
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("FakeLLMServer is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received so far."""
        return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> Self:
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        # A short poll interval: shutdown() waits for the serve loop to notice, 0.5 s per test by default.
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _next(self, request: dict[str, Any]) -> Item:
        with self._lock:
            if callable(self.responses):
                return self.responses(request)
            if not self.responses:
                return {"status": 500, "body": {"error": {
                    "message": f"FakeLLMServer: no scripted response left for request #{len(self.requests)}",
                    "type": "server_error"}}}
            return self.responses.pop(0)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 drops connections from concurrent-client tests (1 s SYN retry)


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            with server._lock:
                server.requests.append({"path": self.path, "json": body,
                                        "headers": {k.lower(): v for k, v in self.headers.items()}})
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"FakeLLMServer: no route for POST {self.path}"}})
                return
            item = server._next(body)
            if isinstance(item, dict) and "delay" in item:
                if server._stopping.wait(float(item["delay"])):
                    return
                item = {k: v for k, v in item.items() if k != "delay"}
            if isinstance(item, dict) and "status" in item:
                status = int(item["status"])
                self._send(status, item.get("body", {"error": {"message": f"scripted HTTP {status}"}}),
                           item.get("headers", {}))
                return
            content = item if isinstance(item, str) else str(item.get("content", ""))
            prompt = sum(rough_tokens(str(m.get("content") or "")) for m in body.get("messages", []))
            completion = rough_tokens(content)
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            if isinstance(item, dict) and "usage" in item:
                usage = item["usage"]  # may be None: some servers send no usage block
            model = item.get("model", body.get("model")) if isinstance(item, dict) else body.get("model")
            self._send(200, {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": content}}],
                             "usage": usage})

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            payload = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test); nothing to tell it

    return Handler
