"""Entry ids in the path: ``/v1/memories/{id}`` and ``/v1/memories/{id}/history``.

An id may be a path or a URL (``notes/trip.md#2``, ``https://example.org/a``), so it takes the
rest of the path, slashes included: a client may send them as they are or percent-encoded
(``%2F``, as ``encodeURIComponent`` and ``quote(id, safe="")`` write them; the server decodes
the path before routing, so both arrive as ``/``). A GET whose path ends in a ``/history``
sent as such is the history of the id before it; an id that itself ends in ``/history`` is
reached with that slash encoded (``a%2Fhistory``), which the history route tells apart by the
path's raw bytes.
"""

from __future__ import annotations

from urllib.parse import unquote

from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import Match
from starlette.types import Scope

#: how /openapi.json describes the path parameter
ENTRY_ID = ("the entry's id, percent-encoded (encodeURIComponent, quote(id, safe='')); its slashes may also be "
            "sent as they are, but an id ending in /history must encode the slash before it")


class _EntryIdConvertor(Convertor[str]):
    """The rest of the path, slashes included, but never empty (``/v1/memories/`` names no entry: 404)."""

    regex = ".+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("entry_id", _EntryIdConvertor())

#: the path of an entry, and of its history
ENTRY, HISTORY = "/v1/memories/{entry_id:entry_id}", "/v1/memories/{entry_id:entry_id}/history"


class HistoryRoute(APIRoute):
    """Matches only when the path's last segment, as sent, is ``history``: ``a%2Fhistory`` is
    the entry ``a/history``, not the history of ``a``."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        raw = scope.get("raw_path") if scope.get("type") == "http" else None
        if raw is not None and unquote(raw.rsplit(b"/", 1)[-1].decode("latin-1")) != "history":
            return Match.NONE, {}
        return super().matches(scope)
