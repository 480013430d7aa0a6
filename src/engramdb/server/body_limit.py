"""A request-body size limit that holds however the body is sent.

A declared ``Content-Length`` over the limit is refused before the body is read. A body sent
without one (``Transfer-Encoding: chunked``) is read up to the limit and refused past it, then
handed to the app as it came: a chunked body cannot slip past the limit, and the app never
reads more than it.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

Scope = dict[str, Any]


class BodyLimit:
    """ASGI middleware: 413 ``too_large`` (the API's error envelope) for bodies over `limit` bytes."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            if not length.isdigit() or int(length) > self.limit:
                await self._refuse(scope, receive, send)
                return
            await self.app(scope, receive, send)  # the server reads no more than declared
            return
        # Held as one buffer, not as the messages it came in: a body of a million one-byte
        # chunks costs its bytes, not a million message objects.
        body = bytearray()
        ended: dict[str, Any] | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                ended = message  # the client went away: let the app see it
                break
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        pending: list[dict[str, Any]] = [{"type": "http.request", "body": bytes(body), "more_body": False}]
        if ended is not None:
            pending = [{"type": "http.request", "body": bytes(body), "more_body": True}, ended]

        async def replay() -> dict[str, Any]:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Any, send: Any) -> None:
        await JSONResponse({"error": {"code": "too_large", "message": f"request body over {self.limit:,} bytes"}},
                           status_code=413, headers={"connection": "close"})(scope, receive, send)
