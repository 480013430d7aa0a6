"""A readers-writer lock for the in-memory indexes.

Searches only read an index (NumPy, usearch and BM25 work that largely runs outside the GIL),
so any number may do so at once; only bringing the index up to date with the file
(`_refresh_*`) needs it alone. A waiting writer goes first, so a stream of searches cannot
starve the refresh that a write makes due. Not re-entrant: a reader must not take the lock
again (the store refreshes before it reads, never inside a read).

The lock counts how long callers waited for it, which is how
`benchmarks/bench_search_threads.py` measures whether concurrent searches serialise behind it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator


class ReadWriteLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self.wait_seconds = 0.0  # total time callers spent blocked on this lock

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            if self._writer or self._writers_waiting:
                started = time.perf_counter()
                while self._writer or self._writers_waiting:
                    self._cond.wait()
                self.wait_seconds += time.perf_counter() - started
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            if self._writer or self._readers:
                started = time.perf_counter()
                self._writers_waiting += 1
                try:
                    while self._writer or self._readers:
                        self._cond.wait()
                finally:
                    self._writers_waiting -= 1
                self.wait_seconds += time.perf_counter() - started
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()
