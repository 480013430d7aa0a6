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
        Path(out).write_text(json.dumps({"ok": True, "report": report}, default=str), encoding="utf-8")
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
    # Each entry is reported written by the one process that wrote it (unchanged by the other).
    assert sum(r["report"]["written"] for r in results) == 300
    assert all(r["report"]["written"] + r["report"]["unchanged"] == 300 for r in results)
    with Memory(url) as mem:
        assert mem.count() == 300
        events = list(mem.store.iter_history(None))
        assert len(events) == 300 and {e["event"] for e in events} == {"ADD"}
        assert len({e["id"] for e in events}) == 300


def _lexical_pair(tmp_path: Path, url: str, n: int = 1500) -> tuple[Any, Any]:
    """The same `n` rows in a SQLite and a PostgreSQL store, written through `Store.upsert`:
    far more rows match a common term than the SQL ranks (`bm25.candidates`), with lengths
    and frequencies varied so that scores rarely tie. A third are chunks, added last, so the
    best-scoring rows are facts; every 50th fact is superseded."""
    from engramdb.store.open import open_store

    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(300)]
    rows = []
    for i in range(n):
        body = ["common"] * int(rng.integers(1, 4)) + list(rng.choice(vocab, size=int(rng.integers(2, 30))))
        if i % 3 == 0:
            body += ["rare"] * int(rng.integers(1, 3))
        kind = "chunk" if i >= n * 2 // 3 else "fact"
        entry = Entry(text=" ".join(body), id=f"r{i}", kind=kind,
                      superseded_by="r0" if kind == "fact" and i % 50 == 49 else None).normalized("default")
        rows.append((entry, EntryTerms(body=tuple(body), tags=("tagged",) if i % 4 == 0 else ())))
    stores = []
    for target in (str(tmp_path / "lex.db"), url):
        store = open_store(target)
        for start in range(0, n, 500):
            chunk = rows[start:start + 500]
            store.upsert("default", [e for e, _ in chunk], None, [t for _, t in chunk])
        stores.append(store)
    return stores[0], stores[1]


def test_bm25_beyond_the_sql_candidates_equals_sqlite(postgres_server: PostgresServer, tmp_path: Path) -> None:
    """Thousands of rows match, so the database ranks them and only its best are re-scored:
    the top k is still the SQLite store's, unfiltered, with a filter most rows pass and with
    one that admits only the lowest-ranked third (widening, then ranking admitted rows only)."""
    from engramdb.store.postgres import bm25

    sqlite, postgres = _lexical_pair(tmp_path, postgres_server.new_database("lex"))
    try:
        assert postgres.count("default") > 10 * bm25.candidates(10)
        for terms in (["common"], ["common", "rare"], ["rare", "w3", "common", "w7"], ["tagged", "common"]):
            for filters in (Filters(), Filters.parse({"kind": "chunk"}), Filters.parse({"kind": "fact"})):
                for k in (10, 50):
                    a = _by_id_store(sqlite, sqlite.lexical(terms, k, "default", filters))
                    b = _by_id_store(postgres, postgres.lexical(terms, k, "default", filters))
                    assert len(a) == k and [i for i, _ in a] == [i for i, _ in b], (terms, filters, k)
                    assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-6)
            names = [("keyword", "w3")]
            # symbolic (most names, then BM25) and dated/temporal need tags/times: symbolic here
            a = _by_id_store(sqlite, sqlite.symbolic("x", terms, 10, "default", Filters(), names=names))
            b = _by_id_store(postgres, postgres.symbolic("x", terms, 10, "default", Filters(), names=names))
            assert [i for i, _ in a] == [i for i, _ in b]
    finally:
        sqlite.close()
        postgres.close()


def _by_id_store(store: Any, hits: list[tuple[int, float]]) -> list[tuple[str, float]]:
    entries = store.fetch([r for r, _ in hits])
    return [(entries[r].id, s) for r, s in hits]


