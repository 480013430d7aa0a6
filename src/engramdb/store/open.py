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
from urllib.parse import SplitResult, unquote, unquote_to_bytes, urlsplit

from ..errors import InputError, StoreError
from .base import Store
from .closed import ClosedStore  # what a closed Memory holds: opened and closed here, for the layers above
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
        # urllib's reason may quote the password's text ("Port could not be cast to integer
        # value as 'Tr0ub4dor'"): the user name and password's own problem is said instead.
        reason = _userinfo_problem(url) or scrub(str(exc), url)
        raise InputError(f"store URL {redact(url)} is not a valid URL ({reason})") from None
    return parts


#: "postgresql:/…" or "postgres:…" (a slash or two missing): a URL typo, not a file name.
_ALMOST_URL = re.compile(r"\s*postgres(?:ql)?:/?(?!/)", re.IGNORECASE)
#: The connection parameters whose values are secrets (libpq's names), masked wherever a
#: target is shown: in a URL's query (``?password=…``) or a keyword/value string.
SECRET_PARAMETERS = ("password", "sslpassword")
#: libpq's keyword/value form (``host=db dbname=memory password=…``): not a file path
_CONNINFO = re.compile(r"\s*(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|options)\s*=")
_SECRET_PAIR = re.compile(r"\b(" + "|".join(SECRET_PARAMETERS) + r")(\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)", re.IGNORECASE)


def redact(target: str | Path) -> str:
    """The target as it may be shown in messages, logs and reports, every password hidden:
    the userinfo's (``postgresql://user:***@host/db``), a ``password=`` or ``sslpassword=``
    query parameter's (``?password=***``) and, in a libpq keyword/value string, its
    ``password=`` value. Works on the text (a malformed URL is masked too), so the rest of the
    URL is shown exactly as given. The one masking function: every message naming a store
    target goes through it."""
    text = str(target)
    if not is_url(text):
        return _SECRET_PAIR.sub(r"\1\2***", text) if _CONNINFO.match(text) else text
    scheme, rest = text.split("://", 1)
    userinfo, after = _userinfo(rest)
    user, colon, password = userinfo.partition(":")
    if colon and password:
        rest = f"{user}:***@{after}"
    before_query, question, query = rest.partition("?")
    if question:
        query, hash_, fragment = query.partition("#")
        pairs = []
        for pair in query.split("&"):
            key, equals, _value = pair.partition("=")
            pairs.append(f"{key}=***" if equals and unquote(key).strip().lower() in SECRET_PARAMETERS else pair)
        query = "&".join(pairs) + hash_ + fragment
    return f"{scheme}://{before_query}{question}{query}"


def _userinfo(rest: str) -> tuple[str, str]:
    """(userinfo, the rest) of a URL after its ``scheme://``: up to the last '@' before the
    query, as a password may hold '/', '@' or '#' (or, when none is there, a raw '?': up to
    the first '@' if nothing before it is a path); ('', rest) when there is none."""
    before_query = rest.partition("?")[0]
    if "@" in before_query:
        userinfo, _, after = rest.partition("?")[0].rpartition("@")
        return userinfo, after + rest[len(before_query):]
    first = rest.split("@", 1)[0]
    if "@" in rest and ":" in first and "/" not in first:
        return first, rest[len(first) + 1:]
    return "", rest


def secrets_of(target: str | Path) -> list[str]:
    """The password values `target` holds (as given and percent-decoded), to scrub from text a
    driver wrote (`redact` masks the target itself)."""
    text = str(target)
    found: list[str] = []
    if is_url(text):
        userinfo, after = _userinfo(text.split("://", 1)[1])
        found.append(userinfo.partition(":")[2])
        for pair in after.partition("?")[2].partition("#")[0].split("&"):
            key, equals, value = pair.partition("=")
            if equals and unquote(key).strip().lower() in SECRET_PARAMETERS:
                found.append(value)
    elif _CONNINFO.match(text):
        found += [m.group(3).strip("'") for m in _SECRET_PAIR.finditer(text)]
    return sorted({v for s in found for v in (s, unquote(s)) if len(v) >= 3}, key=len, reverse=True)


def scrub(message: str, target: str | Path) -> str:
    """`message` with every password `target` holds replaced by ***."""
    for secret in secrets_of(target):
        message = message.replace(secret, "***")
    return message


