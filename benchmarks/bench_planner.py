"""Rule-planner latency, gazetteer lookup included, on a store of a given size.

    python benchmarks/bench_planner.py --n 10000
    python benchmarks/bench_planner.py --n 10000 --questions path/to/locomo10.json

Fills a temporary store with the synthetic, person- and place-tagged entries of
`bench_store.py` (lexical only: planning needs no vectors), then plans each question once
to warm the gazetteer and again to time it. Questions are synthetic English and Chinese ones,
or every question of a LoCoMo file.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_store import PEOPLE, PLACES, make_query, make_text  # noqa: E402

from engramdb import Entry, Memory  # noqa: E402
from engramdb.plan import PlanContext, RulePlanner  # noqa: E402
from engramdb.writer import entry_terms  # noqa: E402

ZH = ["上周小王在杭州跟谁聊了产品 XYZ？", "李雷去年夏天去了哪些地方？", "王芳什么时候去的上海？", "2023年5月谁更忙？"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--questions", type=Path, default=None, help="a LoCoMo JSON file to take questions from")
    args = parser.parse_args()
    rng = random.Random(7)
    if args.questions:
        from engramdb.eval.datasets import load_locomo

        questions = [q.question for s in load_locomo(args.questions) for q in s.questions]
    else:
        questions = [make_query(rng) for _ in range(1000)] + ZH * 50
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "plan.db", embedder="minilm") as mem:
        entries = [Entry(text=make_text(rng, i), persons=[rng.choice(PEOPLE)], location=rng.choice(PLACES))
                   for i in range(args.n)]
        # Lexical-only store: write rows without vectors, as planning reads names and tags only.
        rows = [e.normalized("default") for e in entries]
        mem.store.upsert("default", rows, None, [entry_terms(e) for e in rows])
        store = mem.store
        context = PlanContext(datetime(2024, 6, 1, tzinfo=timezone.utc),
                              lambda text: store.match_names("default", text))
        planner = RulePlanner()
        for q in questions:  # warm: jieba's dictionary and the gazetteer load on first use
            planner.plan(q, context)
        times = []
        for q in questions:
            start = time.perf_counter()
            planner.plan(q, context)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    out = {"n_entries": args.n, "questions": len(questions), "p50_ms": round(statistics.median(times), 3),
           "p95_ms": round(times[int(len(times) * 0.95)], 3), "max_ms": round(times[-1], 3)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
