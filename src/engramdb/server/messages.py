"""What a client of the servers is told of an error (HTTP and MCP alike)."""

from __future__ import annotations

import logging

from ..errors import EngramError, StoreUnavailableError


def told(exc: EngramError) -> str:
    """What a client is told of an error. A store that cannot be reached says only that: its
    text names the database's user, host, port and name (and the driver's own words about
    them), which is the operator's to read — in the log — not every key holder's."""
    if isinstance(exc, StoreUnavailableError):
        logging.getLogger("uvicorn.error").warning("store unavailable: %s", exc)
        return f"{exc.reason}; try again shortly (the reason is in the server's log)"
    return str(exc)
