"""Where psycopg's errors become Engram's: no driver error reaches a caller (as for SQLite in
`store.connection`)."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import errors as pg

from ...errors import (
    EngramError, InputError, ReadOnlyStoreError, StoreBusyError, StoreCorruptError, StoreError, StoreUnavailableError,
)
from ..open import scrub
from ..translate import translating
from .schema import SCHEMA


def map_pg_error(exc: psycopg.Error, location: str, url: str | None = None) -> EngramError:
    """The Engram error a psycopg exception means, with a message a user can act on; with
    `url` (the store's, password and all), no password it holds appears in the message, even
    where the driver's own text would repeat one (`open.scrub`)."""
    error = _map(exc, location)
    if url is not None:
        clean = scrub(str(error), url)
        if clean != str(error):
            error = type(error)(clean)
    return error


def _map(exc: psycopg.Error, location: str) -> EngramError:
    bad_url = _bad_url(exc)
    if bad_url is not None:  # what the URL asks of the driver it does not understand
        return InputError(f"store URL {location} is not a valid PostgreSQL URL ({bad_url})")
    if isinstance(exc, (pg.SerializationFailure, pg.DeadlockDetected, pg.LockNotAvailable)):
        return StoreBusyError(f"store {location} is busy: another writer held its lock too long; try again")
    if isinstance(exc, pg.QueryCanceled):
        return StoreBusyError(f"store {location}: the query was cancelled (statement or lock timeout); try again")
    if isinstance(exc, (pg.ReadOnlySqlTransaction, pg.InsufficientPrivilege)):
        refusal = str(exc).strip().splitlines()[0]
        return ReadOnlyStoreError(f"store {location} cannot be written by this database user ({refusal})"
                                  f"{_ask_for(refusal)}")
    if isinstance(exc, (pg.DataCorrupted, pg.IndexCorrupted)):
        return StoreCorruptError(f"store {location} is damaged ({str(exc).strip()}); restore it from a backup")
    if isinstance(exc, pg.DiskFull):
        return StoreError(f"store {location}: the database server's disk is full")
    if isinstance(exc, (pg.UndefinedFile, pg.FeatureNotSupported)) or (
            isinstance(exc, pg.UndefinedObject) and "vector" in str(exc)):
        return StoreError(f"store {location}: the database lacks the pgvector or pg_trgm extension; ask its "
                          "administrator to run CREATE EXTENSION vector; CREATE EXTENSION pg_trgm; "
                          f"({str(exc).strip()})")
    if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
        return InputError("PostgreSQL cannot store NUL (\\x00) characters in text; remove them from the entry")
    if isinstance(exc, psycopg.OperationalError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        said = _FATAL.search(str(exc))
        if said is not None:  # the server answered: name what it refused, not the network
            reason = said.group(1) or (f"{said.group(2)} (give it in the URL, PGPASSWORD or ~/.pgpass)")
            message = f"store {location}: the database server refused the connection: {reason}"
            if reason.startswith(("sorry, too many clients", "remaining connection slots")):  # transient
                return StoreUnavailableError(f"{message} (every connection its max_connections allows is taken; "
                                             "try again, or close idle clients)",
                                             "the database server refused the connection: too many clients")
            return StoreError(message)
        return StoreUnavailableError(f"store {location}: cannot reach the database server ({first})",
                                     "cannot reach the database server")
    return StoreError(f"store {location}: {type(exc).__name__}: {str(exc).strip()}")


def _ask_for(said: str) -> str:
    """What to ask the database's administrator for, when a privilege is what is missing."""
    if "create extension" in said:
        return ("; ask the database's administrator to run, once: CREATE EXTENSION IF NOT EXISTS vector; "
                "CREATE EXTENSION IF NOT EXISTS pg_trgm;")
    database = re.search(r'permission denied for database "?([^"\s]+)"?', said)
    if database is not None:
        return (f"; ask the database's administrator for GRANT CREATE ON DATABASE {database.group(1)} TO this user, "
                f"or to create the schema {SCHEMA} owned by it")
    return ""


#: what libpq and psycopg say of a connection string (a URL's query parameters) they cannot use
_CONNINFO_PROBLEM = re.compile(r"invalid URI query parameter|invalid connection option|bad value for|"
                               r"invalid [\w ]+ value|for connection option|invalid percent-encoded token|"
                               r"missing \"=\" after|unterminated quoted string|invalid URI")


def _bad_url(exc: psycopg.Error) -> str | None:
    """The driver's reason when `exc` is about the connection string itself (an unknown
    ``?bogus=1``, ``sslmode=nonsense``, ``connect_timeout=abc``), not the server or a query:
    psycopg raises those before sending anything (no SQLSTATE)."""
    if exc.sqlstate is not None or not isinstance(exc, (psycopg.ProgrammingError, psycopg.OperationalError)):
        return None
    text = str(exc).strip()
    text = text.removeprefix("connection is bad:").strip()
    first = text.splitlines()[0] if text else ""
    return first if _CONNINFO_PROBLEM.search(first) else None


#: the server's own reason for refusing a connection it received (no such database or role,
#: a wrong password, too many clients), as libpq reports it
_FATAL = re.compile(r"FATAL:\s+((?:database|role) \"[^\"]*\" does not exist|password authentication failed for user "
                    r"\"[^\"]*\"|sorry, too many clients already|remaining connection slots are reserved[^\n]*|"
                    r"no pg_hba\.conf entry[^\n]*)"
                    # libpq's own: the server asked for a password the URL does not give (not a network fault)
                    r"|(fe_sendauth: no password supplied)")


def _mapped(store: Any, exc: Exception) -> EngramError:
    store._forget_broken()  # a broken connection is reopened on the next call
    return map_pg_error(exc, getattr(store, "location", "?"), getattr(store, "url", None))  # type: ignore[arg-type]


#: Class decorator: every public method of a store class raises Engram errors, never psycopg's.
translate_pg_errors = translating(psycopg.Error, _mapped, "store {location} holds an unreadable row ({error})")
