"""The SQLite file behind `SQLiteStore`: its connections, write lock, transactions and the
counters that say when another process changed it.

One writer connection (guarded by a lock) and one reader connection per thread: WAL lets
readers run while a batch is written, and each write batch is a single transaction. The
store's parts (channels, listings, the in-memory mirrors) are handed this object rather
than the store, so none of them reaches into the store's private state.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import apsw

from ..errors import InputError, NotAStoreError, ReadOnlyStoreError, StoreError
from .connection import BUSY_TIMEOUT_MS, connect, driver_errors, inspect_file, scalar, writable, write_transaction
from .base import decode_entry, refuse_newer  # noqa: F401 - decode_entry: read from here by the store's modules
from .schema import SCHEMA_VERSION, create_or_migrate, is_current, stored_version




class SQLiteFile:
    """An opened Engram SQLite file (created, or migrated to the current schema, if writable).

    ``read_only`` opens it without ever writing to it; `transaction` then raises
    `ReadOnlyStoreError`.
    """

    def __init__(self, path: str | Path, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.path = str(Path(path).expanduser())
        self.busy_timeout_ms = busy_timeout_ms
        if self.path == ":memory:":
            raise InputError("an in-memory store cannot be shared between threads; give a file path")
        self.read_only = read_only
        self.write_lock = threading.RLock()
        self._local = threading.local()
        self._connections: list[apsw.Connection] = []
        self._conn_lock = threading.Lock()
        if read_only and not Path(self.path).is_file():
            raise StoreError(f"no store at {self.path}")
        existed = Path(self.path).exists()
        if not read_only and existed and not writable(self.path):
            raise ReadOnlyStoreError(
                f"store {self.path} is read-only here (the file, its folder or its mount); it can be read "
                "(search, get, stats) but not changed: open it with read_only=True (the CLI does so for commands "
                "that only read)")
        self.writer = connect(self.path, read_only=read_only, create=True, busy_timeout_ms=busy_timeout_ms)
        try:
            with driver_errors(self.path):  # a page the schema's reads need may be damaged
                self._open()
        except BaseException:
            self.writer.close()
            if not existed:  # never leave an empty file behind a failed open
                Path(self.path).unlink(missing_ok=True)
            raise

    def _open(self) -> None:
        """Check the file is ours (or empty), then create or migrate the schema if needed."""
        state = inspect_file(self.writer, self.path)
        if state == "engram":
            refuse_newer(stored_version(self.writer), self.path, SCHEMA_VERSION)
        if self.read_only:
            if state == "empty":
                raise NotAStoreError(f"{self.path} is an empty file, not an Engram store")
            if not is_current(self.writer):
                raise ReadOnlyStoreError(
                    f"store {self.path} was written by an older Engram and must be upgraded to schema "
                    f"{SCHEMA_VERSION}; open it once without read-only")
        else:
            mode = scalar(self.writer.execute("PRAGMA journal_mode"))
            if str(mode).lower() != "wal":
                self.writer.execute("PRAGMA journal_mode=WAL")
            self.writer.execute("PRAGMA synchronous=NORMAL")
            if not is_current(self.writer):
                with self.write_lock, self.transaction():
                    create_or_migrate(self.writer)

    def reader(self) -> apsw.Connection:
        """This thread's reading connection (opened on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, read_only=self.read_only, busy_timeout_ms=self.busy_timeout_ms)
            self._local.conn = conn
            with self._conn_lock:
                self._connections.append(conn)
        return conn

    def snapshot(self) -> apsw.Connection:
        """A connection of its own for one long read (an export stream); the caller closes it."""
        return connect(self.path, read_only=True, busy_timeout_ms=self.busy_timeout_ms)

    def transaction(self, timeout_ms: int | None = None) -> Any:
        """The writer's ``BEGIN IMMEDIATE`` transaction (call with `write_lock` held)."""
        if self.read_only:
            raise ReadOnlyStoreError(f"store {self.path} is open read-only")
        wait = self.busy_timeout_ms if timeout_ms is None else min(timeout_ms, self.busy_timeout_ms)
        return write_transaction(self.writer, self.path, wait, restore_ms=self.busy_timeout_ms)

    def meta(self, key: str, conn: apsw.Connection | None = None) -> str | None:
        """A value of the ``meta`` table (read on the writer unless `conn` is given)."""
        row = (conn or self.writer).execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def seqs(self, conn: apsw.Connection | None = None) -> tuple[int, int]:
        """(write sequence, delete sequence): bumped by every write / delete, in any process."""
        rows: dict[Any, Any] = {key: value for key, value in (conn or self.reader()).execute(
            "SELECT key, value FROM meta WHERE key IN ('write_seq', 'delete_seq')")}
        return int(rows.get("write_seq", 0)), int(rows.get("delete_seq", 0))

    def close(self) -> None:
        with self._conn_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self.writer.close()
