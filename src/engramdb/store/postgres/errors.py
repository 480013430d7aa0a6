"""Where psycopg's errors become Engram's: no driver error reaches a caller (as for SQLite in
`store.connection`)."""

from __future__ import annotations

import functools
import json
from typing import Any, Callable, TypeVar

import psycopg
from psycopg import errors as pg

from ...errors import EngramError, InputError, ReadOnlyStoreError, StoreBusyError, StoreCorruptError, StoreError


def map_pg_error(exc: psycopg.Error, location: str) -> EngramError:
    """The Engram error a psycopg exception means, with a message a user can act on."""
    if isinstance(exc, (pg.SerializationFailure, pg.DeadlockDetected, pg.LockNotAvailable)):
        return StoreBusyError(f"store {location} is busy: another writer held its lock too long; try again")
    if isinstance(exc, pg.QueryCanceled):
        return StoreBusyError(f"store {location}: the query was cancelled (statement or lock timeout); try again")
    if isinstance(exc, (pg.ReadOnlySqlTransaction, pg.InsufficientPrivilege)):
        return ReadOnlyStoreError(f"store {location} cannot be written by this database user ({exc.sqlstate}: "
                                  f"{str(exc).strip().splitlines()[0]})")
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
        return StoreError(f"store {location}: cannot reach the database server ({first})")
    return StoreError(f"store {location}: {type(exc).__name__}: {str(exc).strip()}")


F = TypeVar("F", bound=Callable[..., Any])


def _translated(method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except psycopg.Error as exc:
            self._forget_broken()
            raise map_pg_error(exc, getattr(self, "location", "?")) from exc
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreCorruptError(f"store {getattr(self, 'location', '?')} holds an unreadable row "
                                    f"({type(exc).__name__})") from exc

    return wrapper  # type: ignore[return-value]


def translate_pg_errors(cls: type) -> type:
    """Class decorator: every public method of `cls` raises Engram errors, never psycopg's."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and callable(value) and not isinstance(value, type):
            setattr(cls, name, _translated(value))
    return cls