def test_a_store_with_the_old_postings_layout_is_upgraded_on_open(postgres_server: PostgresServer) -> None:
    """A store written before postings carried namespace and row length, and before the
    per-namespace row counts, opens (upgraded in place) and scores as before."""
    from engramdb.store.open import open_store

    url = postgres_server.new_database("old")
    with Memory(url, embedder="minilm") as mem:
        mem.add(_corpus())
        before = [(h.entry.id, h.score) for h in mem.search("green tea", k=5, preset="lexical").hits]
        with mem.store._write() as cur:  # back to the previous layout
            cur.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey, DROP COLUMN namespace, DROP COLUMN len, "
                        "ADD PRIMARY KEY (term, rowid)")
            cur.execute("DROP TABLE namespace_rows")
    store = open_store(url)
    store.close()
    with Memory(url, embedder="minilm") as mem:
        after = [(h.entry.id, h.score) for h in mem.search("green tea", k=5, preset="lexical").hits]
        with mem.store._read() as cur:
            key = cur.execute("SELECT pg_get_indexdef('postings_pkey'::regclass)").fetchone()[0]
            counted = cur.execute("SELECT rows FROM namespace_rows WHERE namespace = 'default'").fetchone()[0]
        assert counted == mem.count() == len(_corpus())
    assert before and after == before
    assert "(namespace, term, rowid) INCLUDE (tf, len)" in key


def test_created_at_lost_from_the_json_is_restored_on_open(postgres_server: PostgresServer) -> None:
    """Entries written before the fix kept `created_at` in its column only: opening the store
    copies it into what reads return, once."""
    url = postgres_server.new_database("created")
    with Memory(url, embedder="minilm") as mem:
        [entry_id] = mem.add("Alice lives in Lisbon.")
        stamped = mem.get(entry_id)[0].created_at
        assert stamped is not None
        with mem.store._write() as cur:  # as such a store was left
            cur.execute("UPDATE entries SET data = jsonb_set(data::jsonb, '{created_at}', 'null')::text")
            cur.execute("DELETE FROM meta WHERE key = 'created_at_in_data'")
    with Memory(url, embedder="minilm") as mem:
        assert mem.get(entry_id)[0].created_at == stamped
        exported = [line["entry"] for line in mem.export() if "entry" in line]
        assert [(e["id"], e["created_at"]) for e in exported] == [(entry_id, stamped)]


def test_a_schema_4_store_gains_turn_places_and_its_version_on_open(postgres_server: PostgresServer) -> None:
    """Schema 4 had no `place` column: opening adds it and records schema 5, so a read-only
    open (a replica) accepts the store afterwards; an edited turn keeps its place."""
    from engramdb.store.base import Filters

    url = postgres_server.new_database("places")
    with Memory(url, embedder="minilm") as mem:
        mem.add_conversation([("Ann", "I planted tulips."), ("Ben", "Which colour?"), ("Ann", "Red ones.")],
                             session_id="garden", session_time="2024-04-01T09:00:00", extractor="none")
        with mem.store._write() as cur:  # as schema 4 left it
            cur.execute("ALTER TABLE entries DROP COLUMN place")
            cur.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with Memory(url, embedder="minilm") as mem:
        assert mem.stats()["schema_version"] == "5"
        ids = mem.store.ids("default", Filters(session_id="garden", kinds=["turn"]))
        mem.update(ids[1], text="Ben: Which colour did you pick?")
        assert mem.store.ids("default", Filters(session_id="garden", kinds=["turn"])) == ids
    with Memory(url, embedder="minilm", read_only=True) as mem:
        assert mem.count() == 3


def _has_vector_index(store: Any) -> bool:
    from engramdb.store.postgres.schema import SCHEMA, VECTOR_INDEX

    with store._read() as cur:
        return cur.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.{VECTOR_INDEX}",)).fetchone()[0] is not None


