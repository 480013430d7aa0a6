"""A store written by schema 1 (no periods) opens, migrates in place and keeps its entries."""

from __future__ import annotations

from pathlib import Path

import apsw

from engramdb import Entry, Memory
from engramdb.store.base import Filters


def test_schema_1_file_is_migrated(db_path: Path) -> None:
    with Memory(db_path, embedder="minilm") as mem:
        ids = mem.add(["Alice moved to Berlin in May 2023."])
    conn = apsw.Connection(str(db_path))
    conn.execute("DROP INDEX entries_ns_dated")
    conn.execute("ALTER TABLE entries DROP COLUMN ts_end")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    # Schema 1 stored entries without the timestamp_end key.
    conn.execute("UPDATE entries SET data = json_remove(data, '$.timestamp_end')")
    conn.close()
    with Memory(db_path) as mem:
        assert mem.stats()["schema_version"] == "5"
        assert mem.add(["Alice moved to Berlin in May 2023."]) == ids
        assert mem.count() == 1  # the old entry is recognised as unchanged, not duplicated
        assert mem.search("Berlin", k=1)[0].id == ids[0]
        mem.add_conversation([("Bob", "I flew to Oslo last week.")], session_id="s", session_time="2024-03-14")
        fact = mem.search("Oslo trip", k=5, filters={"kind": "fact"})[0]
        assert fact.entry.timestamp_end == "2024-03-11T00:00:00+00:00"
        # The dated channel's partial index is created on open, and "when" questions use it.
        plan = mem.store._reader().execute(
            "EXPLAIN QUERY PLAN SELECT e.rowid FROM entries e WHERE e.namespace = ? AND e.ts_end IS NOT NULL",
            ["default"]).fetchall()
        assert "entries_ns_dated" in str(plan)


def test_schema_2_file_from_the_last_release_is_migrated(tmp_path: Path) -> None:
    """tests/fixtures/stores/store_v2.db was written by the release before ids were scoped
    to their namespace (schema 2, rollback journal, trigram index built by a `ping` search)."""
    import shutil

    path = tmp_path / "v2.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "stores" / "store_v2.db", path)
    with Memory(path, namespace="alice") as mem:
        before = {e.id: e.to_dict() for e in mem.get(mem.store.ids("alice", Filters()))}
        stats = mem.stats()
        assert stats["schema_version"] == "5"
        assert stats["count"] == 22 and stats["vectors"] == 22
        after = {e.id: e.to_dict() for e in mem.get(list(before))}
        assert after == before  # nothing lost or changed
        assert mem.search("v2.3.1 release", k=1, preset="ping")[0].text.startswith("Release v2.3.1")
        assert mem.search("Where did Alice move?", k=1)[0].text.startswith("Alice moved")
        # Ids are now per namespace: Bob may use the id Alice uses, and neither sees the other's.
        mem.add([Entry(id="note-1", text="Bob's own first note.")], namespace="bob")
        assert mem.get("note-1")[0].text == "Alice's note with a user-chosen id."
        assert mem.get("note-1", namespace="bob")[0].text == "Bob's own first note."
        turn_ids = set(mem.store.ids("alice", Filters(kinds=["turn"])))
        facts = mem.get(mem.store.ids("alice", Filters(session_id="s1", kinds=["fact"])))
        assert facts and all(f.derived_from and set(f.derived_from) <= turn_ids for f in facts)
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_schema_4_file_is_migrated_and_its_turns_keep_their_order(db_path: Path) -> None:
    """Schema 4 had no `place`: every row stays where it was written, and a turn edited after
    the migration keeps its place among them."""
    with Memory(db_path, embedder="minilm") as mem:
        mem.add_conversation([("Ann", "I planted tulips."), ("Ben", "Which colour?"), ("Ann", "Red ones, by the gate.")],
                             session_id="garden", session_time="2024-04-01T09:00:00", extractor="none")
    conn = apsw.Connection(str(db_path))
    conn.execute("ALTER TABLE entries DROP COLUMN place")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    with Memory(db_path) as mem:
        assert mem.stats()["schema_version"] == "5"
        ids = mem.store.ids("default", Filters(session_id="garden", kinds=["turn"]))
        mem.update(ids[1], text="Ben: Which colour did you pick?")
        assert mem.store.ids("default", Filters(session_id="garden", kinds=["turn"])) == ids
        hit = mem.search("which colour did you pick", k=1, context=1).hits[0]
        assert [(o, e.text) for o, e in hit.context or []] == [(-1, "Ann: I planted tulips."),
                                                               (1, "Ann: Red ones, by the gate.")]
