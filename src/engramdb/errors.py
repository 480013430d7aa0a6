"""Engram's exceptions: one base class so callers (and the CLI) can catch them all.

Nothing from the SQLite driver escapes a public call: `store.connection.driver_errors`
turns it into one of the `StoreError` classes below, so a caller (and later a server)
can tell bad input (`InputError`, HTTP 400) from a store problem (`StoreError`).
"""

from pathlib import Path


class EngramError(Exception):
    """Base class for every error Engram raises on purpose."""


class InputError(EngramError, ValueError):
    """Bad input from the caller: an invalid entry, filter, file line or option."""


class NotFoundError(EngramError, LookupError):
    """An id the namespace does not hold (missing, or another namespace's: scope is a hard
    boundary, so the two look the same)."""


class ModelMismatchError(EngramError):
    """The store's vectors were made by a different embedding model than the one requested."""


class EmbedderUnavailable(EngramError):
    """An embedding model or endpoint cannot be loaded or reached."""


class StoreError(EngramError):
    """The store file cannot be used as asked (base class of the store errors)."""


class NotAStoreError(StoreError):
    """The path holds something that is not an Engram store (another file or database)."""


class ReadOnlyStoreError(StoreError):
    """A write was asked of a store opened read-only, or of a file the process cannot write."""


class StoreBusyError(StoreError):
    """Another process held the store's write lock for longer than the busy timeout."""


class WriteConflictError(StoreBusyError):
    """An entry a write was prepared from changed before the write (another writer got there
    first); nothing was written. `Memory.update` and `add` re-read and retry on their own, so
    this reaches a caller only when the entry keeps changing under it."""


class StoreUnavailableError(StoreError):
    """The store's database server cannot be reached now (stopped, restarting, the network
    down, no free connection): transient, so a later call may succeed (HTTP 503).

    `reason` is what went wrong without the store's address (the message names the database's
    user, host, port and name): what the servers tell a client (server/messages.py)."""

    def __init__(self, message: str, reason: str = "the store is unavailable") -> None:
        super().__init__(message)
        self.reason = reason


class MemoryClosedError(StoreError):
    """The `Memory` (or its store) was closed: open a new one to go on."""


class StoreCorruptError(StoreError):
    """SQLite reports the file as damaged."""


class DataFileError(ValueError):
    """A data file (an evaluation set, a LoCoMo conversation file) is missing or malformed.

    ``str(err)`` reads ``path:line: reason`` (or ``path: at <where>: reason``) so the user can
    jump straight to the offending spot.
    """

    def __init__(self, path: str | Path, reason: str, line: int | None = None, where: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.line = line
        self.where = where
        loc = self.path
        if line is not None:
            loc += f":{line}"
        if where:
            loc += f": at {where}"
        super().__init__(f"{loc}: {reason}")