def test_a_bulk_load_builds_the_vector_index_once_at_the_end(postgres_server: PostgresServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside `bulk_load` there is no HNSW index (searches are exact meanwhile), after it
    there is one, also when the load fails; and a store left without one (a load killed
    midway) gets it back on its next writable open."""
    from engramdb.store.open import open_store

    monkeypatch.setattr(pg_store, "BULK_MIN", 10)
    store, vectors = _vector_store(postgres_server.new_database("bulk"), 50)
    try:
        assert _has_vector_index(store)
        with store.bulk_load(100):
            assert not _has_vector_index(store)
            more = [Entry(text=f"more {i}", id=f"m{i}").normalized("default") for i in range(100)]
            store.upsert("default", more, vectors[:1].repeat(100, axis=0),
                         [EntryTerms(body=("more",), tags=()) for _ in more])
            assert store.fetch([store.semantic(vectors[7], 1, "default", Filters())[0][0]]).popitem()[1].id == "r7"
        assert _has_vector_index(store) and store.count(None) == 150
        with pytest.raises(RuntimeError):
            with store.bulk_load(1000):
                raise RuntimeError("the load failed")
        assert _has_vector_index(store)
        with store.bulk_load(5):  # small loads keep the index as they go
            assert _has_vector_index(store)
        with store._write() as cur:
            cur.execute("DROP INDEX entries_vec_hnsw")
        url = store.url
    finally:
        store.close()
    reopened = open_store(url)
    try:
        assert _has_vector_index(reopened)
    finally:
        reopened.close()


def test_migrate_into_postgres_defers_the_vector_index(postgres_server: PostgresServer, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`engram migrate` loads through `bulk_load`: a large copy into an empty database ends
    with the HNSW index built and the same search results as the source."""
    from engramdb.migrate import migrate

    monkeypatch.setattr(pg_store, "BULK_MIN", 10)
    source = str(tmp_path / "src.db")
    with Memory(source, embedder="minilm") as mem:
        mem.add(_corpus())
        expected = [(h.entry.id, round(h.score, 6)) for h in mem.search("green tea", k=5).hits]
    url = postgres_server.new_database("mig")
    migrate(source, url)
    with Memory(url, embedder="minilm") as mem:
        assert _has_vector_index(mem.store)
        assert [(h.entry.id, round(h.score, 6)) for h in mem.search("green tea", k=5).hits] == expected


def test_a_large_jsonl_import_is_a_bulk_load(postgres_server: PostgresServer, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`engram import` of a JSONL that at least doubles the store defers the HNSW index:
    it is dropped, built once at the end, and the import's entries are all searchable."""
    monkeypatch.setattr(pg_store, "BULK_MIN", 10)
    built: list[int] = []
    original = pg_store.PostgresStore._build_vector_index

    def counting(self: Any) -> None:
        built.append(int(_has_vector_index(self)))
        original(self)

    monkeypatch.setattr(pg_store.PostgresStore, "_build_vector_index", counting)
    data = tmp_path / "facts.jsonl"
    data.write_text("".join(json.dumps({"id": f"f{i}", "text": f"fact {i} about harbours and {i % 5} boats"}) + "\n"
                            for i in range(40)), encoding="utf-8")
    url = postgres_server.new_database("imp")
    with Memory(url, embedder="minilm") as mem:
        mem.add("an entry before the import")
        built.clear()
        mem.import_path(data)
        assert built == [0]  # called once, at the end, with the index gone
        assert _has_vector_index(mem.store) and mem.count() == 41
        assert mem.search("fact 7 about harbours", k=1, preset="semantic").hits[0].entry.id == "f7"


def test_warm_reads_the_common_terms_and_names_into_the_cache(postgres_server: PostgresServer) -> None:
    """`warm` (called by `engram serve` at start) fills the postings cache with the frequent
    terms and names, within its budget; searches read only what was added since and give
    the same results as before."""
    url = postgres_server.new_database("warm")
    with Memory(url, embedder="minilm") as mem:
        mem.add(_corpus())
        expected = [(h.entry.id, h.score) for h in mem.search("Alice green tea", k=5).hits]
    with Memory(url, embedder="minilm") as mem:
        cache = mem.store._postings
        assert cache.size == 0
        mem.store.warm(budget=10**6)
        keys = set(cache._lists)
        assert ("term", "default", "tea") in keys and ("tag", "person", "alice") in keys
        warmed = cache.size
        assert [(h.entry.id, h.score) for h in mem.search("Alice green tea", k=5).hits] == expected
        assert cache.size == warmed  # nothing new was read: the search's lists were all cached
        mem.store.warm(budget=1)  # a budget already spent reads nothing more
        assert cache.size == warmed
