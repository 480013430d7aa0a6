"""DNS-rebinding and cross-site guard for an open server bound to loopback.

A server on 127.0.0.1 may run open (no keys). A web page the user visits elsewhere can still
reach it: through a DNS name that resolves to 127.0.0.1 (rebinding: the request's ``Host`` is
that name), or by posting to it outright (its ``Origin`` is the other site). Either way the
request names a host that is not this machine's loopback, so it is refused before the app
sees it. The MCP endpoint's transport has its own guard of the same kind; this one covers the
whole app. A server bound to any other address needs keys and is not guarded here (its
public names are not known).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from starlette.responses import JSONResponse

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _hostname(value: str) -> str | None:
    """The host of a ``Host`` header (``name[:port]``, ``[::1]:port``) or an origin URL."""
    try:
        parts = urlsplit(value if "://" in value else f"//{value}")
        return (parts.hostname or "").lower() or None
    except ValueError:
        return None


class LoopbackGuard:
    """ASGI middleware: 403 for a request whose ``Host`` or ``Origin`` is not loopback."""

    def __init__(self, app: Any, bound: str, keys: Any = None) -> None:
        self.app, self.keys = app, keys
        self.names = LOOPBACK_NAMES | {bound.strip("[]").lower()}

    def allowed(self, headers: dict[bytes, bytes]) -> bool:
        host = headers.get(b"host")
        if host is not None and _hostname(host.decode("latin-1")) not in self.names:
            return False
        origin = headers.get(b"origin")
        # "null" is a sandboxed frame's or a local file's origin: a page, but not this server's
        if origin is not None and _hostname(origin.decode("latin-1")) not in self.names:
            return False
        return True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # With keys every request must bring one (a header no other site's page can add), so
        # the guard is for the open server; a keyed one may sit behind a proxy on another name.
        guarded = self.keys is None or not self.keys.configured()
        if scope["type"] == "http" and guarded and not self.allowed(dict(scope.get("headers") or [])):
            response = JSONResponse({"error": {"code": "forbidden", "message": (
                "this server listens on loopback and answers only requests addressed to it there "
                "(Host and Origin must be localhost, 127.0.0.1 or [::1])")}}, status_code=403)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
