"""A throw-away database on a PostgreSQL server (``engram eval --store URL``).

`scratch_database` connects with the URL a user gives (any database they may connect to,
typically ``postgres``), creates a fresh, uniquely named database on that server, yields its
URL, and drops it afterwards (also after an error). Nothing that exists is ever written:
the role needs ``CREATEDB`` (and, unless ``template1`` has them, the right to create the
``vector`` and ``pg_trgm`` extensions).
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from ...errors import StoreError
from .connections import connect
from ..open import check_postgres_url, redact, scrub
from .errors import map_pg_error


def with_database(url: str, database: str) -> str:
    """`url` naming `database` instead (the socket form ``?host=`` and the rest kept)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


@contextmanager
def scratch_database(url: str, prefix: str = "engram_eval") -> Iterator[str]:
    """Create a fresh database on `url`'s server, yield its URL, then drop it."""
    check_postgres_url(url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StoreError(f"{redact(url)}: this role cannot create the scratch database the evaluation runs in "
                         f"(it needs CREATEDB): {scrub(str(exc).strip(), url)}") from exc
    except psycopg.Error as exc:
        raise map_pg_error(exc, redact(url), url) from exc
    try:
        yield with_database(url, name)
    finally:
        try:
            with connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        except psycopg.Error as exc:  # pragma: no cover - the server went away
            raise map_pg_error(exc, f"{redact(url)} (dropping {name})", url) from exc
