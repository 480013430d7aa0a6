"""Store scale on either backend: ingest with precomputed vectors, search latency, memory,
size and a cold open, at 100k or 1M entries.

    python benchmarks/bench_scale.py --db /tmp/scale.db --n 1000000
    python benchmarks/bench_scale.py --db postgresql://postgres@127.0.0.1:PORT/postgres --n 1000000
    python benchmarks/bench_scale.py --db /tmp/scale.db --reuse          # search and open only

(`benchmarks/pg_server.py` starts a throw-away PostgreSQL 18 + pgvector server and prints its
URL.) The entries are `bench_store.py`'s synthetic sentences (people, actions, objects,
places, dates, ids), each tagged with its person. Their vectors are *precomputed*, not
embedded: the fast English embedder embeds each sentence part once (person, action, object,
place, reason) and an entry's vector is the normalised sum of its parts plus noise, so the
vectors cluster as real sentence embeddings do and queries embedded by the same model land
among them. Ingest goes through the store's write path (`Store.upsert` with the analysed
terms the writer makes, as `engram migrate` writes), in transactions of `--batch` entries,
inside `Store.bulk_load` as `engram migrate` does (PostgreSQL builds its HNSW index once at
the end: the ingest time includes that build).

Reported: ingest entries/s; for the default preset (and any `--preset`), `Memory.search`
p50/p95 (k = 10) over short questions and ~100-token dialogue contexts, end to end with the
query embedding; the query embedding's own p50; the process's peak RSS (the in-RAM indexes
of SQLite; PostgreSQL keeps its indexes in the server); the file or database size; and a
cold open: a new process-level `Memory` until its first search has answered.
A benchmark, not a test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import (  # noqa: E402
    OBJECTS, PEOPLE, PLACES, REASONS, VERBS, make_dialogue, make_query, percentile)

from engramdb import Entry, Memory  # noqa: E402
from engramdb.store.open import backend_of, open_store  # noqa: E402
from engramdb.writer import entry_terms  # noqa: E402

NOISE = 0.35  # the share of a vector that is noise: near-duplicate sentences are not identical


def make_entry(rng: random.Random, i: int) -> tuple[Entry, tuple[int, int, int, int, int]]:
    """One synthetic entry and the indexes of its parts (for its precomputed vector)."""
    parts = (rng.randrange(len(PEOPLE)), rng.randrange(len(VERBS)), rng.randrange(len(OBJECTS)),
             rng.randrange(len(PLACES)), rng.randrange(len(REASONS)))
    p, v, o, pl, r = parts
    text = (f"{PEOPLE[p]} {VERBS[v]} {OBJECTS[o]} in {PLACES[pl]} {REASONS[r]} on {rng.randint(1, 28)} "
            f"{rng.choice(['May', 'June', 'July', 'August'])} {rng.choice([2022, 2023, 2024])}.")
    if i % 7 == 0:
        text += f" Ticket ENG-{rng.randint(100, 9999)}, build v{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}."
    entry = Entry(id=f"e{i}", text=text, persons=[PEOPLE[p]], timestamp=f"2023-0{5 + i % 4}-{1 + i % 28:02d}T12:00:00")
    return entry.normalized("default"), parts


class PartVectors:
    """Vectors composed from the embedded sentence parts (see the module docstring)."""

    def __init__(self, mem: Memory, seed: int = 7) -> None:
        self.tables = [np.asarray(mem.embedder.embed_documents(list(words)), dtype=np.float32)
                       for words in (PEOPLE, VERBS, OBJECTS, PLACES, REASONS)]
        self.rng = np.random.default_rng(seed)

    def of(self, parts: list[tuple[int, int, int, int, int]]) -> np.ndarray:
        idx = np.array(parts)
        vec = sum(table[idx[:, j]] for j, table in enumerate(self.tables))
        vec = vec / np.linalg.norm(vec, axis=1, keepdims=True)
        noise = self.rng.standard_normal(vec.shape).astype(np.float32)
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        vec = (1 - NOISE) * vec + NOISE * noise
        return (vec / np.linalg.norm(vec, axis=1, keepdims=True)).astype(np.float32)


def rss_mb() -> float:
    """Peak resident memory of this process so far (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def size_mb(db: str, mem: Memory) -> float:
    if backend_of(db) == "sqlite":  # the file and its WAL
        return sum(p.stat().st_size for p in Path(db).parent.glob(Path(db).name + "*")) / 1e6
    return float(mem.stats().get("file_bytes") or 0) / 1e6


def ingest(db: str, n: int, batch: int, embedder: str) -> dict[str, Any]:
    rng = random.Random(42)
    with Memory(db, embedder=embedder) as mem:
        parts_vectors = PartVectors(mem)
        store = mem.store
        store.bind_embedder(mem.embedder.name, mem.embedder.dim)
        done, spent = store.count(None), 0.0
        for _ in range(done):  # resume: regenerate (and skip) what is stored
            make_entry(rng, 0)
        with store.bulk_load(n - done):  # as `engram migrate` loads: indexes built at the end
            while done < n:
                size = min(batch, n - done)
                made = [make_entry(rng, done + j) for j in range(size)]
                entries = [e for e, _ in made]
                vectors = parts_vectors.of([p for _, p in made])
                terms = [entry_terms(e) for e in entries]
                start = time.perf_counter()
                store.upsert("default", entries, vectors, terms)
                spent += time.perf_counter() - start
                done += size
                print(f"\r  ingest {done}/{n}  {done / max(spent, 1e-9):.0f}/s", end="", file=sys.stderr)
            print(file=sys.stderr)
            start = time.perf_counter()  # leaving the block builds the deferred index
        index_s = time.perf_counter() - start
        spent += index_s
        return {"ingest_s": round(spent, 1), "ingest_per_s": round(n / spent, 1) if spent else None,
                "ingest_index_build_s": round(index_s, 1)}


def search(db: str, n_queries: int, presets: list[str], embedder: str, warm: bool = False) -> dict[str, Any]:
    rng = random.Random(11)
    start = time.perf_counter()
    with Memory(db, embedder=embedder) as mem:
        mem.embedder.embed_query("warm up")  # the model load is not the store's cost
        model_s = time.perf_counter() - start
        start = time.perf_counter()
        mem.search("When did Alice visit Berlin?", k=10)
        first_s = time.perf_counter() - start
        open_rss = rss_mb()
        warm_s = None
        if warm:  # as `engram serve` does at start (in the background there)
            start = time.perf_counter()
            mem.store.warm()
            warm_s = round(time.perf_counter() - start, 1)
        queries = [make_query(rng) for _ in range(n_queries)]
        dialogues = [make_dialogue(rng) for _ in range(n_queries)]
        out: dict[str, Any] = {"cold_open_first_search_s": round(first_s, 2), "model_load_s": round(model_s, 2),
                               "rss_after_open_mb": round(open_rss, 0), "warm_s": warm_s, "presets": {}}
        for preset in presets:
            # Each query set twice: the first pass pays for first reads (PostgreSQL's postings
            # cache, pages not yet in memory), the second is a long-running service's state.
            timings: dict[str, list[float]] = {"short": [], "dialogue": [], "short_again": [], "dialogue_again": []}
            for name, qs in (("short", queries), ("dialogue", dialogues), ("short_again", queries),
                             ("dialogue_again", dialogues)):
                for q in qs[:10]:
                    mem.search(q, k=10, preset=preset)
                for q in qs:
                    t0 = time.perf_counter()
                    mem.search(q, k=10, preset=preset)
                    timings[name].append((time.perf_counter() - t0) * 1000)
            out["presets"][preset] = {
                name: {"p50": round(statistics.median(v), 1), "p95": round(percentile(v, 95), 1)}
                for name, v in timings.items()}
        embed_ms = []
        for q in queries[:100]:
            t0 = time.perf_counter()
            mem.embedder.embed_query(q)
            embed_ms.append((time.perf_counter() - t0) * 1000)
        out["query_embed_ms_p50"] = round(statistics.median(embed_ms), 1)
        out["entries"] = mem.count()
        out["size_mb"] = round(size_mb(db, mem), 0)
        out["peak_rss_mb"] = round(rss_mb(), 0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a SQLite path or a postgresql:// URL")
    parser.add_argument("--n", type=int, default=100_000, help="entries to ingest")
    parser.add_argument("--batch", type=int, default=1000, help="entries per write transaction")
    parser.add_argument("--embedder", default="minilm", help="the model of the vectors and queries")
    parser.add_argument("--queries", type=int, default=200, help="queries of each kind per preset")
    parser.add_argument("--preset", nargs="+", default=["default"])
    parser.add_argument("--reuse", action="store_true", help="skip ingest; measure the store as it is")
    parser.add_argument("--warm", action="store_true", help="call Store.warm() after the cold open, as `engram serve` "
                        "does, before timing searches")
    parser.add_argument("--json", dest="json_out", default=None, help="also write the numbers here")
    args = parser.parse_args()
    result: dict[str, Any] = {"backend": backend_of(args.db), "n": args.n, "embedder": args.embedder}
    if args.reuse:
        result.update(search(args.db, args.queries, args.preset, args.embedder, args.warm))
    else:
        result.update(ingest(args.db, args.n, args.batch, args.embedder))
        result["ingest_peak_rss_mb"] = round(rss_mb(), 0)
        if result["backend"] == "sqlite":
            store = open_store(args.db)  # build (and save) the HNSW graph before the cold open
            start = time.perf_counter()
            store.warm()
            result["index_build_s"] = round(time.perf_counter() - start, 1)
            result["graph_saved"] = store.save_vector_snapshot()
            store.close()
        # Searched from a new process, so its open is cold (nothing loaded, RSS its own).
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "search.json"
            subprocess.run([sys.executable, __file__, "--db", args.db, "--reuse", "--embedder", args.embedder,
                            "--queries", str(args.queries), "--preset", *args.preset, "--json", str(out),
                            *(["--warm"] if args.warm else [])],
                           check=True, stdout=subprocess.DEVNULL)
            searched = json.loads(out.read_text())
        result.update({k: v for k, v in searched.items() if k not in result})
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
