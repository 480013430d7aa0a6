"""Two `Memory` objects on one store (two processes' worth of indexes and caches): what one
writes, the other's next search sees — added rows, deleted rows, updated text — on every
backend. On PostgreSQL this is the postings cache being extended by the rows added since it
was read and dropped after a delete; on SQLite, the in-memory mirrors' refresh."""

from __future__ import annotations

from engramdb import Memory


def _ids(mem: Memory, query: str, preset: str) -> list[str]:
    return [h.entry.id for h in mem.search(query, k=10, preset=preset).hits]  # type: ignore[misc]


def test_a_second_memory_sees_adds_deletes_and_updates(store_target: str) -> None:
    with Memory(store_target, embedder="minilm") as writer, Memory(store_target, embedder="minilm") as reader:
        writer.add([{"id": f"n{i}", "text": f"note {i} about the harbour and its {i} boats", "persons": ["Ana"]}
                    for i in range(30)])
        for preset in ("lexical", "symbolic", "default"):
            assert "n3" in _ids(reader, "harbour boats 3 Ana", preset)  # the reader's caches are filled now
        writer.add({"id": "late", "text": "the lighthouse keeper counted harbour gulls", "persons": ["Ana"]})
        assert _ids(reader, "lighthouse gulls", "lexical") == ["late"]  # rows added since are read
        assert "late" in _ids(reader, "Ana lighthouse", "symbolic")
        writer.delete(ids=["late", "n3"])
        assert _ids(reader, "lighthouse gulls", "lexical") == []  # deleted rows are gone
        assert "n3" not in _ids(reader, "harbour boats 3 Ana", "lexical")
        assert "n3" not in _ids(reader, "harbour boats 3 Ana", "symbolic")
        writer.update("n4", text="note 4 moved inland to the vineyard")
        assert _ids(reader, "vineyard inland", "lexical") == ["n4"]
        assert "n4" not in _ids(reader, "harbour boats", "lexical")
        # The statistics moved with the rows: both see the same scores.
        mine = [(h.entry.id, round(h.score, 6)) for h in writer.search("harbour boats", k=5, preset="lexical").hits]
        theirs = [(h.entry.id, round(h.score, 6)) for h in reader.search("harbour boats", k=5, preset="lexical").hits]
        assert mine == theirs and mine
