"""A store written by schema 1 (no periods) opens, migrates in place and keeps its entries."""

from __future__ import annotations

from pathlib import Path

import apsw

from engramdb import Memory


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
        assert mem.stats()["schema_version"] == "2"
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
