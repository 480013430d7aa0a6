"""The first search of a fresh process (as every `engram search` is), its model already loaded:
what one-time work the search path does (dictionaries, tables) on top of a warm search.

Run: ``python benchmarks/first_search.py [--runs 7] [--query "What car do I drive now?"]``;
set ``PYTHONPATH`` to another checkout's ``src`` to time that code side by side.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, time
from engramdb import Memory
mem = Memory(sys.argv[1])
mem.embedder.embed_query("warm up")  # the model's load is not what is timed
t = time.perf_counter(); mem.search(sys.argv[2]); first = time.perf_counter() - t
t = time.perf_counter(); mem.search(sys.argv[2]); second = time.perf_counter() - t
print(first * 1000, second * 1000)
"""

NOTES = ["Started at BMW as a data engineer; my manager is Laura.", "Bought a used VW Golf.",
         "Reorg at work: I now report to Daniel.", "Sold the Golf and leased a Tesla Model 3.",
         "My dentist is Dr. Weber.", "周末和小李去西湖划船。"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--query", default="What car do I drive now?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "first.db"
        subprocess.run([sys.executable, "-c", "import sys; from engramdb import Memory; "
                        "Memory(sys.argv[1]).add(sys.argv[2:])", str(db), *NOTES], check=True)
        firsts, seconds = [], []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD, str(db), args.query], check=True,
                                 capture_output=True, text=True).stdout.split()
            firsts.append(float(out[0]))
            seconds.append(float(out[1]))
    print(f"first search p50 {statistics.median(firsts):.0f} ms, second {statistics.median(seconds):.0f} ms "
          f"({args.runs} processes)")


if __name__ == "__main__":
    main()
