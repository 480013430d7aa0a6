"""The web page of `engram serve`: static files shipped in the package (``web/``), served at
``/`` and ``/web/…``. The page is plain HTML, CSS and JavaScript modules with no build step
and nothing fetched from elsewhere; it calls the public ``/v1`` API with the user's key, so
it can do exactly what that key may do and nothing more."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

WEB_DIR = Path(__file__).with_name("web")

# The page loads only its own files and talks only to its own origin; nothing inline.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _Static(StaticFiles):
    """The page's assets, revalidated on each load (ETag) so an upgrade is never half-cached."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def mount_page(app: FastAPI) -> None:
    """Serve ``index.html`` at ``/`` and the assets under ``/web``."""
    index = WEB_DIR / "index.html"

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(index, media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    app.mount("/web", _Static(directory=WEB_DIR), name="web")
