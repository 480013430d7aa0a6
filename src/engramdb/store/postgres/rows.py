"""Reading rows: an entry from its stored JSON, and the one row a query always returns (an
aggregate, ``SHOW``, a function call), typed — the driver's ``fetchone()`` may return None,
which these queries never do."""

from __future__ import annotations

from typing import Any

import psycopg

from ...errors import StoreError
from ..base import decode_entry  # noqa: F401 - read from here by the backend's modules


def one(cur: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The row the last query returned."""
    row = cur.fetchone()
    if row is None:
        raise StoreError("the database returned no row for a query that always returns one")
    return tuple(row)


def scalar(cur: psycopg.Cursor[Any]) -> Any:
    """The first column of the row the last query returned."""
    return one(cur)[0]


