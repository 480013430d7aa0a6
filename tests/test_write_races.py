"""Writes prepared from what was read must not undo a write committed in between.

`update` reads the entry, changes it and writes it back; `add` merges a new entry with the
stored one. If another writer commits between the read and the write, the write is a
compare-and-swap inside its transaction: it fails, re-reads and tries again, so both changes
land. The interleavings are forced (another `Memory` on the same store writes at the moment in
between), and a threaded run checks the same with real concurrency; both on every backend.
"""

from __future__ import annotations

import threading
from typing import Any

from engramdb import Memory


def _before_first_call(obj: Any, name: str, action: Any) -> None:
    """Run `action` once, just before the first call of obj.name (an instance attribute)."""
    real = getattr(obj, name)
    done: list[bool] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            action()
        return real(*args, **kwargs)

    setattr(obj, name, wrapped)


def test_an_update_read_before_another_commits_keeps_both_changes(mem: Memory, store_target: str) -> None:
    [entry_id] = mem.add("Alice lives in Lisbon.")
    with Memory(store_target, embedder="minilm") as other:
        # Our update has read the entry; the other one commits before ours writes.
        _before_first_call(mem.writer, "write", lambda: other.update(entry_id, location="Lisbon", actor="other"))
        mem.update(entry_id, topic="home", actor="us")
    [stored] = mem.get(entry_id)
    assert (stored.location, stored.topic) == ("Lisbon", "home")
    events = mem.history(entry_id)
    assert [(e.event, e.actor) for e in events] == [("ADD", None), ("UPDATE", "other"), ("UPDATE", "us")]
    assert events[2].old is not None and events[2].old.location == "Lisbon"  # "before" is what was stored


def test_an_add_racing_another_add_of_the_same_text_keeps_both_tags(mem: Memory, store_target: str) -> None:
    text = "Bob plays the cello."
    with Memory(store_target, embedder="minilm") as other:
        # Both classify the text as new; the other one inserts it first.
        _before_first_call(mem.store, "upsert", lambda: other.add({"text": text, "keywords": ["music"]}))
        [entry_id] = mem.add({"text": text, "keywords": ["cello"]})
    [stored] = mem.get(entry_id)
    assert sorted(stored.keywords) == ["cello", "music"]
    assert [e.event for e in mem.history(entry_id)] == ["ADD", "UPDATE"]


def test_a_re_add_racing_another_re_add_keeps_both_tags(mem: Memory, store_target: str) -> None:
    [entry_id] = mem.add({"text": "Carol runs marathons.", "keywords": ["sport"]})
    with Memory(store_target, embedder="minilm") as other:
        _before_first_call(mem.store, "upsert",
                           lambda: other.add({"text": "Carol runs marathons.", "keywords": ["running"]}))
        mem.add({"text": "Carol runs marathons.", "keywords": ["endurance"]})
    [stored] = mem.get(entry_id)
    assert sorted(stored.keywords) == ["endurance", "running", "sport"]


def test_concurrent_updates_of_different_fields_all_land(mem: Memory) -> None:
    changes: list[dict[str, Any]] = [{"location": "Lisbon"}, {"topic": "home"}, {"persons": ["Alice"]},
                                     {"keywords": ["move"]}, {"timestamp": "2024-05-01"}]
    for round_ in range(4):  # bounded: 4 rounds of 5 threads, each one update
        [entry_id] = mem.add(f"Alice moved house, round {round_}.")
        barrier = threading.Barrier(len(changes))
        errors: list[BaseException] = []

        def run(change: dict[str, Any]) -> None:
            try:
                barrier.wait(timeout=60)
                mem.update(entry_id, **change)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(c,)) for c in changes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        [stored] = mem.get(entry_id)
        assert stored.location == "Lisbon" and stored.topic == "home" and stored.persons == ["Alice"]
        assert stored.keywords == ["move"] and stored.timestamp is not None and stored.timestamp.startswith("2024-05-01")
        assert len(mem.history(entry_id)) == 1 + len(changes)