def backend_of(target: str | Path) -> str:
    """``"sqlite"`` or ``"postgres"``; an unknown URL scheme, a malformed URL or a libpq
    keyword/value string (which would otherwise be taken for a file name) raises `InputError`."""
    if not is_url(target):
        if isinstance(target, str) and _ALMOST_URL.match(target):
            # "postgresql:/user:pw@host/db" would be a file of that name, printed whole in errors
            raise InputError("store looks like a postgresql URL with a slash missing after the scheme; write "
                             "postgresql://user:password@host:5432/database")
        if isinstance(target, str) and _CONNINFO.match(target) and " " in target.strip():
            raise InputError(f"store {redact(target)!r} looks like a libpq keyword/value connection string; "
                             "give a postgresql:// URL (postgresql://user:password@host:5432/database)")
        return "sqlite"
    scheme = _split(str(target)).scheme.lower()
    if scheme in POSTGRES_SCHEMES:
        return "postgres"
    raise InputError(f"unknown store URL scheme {scheme!r}: give a SQLite file path or a postgresql:// URL")


#: What a URL's user name or password must not hold unencoded, and how each is written: a
#: password with '@', '#', '/' or '?' was read by the driver as part of the host or the path,
#: and its error text then showed part of it ("failed to resolve host 'ssw0rd!@127.0.0.1'").
_ENCODE = {"@": "%40", "#": "%23", "/": "%2F", "?": "%3F", "%": "%25", " ": "%20"}
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _userinfo_problem(url: str) -> str | None:
    """Why the URL's user name or password cannot be read as given, or None."""
    userinfo, _ = _userinfo(url.split("://", 1)[1])
    found = [c for c in "@#/? " if c in userinfo] + (["%"] if _BAD_PERCENT.search(userinfo) else [])
    if not found:
        try:
            unquote_to_bytes(userinfo).decode("utf-8")
        except UnicodeDecodeError:  # "%ec": the driver failed on it with a raw UnicodeDecodeError
            return "its user name or password is percent-encoded bytes that are not UTF-8 text (a % meant as " \
                   "itself is %25)"
        return None
    how = ", ".join(f"{c!r} as {_ENCODE[c]}" for c in found)
    return f"its user name or password holds a character a URL must percent-encode ({how})"


def check_postgres_url(url: str) -> None:
    """Refuse a PostgreSQL URL that names no database (``postgresql://host`` alone), or whose
    user name or password holds a character it must percent-encode (before any driver reads it,
    whose messages would show part of the password)."""
    problem = _userinfo_problem(url)
    if problem is not None:
        raise InputError(f"store URL {redact(url)} is not a valid URL: {problem}")
    parts = _split(url)
    if not parts.path.strip("/"):
        raise InputError(f"store URL {redact(url)} names no database (postgresql://user@host/DATABASE)")


def refuse_folder(target: str | Path) -> None:
    """A folder given as a SQLite store is named as such (it read "missing folder, or no
    permission" when written, "no store at" when read)."""
    if backend_of(target) == "sqlite" and Path(target).expanduser().is_dir():
        raise StoreError(f"{redact(target)} is a folder; a store is a file (e.g. {Path(target) / 'engram.db'})")


def store_exists(target: str | Path) -> bool:
    """Whether there is a store to read: a file for SQLite; a server is asked when opened."""
    return backend_of(target) != "sqlite" or Path(target).expanduser().is_file()


def can_write(target: str | Path) -> bool:
    """Whether this process may write the store (a SQLite file, its folder and its mount);
    a server decides for itself when written to."""
    return backend_of(target) != "sqlite" or writable(str(Path(target).expanduser()))


def require_postgres_driver() -> None:
    """Raise `StoreError` saying which extra to install when the PostgreSQL driver is absent
    (the base install is SQLite only; a bare `ModuleNotFoundError` told a user nothing)."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise StoreError("a postgresql:// store needs the PostgreSQL driver, which is not installed: "
                         "pip install 'engramdb[postgres]' (from a clone: pip install -e '.[postgres]')") from exc


def open_store(target: str | Path, *, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
               create: bool = True) -> Store:
    """Open the store `target` names, creating it if needed unless `read_only` or not
    `create` (then a missing file, or a database without the store's schema, is a
    `StoreError`: nothing is created by a command that only reads)."""
    if backend_of(target) == "postgres":
        check_postgres_url(str(target))
        require_postgres_driver()
        from .postgres import PostgresStore

        # A URL's scheme is any case (RFC 3986); libpq reads only a lower-case one as a URL.
        scheme, rest = str(target).split("://", 1)
        return PostgresStore(f"{scheme.lower()}://{rest}", read_only=read_only, busy_timeout_ms=busy_timeout_ms,
                             create=create)
    refuse_folder(target)
    if not create and not Path(target).expanduser().is_file():
        raise StoreError(f"no store at {redact(target)}")
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
    require_postgres_driver()
    from .postgres.scratch import scratch_database

    with scratch_database(server, prefix) as url:
        yield url
