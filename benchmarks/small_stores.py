"""Small stores cut from a BEIR-layout set, for checking the calibrated score where a new
user starts: a store of a few dozen entries.

    python benchmarks/small_stores.py ../shared/data/scifact /tmp/small/scifact-30 --docs 30 --queries 40
    engram eval beir /tmp/small/scifact-30 --details --json /tmp/small/scifact-30.json -q
    python benchmarks/small_stores.py --ece /tmp/small/scifact-30.json

Each store holds the relevant documents of ``--queries`` randomly drawn test queries (those
with at most ``--docs`` / 3 relevant documents, so a store is not all answers) and random
other documents up to ``--docs``; it is written in the same layout (corpus.jsonl,
queries.jsonl, qrels/test.tsv) to a directory of your choice, outside the project (the
sets' licences do not allow committing them). ``--ece`` prints the expected calibration
error of the ``p`` of the first 20 hits of a ``--details`` run, with its reliability table,
and the top hit's mean ``p`` beside how often it is relevant.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from pathlib import Path


def cut(source: Path, out: Path, docs: int, queries: int, seed: int) -> None:
    corpus = [json.loads(line) for line in (source / "corpus.jsonl").open(encoding="utf-8")]
    asked = {q["_id"]: q for q in map(json.loads, (source / "queries.jsonl").open(encoding="utf-8"))}
    qrels: dict[str, dict[str, int]] = {}
    with (source / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    rng = random.Random(seed)
    candidates = [q for q, rel in qrels.items() if q in asked and len(rel) <= max(1, docs // 3)]
    rng.shuffle(candidates)
    chosen: list[str] = []
    wanted: set[str] = set()
    for q in candidates:
        if len(chosen) == queries:
            break
        if len(wanted | set(qrels[q])) <= docs // 2:  # half the store at most is answers
            chosen.append(q)
            wanted |= set(qrels[q])
    others = [d for d in corpus if d["_id"] not in wanted]
    rng.shuffle(others)
    kept = [d for d in corpus if d["_id"] in wanted] + others[: max(0, docs - len(wanted))]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc in kept:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in chosen:
            f.write(json.dumps(asked[q], ensure_ascii=False) + "\n")
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in chosen:
            for d, s in qrels[q].items():
                f.write(f"{q}\t{d}\t{s}\n")
    print(f"{out}: {len(kept)} documents, {len(chosen)} queries")


def ece(path: Path, bands: int = 10) -> None:
    data = json.loads(path.read_text())
    for result in data["results"]:
        pairs = [(p, rel) for row in result["per_query"] for p, rel in row["scored"][:20]]
        counts = [[0, 0.0, 0] for _ in range(bands)]
        for p, rel in pairs:
            band = min(int(p * bands), bands - 1)
            counts[band][0] += 1
            counts[band][1] += p
            counts[band][2] += rel
        error = sum(abs(s - r) for _, s, r in counts) / max(1, len(pairs))
        tops = [row["scored"][0] for row in result["per_query"] if row["scored"]]
        print(f"{path.name} {result['preset']}: {len(result['per_query'])} questions, {len(pairs)} hits, "
              f"ECE {error:.3f}; top hit: mean p {sum(p for p, _ in tops) / max(1, len(tops)):.3f}, "
              f"relevant {sum(rel for _, rel in tops) / max(1, len(tops)):.3f}")
        for i, (n, s, r) in enumerate(counts):
            if n:
                print(f"  p {i / bands:.1f}-{(i + 1) / bands:.1f}: {n:5d} hits, mean p {s / n:.3f}, relevant {r / n:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", nargs="?", type=Path)
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--docs", type=int, default=30)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ece", type=Path, nargs="+", help="details runs to report instead")
    args = parser.parse_args()
    if args.ece:
        for path in args.ece:
            ece(path)
        return
    if args.source is None or args.out is None:
        parser.error("give SOURCE and OUT (or --ece RUN.json)")
    cut(args.source, args.out, args.docs, args.queries, args.seed)


if __name__ == "__main__":
    main()
