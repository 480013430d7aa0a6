"""HEAD wherever GET is served (RFC 9110: a general-purpose server supports both): the request
is answered as its GET, with the same status and headers and no body. FastAPI's routes name
GET alone, so ``curl -I`` and uptime monitors got 405 on every endpoint. /mcp is left to MCP's
transport, whose GET opens a stream."""

from __future__ import annotations

from typing import Any

Scope = dict[str, Any]


class HeadAsGet:
    """ASGI middleware: a HEAD request runs as GET and its body is dropped on the way out."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or scope["path"].startswith("/mcp"):
            await self.app(scope, receive, send)
            return

        async def headers_only(message: dict[str, Any]) -> None:
            if message["type"] != "http.response.body":
                await send(message)
            elif not message.get("more_body", False):  # the last part: end the response, empty
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET"}, receive, headers_only)
