"""The connections of one `PostgresStore`: a read-only REPEATABLE READ connection per thread
(every read sees one snapshot) and one writer connection guarded by a lock, whose every
transaction first takes the store's advisory lock `schema.WRITE_LOCK` (waiting up to the
busy timeout), so writers from any number of processes are serialised like SQLite's
``BEGIN IMMEDIATE``. After a connection is found lost (a restart, a failover), every
thread's connection is reopened on its next use."""

from __future__ import annotations

import os
import threading
import weakref
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

import psycopg
import psycopg.conninfo
from psycopg import IsolationLevel
from psycopg.pq import TransactionStatus

from ...errors import StoreBusyError
from .schema import SCHEMA, WRITE_LOCK


#: seconds libpq waits for a server to answer a new connection, when neither the URL
#: (``?connect_timeout=``) nor ``PGCONNECT_TIMEOUT`` says: without one, a host that drops
#: packets (a dead address, a firewall) hangs the connect, and the search or /healthz with it,
#: for the operating system's TCP timeout (minutes) instead of failing as unavailable.
DEFAULT_CONNECT_TIMEOUT = 10


def connect_options(url: str) -> dict[str, Any]:
    """The keyword options every connection to `url` is opened with: the default connect
    timeout unless the URL or the environment sets one."""
    given = psycopg.conninfo.conninfo_to_dict(url)
    if "connect_timeout" in given or os.environ.get("PGCONNECT_TIMEOUT"):
        return {}
    return {"connect_timeout": DEFAULT_CONNECT_TIMEOUT}


def connect(url: str, **options: Any) -> psycopg.Connection[Any]:
    """`psycopg.connect` with `connect_options`."""
    return psycopg.connect(url, **{**connect_options(url), **options})


class _Held:
    """A thread's reader connection, closed when the thread ends: CPython drops a thread's
    `threading.local` values then, and with them this holder. Each thread that ever read kept
    its connection until the store closed (30 short-lived threads: 35 connections; two servers
    after a burst of searches held 92 of the database server's 100 and locked out every other
    client)."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def __del__(self) -> None:
        try:
            self.conn.close()
        except Exception:  # noqa: BLE001 - at interpreter exit or on a lost connection: nothing to do
            pass


class Connections:
    def __init__(self, url: str, location: str) -> None:
        self.url = url
        self.location = location
        self._local = threading.local()
        self._held: weakref.WeakSet[_Held] = weakref.WeakSet()  # every live thread's reader
        #: the store's schema, then public and the schemas the database's extensions live in
        #: (`widen_search_path`: pgvector in an `extensions` schema, as Supabase installs it)
        self.search_path = f"{SCHEMA},public"
        self._lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._writer: psycopg.Connection[Any] | None = None
        self._generation = 0  # bumped when a connection is found lost (`forget_broken`)
        self._writer_generation = 0
        self._closed = False

    def _connect(self, *, reader: bool) -> psycopg.Connection[Any]:
        conn = connect(self.url, autocommit=True, options=f"-c search_path={self.search_path}")
        if reader:
            conn.isolation_level = IsolationLevel.REPEATABLE_READ
            conn.read_only = True
        return conn

    @staticmethod
    def _close(conn: psycopg.Connection[Any]) -> None:
        try:
            conn.close()
        except psycopg.Error:
            pass

    def reader(self) -> psycopg.Connection[Any]:
        """This thread's read-only connection (closed when the thread ends: `_Held`)."""
        held: _Held | None = getattr(self._local, "held", None)
        conn = held.conn if held is not None else None
        if conn is not None and getattr(self._local, "generation", 0) != self._generation:
            self._local.held = None  # a connection was lost since this one was opened: so is it, likely
            self._close(conn)
            conn = None
        if conn is None or conn.closed:
            conn = self._connect(reader=True)
            held = self._local.held = _Held(conn)
            with self._lock:
                self._held.add(held)
            self._local.generation = self._generation
        return conn

    def _writer_conn(self) -> psycopg.Connection[Any]:
        """The writer connection (callers hold `_write_lock`), reopened after a loss."""
        if self._writer is not None and self._writer_generation != self._generation:
            self._close(self._writer)
            self._writer = None
        if self._writer is None or self._writer.closed:
            self._writer = self._connect(reader=False)
            self._writer_generation = self._generation
        return self._writer

    def widen_search_path(self, schemas: list[str]) -> None:
        """Add `schemas` (where pgvector and pg_trgm are installed) to every connection's search
        path; the connections opened before reopen on their next use."""
        present = {name.strip('"') for name in self.search_path.split(",")}
        extra = [s for s in dict.fromkeys(schemas) if s not in present]
        if extra:
            self.search_path = ",".join([self.search_path, *(f'"{s}"' for s in extra)])
            self._generation += 1  # every connection is reopened with the new path

    def forget_broken(self) -> None:
        """After an error, drop connections that can no longer be used (a lost server). When
        one was lost, every thread's reader is reopened on its next use too (a restart or
        failover ends them all; each would otherwise fail one call of its own)."""
        lost = False
        held: _Held | None = getattr(self._local, "held", None)
        for conn in (held.conn if held is not None else None, self._writer):
            if conn is not None and (conn.closed or conn.broken):
                lost = True
                self._close(conn)
        if lost:
            self._generation += 1
        if self._writer is not None and self._writer.closed:
            self._writer = None

    def _begin(self, stack: ExitStack, connect: Callable[[], psycopg.Connection[Any]]) -> psycopg.Connection[Any]:
        """A transaction begun on `connect()`'s connection, entered on `stack`. A connection the
        server ended while it sat idle (a restart, a failover) fails its BEGIN, before anything
        of the call ran: it is dropped, with the others opened before the loss, and the call
        begins once more on a new one — so the first request after a database restart does not
        fail (it did, once per idle connection, with a 503)."""
        conn = connect()
        try:
            stack.enter_context(conn.transaction())
            return conn
        except psycopg.OperationalError:
            if not (conn.closed or conn.broken):
                raise
        self.forget_broken()
        conn = connect()
        stack.enter_context(conn.transaction())
        return conn

    @contextmanager
    def read(self, binary: bool = False) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor in one read-only snapshot (nested calls join it)."""
        conn = self.reader()
        if conn.info.transaction_status != TransactionStatus.IDLE:
            yield conn.cursor(binary=binary)
            return
        with ExitStack() as stack:
            conn = self._begin(stack, self.reader)
            yield conn.cursor(binary=binary)

    @contextmanager
    def write(self, wait_ms: int) -> Iterator[psycopg.Cursor[Any]]:
        """A write transaction holding the advisory write lock, waiting up to `wait_ms` for it
        (then `StoreBusyError`); nested calls join the open transaction."""
        with self._write_lock:
            conn = self._writer_conn()
            if conn.info.transaction_status != TransactionStatus.IDLE:
                yield conn.cursor()
                return
            with ExitStack() as stack:
                cur = self._begin(stack, self._writer_conn).cursor()
                cur.execute(f"SET LOCAL lock_timeout = '{max(1, int(wait_ms))}ms'")
                try:
                    cur.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled) as exc:
                    raise StoreBusyError(f"store {self.location} is busy: another process held its lock for over "
                                         f"{wait_ms / 1000:g} s; try again") from exc
                cur.execute("SET LOCAL lock_timeout = 0")
                yield cur

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            for held in list(self._held):
                self._close(held.conn)
            self._held.clear()
        if self._writer is not None:
            self._close(self._writer)
        self._writer = None
