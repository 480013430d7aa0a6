"""Do concurrent searches serialise behind the in-memory indexes' locks?

    python benchmarks/bench_search_threads.py --entries 10000 --threads 8 --seconds 15

In one process (as inside `engram serve`), N threads search one `Memory` while one thread adds
an entry every ``--write-every`` seconds, twice side by side: once with the index locks made
exclusive (every read takes the write side: how the store worked before the readers-writer
lock) and once as shipped (searches share the read side; only a refresh after a write is
exclusive). Reports searches/s, p50/p95 latency and the share of the searchers' time spent
waiting for the index locks. Store built with the fast English model (minilm) if missing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

from bench_server import WORDS, build

from engramdb import Memory
from engramdb.store.rwlock import ReadWriteLock


def exclusive(lock: ReadWriteLock) -> None:
    """Make every read take the write side (one search in an index at a time)."""
    @contextlib.contextmanager
    def read() -> Iterator[None]:
        with lock.write():
            yield
    lock.read = read  # type: ignore[method-assign]


def run(db: Path, mode: str, threads: int, seconds: float, write_every: float) -> dict:
    with Memory(db, embedder="minilm") as mem:
        mem.search("warm up", k=10)
        locks = [mem.store._lexical.lock, mem.store._vectors.lock]  # type: ignore[union-attr]
        if mode == "exclusive":
            for lock in locks:
                exclusive(lock)
        for lock in locks:
            lock.wait_seconds = 0.0
        deadline = time.monotonic() + seconds
        latencies: list[float] = []
        errors: list[str] = []
        writes = [0]
        guard = threading.Lock()

        def searcher(seed: int) -> None:
            rng = random.Random(seed)
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    ok = bool(mem.search(" ".join(rng.choice(WORDS) for _ in range(3)), k=10).hits)
                except Exception as exc:  # noqa: BLE001 - counted, reported
                    ok, message = False, repr(exc)
                took = (time.perf_counter() - started) * 1000
                with guard:
                    (latencies.append(took) if ok else errors.append(message))

        def writer() -> None:
            n = 0
            while time.monotonic() < deadline:
                mem.add([f"written during the thread benchmark ({mode}), number {n}"])
                writes[0] += 1
                n += 1
                time.sleep(write_every)

        workers = [threading.Thread(target=searcher, args=(i,)) for i in range(threads)]
        workers.append(threading.Thread(target=writer))
        started = time.monotonic()
        for t in workers:
            t.start()
        for t in workers:
            t.join(timeout=seconds + 60)
        wall = time.monotonic() - started
        waited = sum(lock.wait_seconds for lock in locks)
        ordered = sorted(latencies)
        return {"mode": mode, "threads": threads, "searches": len(ordered), "writes": writes[0],
                "errors": len(errors), "searches_per_s": round(len(ordered) / wall, 1),
                "p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
                "lock_wait_share": round(waited / (threads * wall), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--write-every", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=2, help="alternate the modes this many times")
    args = parser.parse_args()
    db = Path(tempfile.gettempdir()) / f"engram-bench-server-{args.entries}.db"
    build(db, args.entries)
    results = [run(db, mode, args.threads, args.seconds, args.write_every)
               for _ in range(args.rounds) for mode in ("exclusive", "shared")]
    print("$ python benchmarks/bench_search_threads.py " + " ".join(sys.argv[1:]))
    print(f"{'index locks':>11} {'searches/s':>10} {'p50 ms':>7} {'p95 ms':>7} {'lock wait':>9} {'writes':>6} {'errors':>6}")
    for r in results:
        print(f"{r['mode']:>11} {r['searches_per_s']:>10} {r['p50_ms']:>7} {r['p95_ms']:>7} "
              f"{r['lock_wait_share']:>9.1%} {r['writes']:>6} {r['errors']:>6}")
    print(json.dumps(results, indent=2))
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
