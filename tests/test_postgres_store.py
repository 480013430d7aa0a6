"""The PostgreSQL store beyond the conformance suite: the same scores as SQLite for the same
data (BM25 to 1e-6, every preset's hits), filtered vector search that loses nothing under a
selective filter on either vector path, and two processes writing the same import."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engramdb import Entry, Memory
from engramdb.store.base import EntryTerms, Filters
from engramdb.store.postgres import store as pg_store
from engramdb.text.tokenize import analyze
from pg import PostgresServer

EN = [
    "Alice moved to Berlin in 2021 and works as a nurse at the Charité hospital.",
    "Bob prefers green tea over coffee; he drinks it every morning before running.",
    "The quarterly report is due on Friday; Carol owns the revenue section.",
    "Our team migrated the billing service from MySQL to PostgreSQL last spring.",
    "Dave's daughter started violin lessons, practising thirty minutes a day.",
    "The Rust rewrite of the parser cut p95 latency from 40 ms to 9 ms.",
    "Erin is allergic to peanuts and keeps an epinephrine pen in her bag.",
    "We chose pgvector with HNSW indexes for the semantic memory of our agents.",
    "Frank booked flights to Tokyo for the conference in October.",
    "The garden needs watering twice a week during the summer heat.",
    "Green tea and jasmine tea are both popular in southern China.",
    "Running a marathon requires months of training and good shoes.",
]
ZH = [
    "我喜欢在早上喝绿茶，然后去公园跑步。",
    "张伟上个月搬到了上海，在一家医院当护士。",
    "季度报告周五截止，李娜负责收入部分。",
    "我们把计费服务从 MySQL 迁移到了 PostgreSQL。",
    "王芳的女儿开始学小提琴，每天练习三十分钟。",
    "向量数据库使用 HNSW 索引来加速语义检索。",
    "夏天花园每周需要浇两次水。",
    "茉莉花茶和绿茶在中国南方都很受欢迎。",
]
QUERIES = ["green tea", "who moved to Berlin", "PostgreSQL migration billing", "violin practice daily",
           "HNSW vector index", "绿茶", "搬到上海 护士", "季度报告 截止", "小提琴", "跑步 marathon", "tea China 中国"]


def _corpus() -> list[Entry]:
    out = []
    for i, text in enumerate(EN + ZH):
        out.append(Entry(text=text, id=f"e{i}", persons=["Alice"] if "Alice" in text else [],
                         keywords=["tea"] if "tea" in text or "茶" in text else [],
                         timestamp=f"2024-0{1 + i % 9}-1{i % 10}T10:00:00+00:00",
                         metadata={"lang": "zh" if i >= len(EN) else "en", "n": i}))
    return out


def _fill(target: str) -> Memory:
    mem = Memory(target, embedder="minilm")
    mem.add(_corpus())
    mem.add([f"filler note {i} about tea, trains and {['rain', 'snow', '雨', '雪'][i % 4]}" for i in range(40)])
    mem.delete(ids=["e6", "e18"])  # deletions change the collection statistics
    mem.add([Entry(text="Bob switched from green tea to matcha.", id="late")])
    return mem


@pytest.fixture(scope="module")
def pair(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    sqlite = _fill(str(tmp_path_factory.mktemp("pair") / "s.db"))
    postgres = _fill(postgres_server.new_database("pair"))
    yield sqlite, postgres
    sqlite.close()
    postgres.close()


def _by_id(mem: Memory, hits: list[tuple[int, float]]) -> list[tuple[str, float]]:
    entries = mem.store.fetch([r for r, _ in hits])
    return [(entries[r].id, s) for r, s in hits]  # type: ignore[misc]


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_top10_and_scores_equal_sqlite(pair: Any, query: str) -> None:
    sqlite, postgres = pair
    terms = analyze(query)
    for filters in (Filters(), Filters.parse({"metadata.lang": "zh"}), Filters.parse({"keyword": "tea"})):
        a = _by_id(sqlite, sqlite.store.lexical(terms, 10, "default", filters))
        b = _by_id(postgres, postgres.store.lexical(terms, 10, "default", filters))
        assert [i for i, _ in a] == [i for i, _ in b], (query, filters)
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-6), (query, a, b)
        assert a or not filters.is_empty(), query


@pytest.mark.parametrize("preset", ["default", "lexical", "semantic", "ping"])
def test_search_hits_equal_sqlite(pair: Any, preset: str) -> None:
    sqlite, postgres = pair
    for query in QUERIES:
        a = sqlite.search(query, k=10, preset=preset).hits
        b = postgres.search(query, k=10, preset=preset).hits
        assert [h.entry.id for h in a] == [h.entry.id for h in b], (preset, query)
        assert np.allclose([h.score for h in a], [h.score for h in b], rtol=0, atol=1e-6), (preset, query)


def test_symbolic_temporal_and_dated_channels_equal_sqlite(pair: Any) -> None:
    sqlite, postgres = pair
    terms = analyze("Alice tea Berlin")
    for name, call in (
            ("symbolic", lambda s: s.symbolic("Alice in Berlin", terms, 10, "default", Filters(),
                                              names=[("person", "alice")])),
            ("temporal", lambda s: s.temporal(1704067200.0, 1719792000.0, terms, 10, "default", Filters())),
            ("dated", lambda s: s.dated(terms, 10, "default", Filters())),
            ("substring", lambda s: s.substring(["tea", "绿茶"], 10, "default", Filters()))):
        a, b = _by_id(sqlite, call(sqlite.store)), _by_id(postgres, call(postgres.store))
        assert [i for i, _ in a] == [i for i, _ in b], name
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-6), name


def _vector_store(url: str, n: int, dim: int = 16) -> tuple[Any, np.ndarray]:
    from engramdb.store.open import open_store

    store = open_store(url)
    store.bind_embedder("test/random", dim)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    entries = [Entry(text=f"row {i}", id=f"r{i}", metadata={"rare": i % 1000 == 7}).normalized("default")
               for i in range(n)]
    store.upsert("default", entries, vectors, [EntryTerms(body=("row", str(i)), tags=()) for i in range(n)])
    return store, vectors


@pytest.mark.parametrize("exact_max", [pg_store.EXACT_MAX, 0])
def test_a_filter_matching_a_tenth_of_a_percent_loses_nothing(postgres_server: PostgresServer,
                                                               monkeypatch: pytest.MonkeyPatch, exact_max: int) -> None:
    """2 of 2,000 rows match. With the default threshold the search is an exact scan; with
    none it goes through HNSW with pgvector's iterative scan (and the exact fallback): both
    return exactly the matching rows, in brute-force order."""
    monkeypatch.setattr(pg_store, "EXACT_MAX", exact_max)
    store, vectors = _vector_store(postgres_server.new_database("vec"), 2000)
    try:
        rare = [i for i in range(2000) if i % 1000 == 7]
        query = vectors[5] + 0.1 * vectors[1007]
        query /= np.linalg.norm(query)
        hits = store.semantic(query, 10, "default", Filters.parse({"metadata.rare": True}))
        expected = sorted(rare, key=lambda i: -float(vectors[i] @ query))
        assert [store.fetch([r])[r].id for r, _ in hits] == [f"r{i}" for i in expected]
        # Unfiltered through the index: the nearest row is found, scores are float32 cosines.
        top = store.semantic(vectors[42], 5, "default", Filters())
        assert store.fetch([top[0][0]])[top[0][0]].id == "r42" and abs(top[0][1] - 1.0) < 1e-6
    finally:
        store.close()


def _import_proc(url: str, path: str, out: str) -> None:
    try:
        with Memory(url, embedder="minilm") as mem:
            report = mem.import_path(path)
        Path(out).write_text(json.dumps({"ok": True, "report": str(report)}), encoding="utf-8")
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        Path(out).write_text(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}), encoding="utf-8")


def test_two_processes_writing_the_same_import(postgres_server: PostgresServer, tmp_path: Path) -> None:
    """Both processes import the same JSONL file at once: no error, every entry once, one
    ADD event per entry (the second writer finds them stored: idempotent)."""
    url = postgres_server.new_database("twice")
    data = tmp_path / "facts.jsonl"
    data.write_text("".join(json.dumps({"id": f"f{i}", "text": f"fact {i} about rivers and {i % 7} stones"}) + "\n"
                            for i in range(300)), encoding="utf-8")
    with Memory(url, embedder="minilm"):
        pass  # bind the model first, so both processes agree on it
    ctx = mp.get_context("spawn")
    outs = [tmp_path / f"out{i}.json" for i in range(2)]
    procs = [ctx.Process(target=_import_proc, args=(url, str(data), str(o))) for o in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    results = [json.loads(o.read_text(encoding="utf-8")) for o in outs]
    assert all(r["ok"] for r in results), results
    with Memory(url) as mem:
        assert mem.count() == 300
        events = list(mem.store.iter_history(None))
        assert len(events) == 300 and {e["event"] for e in events} == {"ADD"}
        assert len({e["id"] for e in events}) == 300
