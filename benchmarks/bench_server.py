"""Load on the HTTP server: concurrent clients searching while one client writes.

    python benchmarks/bench_server.py --entries 10000 --clients 1 8 32 --seconds 20

Starts `engram serve` on a free loopback port (a subprocess, no API keys: loopback only) over
a store of ``--entries`` short generated notes (built with the fast English model if missing),
then for each client count runs that many search clients and one writer (an add every
``--write-every`` seconds) for ``--seconds``, and reports requests/s, p50/p95 latency and
errors. All traffic goes to 127.0.0.1, bounded in time; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from engramdb import Memory

WORDS = ("apple river stone cloud paper garden window engine silver market forest yellow bridge candle ocean "
         "pencil rocket winter summer coffee violin planet mirror basket thunder harbor lantern meadow").split()


def build(path: Path, n: int) -> None:
    rng = random.Random(3)
    with Memory(path, embedder="minilm") as mem:
        have = mem.count()
        if have < n:
            mem.add([f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)) for i in range(have, n)])
        mem.search("river stone", k=5)  # load the indexes once (and save the HNSW graph above 20k)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_level(url: str, clients: int, seconds: float, write_every: float) -> dict:
    deadline = time.monotonic() + seconds
    latencies: list[float] = []
    errors: list[str] = []
    writes = [0]
    lock = threading.Lock()

    def searcher(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=url, timeout=30) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    r = http.post("/v1/memories/search", json={"query": " ".join(rng.choice(WORDS) for _ in range(3)),
                                                               "k": 10})
                    ok = r.status_code == 200 and len(r.json()["hits"]) > 0
                    message = None if ok else f"{r.status_code} {r.text[:200]}"
                except httpx.HTTPError as exc:
                    message = repr(exc)
                took = (time.perf_counter() - started) * 1000
                with lock:
                    if message:
                        errors.append(message)
                    else:
                        latencies.append(took)

    def writer() -> None:
        with httpx.Client(base_url=url, timeout=30) as http:
            n = 0
            while time.monotonic() < deadline:
                r = http.post("/v1/memories", json={"text": f"written during the load test, number {n}"})
                with lock:
                    if r.status_code != 200:
                        errors.append(f"write {r.status_code} {r.text[:200]}")
                    else:
                        writes[0] += 1
                n += 1
                time.sleep(write_every)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(clients)] + [threading.Thread(target=writer)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 60)
    wall = time.monotonic() - started
    ordered = sorted(latencies)
    return {"clients": clients, "searches": len(latencies), "writes": writes[0], "errors": len(errors),
            "first_errors": errors[:3], "searches_per_s": round(len(latencies) / wall, 1),
            "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1) if ordered else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--write-every", type=float, default=0.1)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    db = Path(args.db or Path(tempfile.gettempdir()) / f"engram-bench-server-{args.entries}.db")
    build(db, args.entries)
    port = free_port()
    env = {**os.environ, "ENGRAM_EMBEDDER": "minilm"}
    server = subprocess.Popen([sys.executable, "-m", "engramdb.cli", "--db", str(db), "serve", "--port", str(port)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.post(f"{url}/v1/memories/search", json={"query": "warm up", "k": 1}, timeout=60)
        results = [run_level(url, n, args.seconds, args.write_every) for n in args.clients]
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("$ python benchmarks/bench_server.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    print(f"{'clients':>7} {'searches/s':>10} {'p50 ms':>7} {'p95 ms':>7} {'searches':>8} {'writes':>6} {'errors':>6}")
    for r in results:
        print(f"{r['clients']:>7} {r['searches_per_s']:>10} {r['p50_ms']:>7} {r['p95_ms']:>7} {r['searches']:>8} "
              f"{r['writes']:>6} {r['errors']:>6}")
    print(json.dumps(results, indent=2))
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
