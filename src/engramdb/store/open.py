"""Which store a target names, and opening it: the one place above which no backend is known.

A target is a SQLite file path, or a PostgreSQL URL: ``postgresql://user:password@host:5432/db``
or the Unix-socket form ``postgresql://user:@/db?host=/path/to/socketdir`` (``postgres://`` is
accepted too). `Memory`, the CLI's ``--db`` / ``$ENGRAM_DB`` and the server all come here.
"""

from __future__ import annotations

import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import SplitResult, urlsplit, urlunsplit

from ..errors import InputError, StoreError
from .base import Store
from .connection import BUSY_TIMEOUT_MS, writable

POSTGRES_SCHEMES = ("postgresql", "postgres")


def is_url(target: str | Path) -> bool:
    """Whether `target` is a database URL rather than a file path."""
    return isinstance(target, str) and "://" in target.split("?", 1)[0][:32]


def _split(url: str) -> SplitResult:
    """The URL's parts, its port and host checked (urllib reads them lazily and raises
    ValueError then): a malformed URL is one `InputError`, with its password hidden."""
    try:
        parts = urlsplit(url)
        parts.port, parts.hostname  # noqa: B018 - parsed here so that they fail here
    except ValueError as exc:
        raise InputError(f"store URL {_mask(url)} is not a valid URL ({exc})") from None
    return parts


def _mask(url: str) -> str:
    """The password of ``scheme://user:password@…`` replaced by ***, without parsing the URL."""
    return _PASSWORD.sub(r"\1***@", url)


_PASSWORD = re.compile(r"(://[^/@:]*:)[^@/]+@")


def backend_of(target: str | Path) -> str:
    """``"sqlite"`` or ``"postgres"``; an unknown URL scheme or a malformed URL raises `InputError`."""
    if not is_url(target):
        return "sqlite"
    scheme = _split(str(target)).scheme.lower()
    if scheme in POSTGRES_SCHEMES:
        return "postgres"
    raise InputError(f"unknown store URL scheme {scheme!r}: give a SQLite file path or a postgresql:// URL")


def redact(target: str | Path) -> str:
    """The target as it may be shown in messages and logs: a URL without its password."""
    if not is_url(target):
        return str(target)
    try:
        parts = urlsplit(str(target))
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return _mask(str(target))
    if not parts.password:  # none, or empty (the Unix-socket form)
        return str(target)
    netloc = f"{parts.username or ''}:***@{host}" + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def check_postgres_url(url: str) -> None:
    """Refuse a PostgreSQL URL that names no database (``postgresql://host`` alone)."""
    parts = _split(url)
    if not parts.path.strip("/"):
        raise InputError(f"store URL {redact(url)} names no database (postgresql://user@host/DATABASE)")


def store_exists(target: str | Path) -> bool:
    """Whether there is a store to read: a file for SQLite; a server is asked when opened."""
    return backend_of(target) != "sqlite" or Path(target).expanduser().is_file()


def can_write(target: str | Path) -> bool:
    """Whether this process may write the store (a SQLite file, its folder and its mount);
    a server decides for itself when written to."""
    return backend_of(target) != "sqlite" or writable(str(Path(target).expanduser()))


def open_store(target: str | Path, *, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
               create: bool = True) -> Store:
    """Open the store `target` names, creating it if needed unless `read_only` or not
    `create` (then a missing file, or a database without the store's schema, is a
    `StoreError`: nothing is created by a command that only reads)."""
    if backend_of(target) == "postgres":
        check_postgres_url(str(target))
        from .postgres import PostgresStore

        return PostgresStore(str(target), read_only=read_only, busy_timeout_ms=busy_timeout_ms, create=create)
    if not create and not Path(target).expanduser().is_file():
        raise StoreError(f"no store at {target}")
    from .sqlite import SQLiteStore

    return SQLiteStore(target, read_only=read_only, busy_timeout_ms=busy_timeout_ms)


@contextmanager
def scratch_target(server: str | None = None, prefix: str = "engram_eval") -> Iterator[str]:
    """A fresh, empty store for a throw-away run (``engram eval``), removed afterwards: a file
    in a temporary folder, or (`server` a PostgreSQL URL) a new database on that server."""
    if server is None:
        with tempfile.TemporaryDirectory(prefix=prefix.replace("_", "-") + "-") as tmp:
            yield os.path.join(tmp, "eval.db")
        return
    if backend_of(server) != "postgres":
        raise InputError(f"a scratch store needs a postgresql:// URL of a server, not {redact(server)!r}")
    from .postgres.scratch import scratch_database

    with scratch_database(server, prefix) as url:
        yield url
