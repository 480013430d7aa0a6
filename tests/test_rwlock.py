"""The in-memory indexes' readers-writer lock: searches read side by side, a refresh waits
for them, and a waiting refresh goes before new readers. Liveness is checked with events and
generous join timeouts that only turn a deadlock into a failure (no speed is asserted)."""

from __future__ import annotations

import threading
from pathlib import Path

from engramdb import Memory
from engramdb.store.rwlock import ReadWriteLock

PATIENCE = 60  # seconds before a blocked thread counts as deadlocked


def test_readers_share_and_a_writer_waits_for_them() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def long_reader() -> None:
        with lock.read():
            inside.set()
            release.wait(PATIENCE)
            order.append("long reader done")

    def writer() -> None:
        with lock.write():
            order.append("writer")

    first = threading.Thread(target=long_reader)
    first.start()
    assert inside.wait(PATIENCE)
    with lock.read():  # a second reader gets in while the first is still reading
        order.append("second reader")
    second = threading.Thread(target=writer)
    second.start()
    while not lock._writers_waiting:  # the writer is queued behind the long reader
        threading.Event().wait(0.001)
    assert order == ["second reader"]
    release.set()
    first.join(PATIENCE)
    second.join(PATIENCE)
    assert order == ["second reader", "long reader done", "writer"]
    assert lock.wait_seconds > 0


def test_a_waiting_writer_goes_before_new_readers() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    release = threading.Event()
    holding = threading.Event()

    def hold() -> None:
        with lock.read():
            holding.set()
            release.wait(PATIENCE)

    def writer() -> None:
        with lock.write():
            order.append("writer")

    def late_reader() -> None:
        with lock.read():
            order.append("late reader")

    threads = [threading.Thread(target=hold)]
    threads[0].start()
    assert holding.wait(PATIENCE)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    while not lock._writers_waiting:
        threading.Event().wait(0.001)
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    release.set()
    for thread in threads:
        thread.join(PATIENCE)
    assert order == ["writer", "late reader"]


def test_a_search_runs_while_another_search_is_inside_the_indexes(tmp_path: Path) -> None:
    """With one exclusive lock per index (before), this search would block until the reader
    below let go; now it completes while that reader is still inside both indexes."""
    with Memory(tmp_path / "rw.db", embedder="minilm") as mem:
        mem.add(["Alice keeps bees in Lisbon.", "Bob repairs violins.", "Carol sails on weekends."])
        mem.search("bees", k=1)  # load both indexes
        store = mem.store
        lexical, vectors = store._lexical, store._vectors
        assert vectors is not None
        result: list[str] = []
        with lexical.lock.read(), vectors.lock.read():
            worker = threading.Thread(target=lambda: result.append(mem.search("who keeps bees?", k=1).hits[0].text))
            worker.start()
            worker.join(PATIENCE)
            assert not worker.is_alive(), "a search blocked behind another search's read of the indexes"
        assert result == ["Alice keeps bees in Lisbon."]
        # A write makes the indexes due for a refresh; the next search takes the write side and sees it.
        mem.add(["Dave keeps bees too."])
        assert {h.text for h in mem.search("keeps bees", k=2).hits} == {"Alice keeps bees in Lisbon.",
                                                                        "Dave keeps bees too."}
