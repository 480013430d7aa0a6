"""Opening the SQLite file safely, one transaction discipline for writers, and the one place
where driver errors become Engram's errors.

* **Whose file is it?** A path is used only if it is new, an empty SQLite file, or an Engram
  store. Another application's database (or any other file) is refused before anything is
  written to it, so Engram never adds its tables to someone else's file or switches it to WAL.
* **Writers take the lock first.** Every read-then-write transaction starts with
  ``BEGIN IMMEDIATE``. A deferred transaction that reads and then writes fails with
  ``SQLITE_BUSY_SNAPSHOT`` when another process committed in between, and no busy timeout
  can help it; an immediate one waits (up to the busy timeout) for the write lock and then
  works on the newest data.
* **No raw driver errors.** `driver_errors` maps ``apsw`` exceptions to `StoreError`
  subclasses; `translate_driver_errors` applies it to every public method of a store class.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import apsw

from ..errors import (
    EngramError, NotAStoreError, ReadOnlyStoreError, StoreBusyError, StoreCorruptError, StoreError,
)
from .translate import translating


def scalar(cursor: apsw.Cursor) -> Any:
    """The first column of the one row a query always returns (a PRAGMA, an aggregate)."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("the database returned no row for a query that always returns one")
    return row[0]

BUSY_TIMEOUT_MS = 30_000
# Written into the SQLite header of every Engram store (PRAGMA application_id): "Engm".
APPLICATION_ID = 0x456E676D
# The tables every Engram store has had since schema 1 (older files carry no application id).
ENGRAM_TABLES = frozenset({"meta", "entries", "tags", "vectors", "lexicon"})


def map_driver_error(exc: apsw.Error, path: str, timeout_ms: int | None = None) -> EngramError:
    """The Engram error a driver exception means, with a message a user can act on."""
    if isinstance(exc, apsw.BusyError):
        waited = f" for over {timeout_ms / 1000:g} s" if timeout_ms is not None else ""
        return StoreBusyError(f"store {path} is busy: another process held its lock{waited}; try again")
    if isinstance(exc, (apsw.ReadOnlyError, apsw.PermissionsError)):
        return ReadOnlyStoreError(f"store {path} cannot be written (read-only file, folder or open mode)")
    if isinstance(exc, apsw.NotADBError):
        return NotAStoreError(f"{path} is not an Engram store (not a SQLite database)")
    if isinstance(exc, apsw.CorruptError):
        return StoreCorruptError(f"store {path} is damaged ({exc}); restore it from a backup")
    if isinstance(exc, apsw.FullError):
        return StoreError(f"store {path}: the disk is full")
    if isinstance(exc, apsw.CantOpenError):
        return StoreError(f"cannot open store {path} (missing folder, or no permission)")
    if isinstance(exc, apsw.TooBigError):
        return StoreError(f"store {path}: a value is too large for SQLite ({exc})")
    return StoreError(f"store {path}: {type(exc).__name__}: {exc}")


@contextmanager
def driver_errors(path: str) -> Iterator[None]:
    """Turn any ``apsw.Error`` raised inside into the matching `StoreError`."""
    try:
        yield
    except apsw.Error as exc:
        raise map_driver_error(exc, path) from exc


#: Class decorator: every public method of a store class raises Engram errors, never apsw's.
translate_driver_errors = translating(
    apsw.Error, lambda store, exc: map_driver_error(exc, getattr(store, "path", "?")),  # type: ignore[arg-type]
    "store {location} is damaged (unreadable row: {error}); restore it from a backup")


def connect(path: str, *, read_only: bool, create: bool = False,
            busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> apsw.Connection:
    if read_only:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    with driver_errors(path):
        conn = apsw.Connection(path, flags=flags)
        conn.set_busy_timeout(busy_timeout_ms)
    if read_only:
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except apsw.CantOpenError:
            conn.close()
            return _connect_immutable(path, busy_timeout_ms)
        except apsw.Error:
            pass  # not a database, damaged...: `inspect_file` says which
    return conn


def _connect_immutable(path: str, busy_timeout_ms: int) -> apsw.Connection:
    """A WAL store on read-only media (or in a folder we may not write) cannot be opened
    read-only the usual way: SQLite must create its ``-shm`` file. When no write-ahead log
    is pending (the last writer closed cleanly), the file alone holds every entry and can
    be opened as immutable."""
    wal = Path(path + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ReadOnlyStoreError(
            f"store {path} cannot be read here: it has a pending write-ahead log ({wal.name}) and this "
            "process may not create the lock file beside it; open it once where it can be written")
    uri = "file:" + quote(str(Path(path).resolve())) + "?immutable=1"
    with driver_errors(path):
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.set_busy_timeout(busy_timeout_ms)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    return conn


def inspect_file(conn: apsw.Connection, path: str) -> str:
    """``"empty"`` (no tables: a new file, safe to set up) or ``"engram"``; anything else is refused."""
    try:
        tables = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
        application_id = scalar(conn.execute("PRAGMA application_id"))
    except apsw.NotADBError as exc:
        raise NotAStoreError(f"{path} is not an Engram store (not a SQLite database); give another path") from exc
    except apsw.Error as exc:
        raise map_driver_error(exc, path) from exc
    if not tables and application_id in (0, APPLICATION_ID):
        return "empty"
    if application_id == APPLICATION_ID or (application_id == 0 and ENGRAM_TABLES <= tables):
        return "engram"
    shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
    raise NotAStoreError(
        f"{path} is a SQLite database of another application (tables: {shown or 'none'}); "
        "Engram will not change it. Give a new path for the store.")


def writable(path: str) -> bool:
    """Whether this process may write the store file and its folder (WAL needs both)."""
    file = Path(path)
    folder = file.parent if str(file.parent) else Path(".")
    if file.exists() and not os.access(file, os.W_OK):
        return False
    return os.access(folder, os.W_OK | os.X_OK)


@contextmanager
def write_transaction(conn: apsw.Connection, path: str, timeout_ms: int = BUSY_TIMEOUT_MS,
                      restore_ms: int = BUSY_TIMEOUT_MS) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any error); nested calls join the
    outer transaction. Waits up to `timeout_ms` for another process's write lock, then
    raises `StoreBusyError`; the connection's busy timeout goes back to `restore_ms`."""
    if conn.in_transaction:
        yield
        return
    deadline = time.monotonic() + timeout_ms / 1000
    conn.set_busy_timeout(timeout_ms)
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                break
            except apsw.BusyError as exc:
                # The busy handler already waited; a busy that returns early (WAL recovery
                # by another process) is retried until the same deadline.
                if time.monotonic() >= deadline:
                    raise map_driver_error(exc, path, timeout_ms) from exc
                time.sleep(0.01)
            except apsw.Error as exc:
                raise map_driver_error(exc, path) from exc
    finally:
        if timeout_ms != restore_ms:
            conn.set_busy_timeout(restore_ms)
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except apsw.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise map_driver_error(exc, path) from exc
