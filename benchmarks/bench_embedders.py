"""Throughput and query latency of the offline embedding models.

    python benchmarks/bench_embedders.py            # all local models
    python benchmarks/bench_embedders.py --model minilm

Short texts are conversation-turn sized (~12 words); passages ~200 words (a SciFact
abstract's length). Run on an idle machine: these models use every core.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from engramdb.embed import get_embedder

WORDS = ("memory retrieval agent conversation support group sunrise painting release database port "
         "travel budget mountain coffee meeting product pricing feedback weekend concert museum garden "
         "research protein cells clinical trial patients outcome analysis").split()


def sentences(n: int, words: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "." for _ in range(n)]


def measure(name: str, n_short: int, n_long: int) -> dict[str, object]:
    embedder = get_embedder(name)
    embedder.embed_query("warm up")
    short, long = sentences(n_short, 12), sentences(n_long, 200, seed=1)
    t0 = time.perf_counter()
    embedder.embed_documents(short)
    short_rate = n_short / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    embedder.embed_documents(long)
    long_rate = n_long / (time.perf_counter() - t0)
    query_ms = []
    for q in sentences(50, 8, seed=2):
        t0 = time.perf_counter()
        embedder.embed_query(q)
        query_ms.append((time.perf_counter() - t0) * 1000)
    return {"model": name, "name": embedder.name, "short_per_s": round(short_rate, 1),
            "passages_per_s": round(long_rate, 1), "query_ms_p50": round(statistics.median(query_ms), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="e5-small, minilm (default: both)")
    parser.add_argument("--short", type=int, default=1000)
    parser.add_argument("--long", type=int, default=40)
    args = parser.parse_args()
    for name in args.model or ["minilm", "e5-small"]:
        print(json.dumps(measure(name, args.short, args.long)))


if __name__ == "__main__":
    main()
