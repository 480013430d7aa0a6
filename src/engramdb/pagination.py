"""Opaque list cursors: a position in the namespace's insertion order, not an offset.

A cursor is URL-safe base64 of ``{"v": 1, "o": order, "r": rowid}``. It carries no namespace
and grants nothing: the namespace of the call that uses it decides what the page holds.
"""

from __future__ import annotations

import base64
import binascii
import json

from .errors import InputError


def encode_cursor(position: int, order: str) -> str:
    raw = json.dumps({"v": 1, "o": order, "r": position}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object, order: str) -> int:
    """The position a cursor from `encode_cursor` holds; anything else is an `InputError`."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > 200:
        raise InputError("cursor must be the next_cursor of a previous page")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InputError("cursor is not a cursor Engram made (pass a page's next_cursor as it is)") from None
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("r"), int) \
            or isinstance(data.get("r"), bool) or not 0 <= data["r"] < 2**63:
        raise InputError("cursor is not a cursor Engram made (pass a page's next_cursor as it is)")
    if data.get("o") != order:
        raise InputError(f"cursor was made for order={data.get('o')!r}, not {order!r}")
    return int(data["r"])
