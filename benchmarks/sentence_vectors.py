"""Experiment (not shipped): does a document's best sentence add to its whole-text vector?

    python benchmarks/sentence_vectors.py DATA/scifact ALPHA [--preset default,semantic]

Each abstract's title and each of its sentences are embedded as passages of their own (the
document-vector cache keeps them, so only the first run pays: ~50k sentences for SciFact).
The semantic channel then scores a document by ``(cos(whole) + ALPHA x max cos(sentence)) /
(1 + ALPHA)`` over the whole corpus, patched into the store for the run, and the rest of the
pipeline (fusion, calibration, grouping) runs as shipped through ``engram eval beir``. Before
the eval it prints the semantic channel alone, whole text against the mixes, without fusion.
Results: docs/BENCHMARKS.md, "Tried for `default`".
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from engramdb import cli
from engramdb.embed.cache import CachingEmbedder
from engramdb.embed.local import E5SmallEmbedder
from engramdb.eval.datasets import load_beir
from engramdb.eval.metrics import ndcg_at_k
from engramdb.eval.runner import default_cache_dir
from engramdb.store.sqlite import SQLiteStore

# A sentence ends at . ! or ? followed by a space and a capital or an opening bracket
# ("p < 0.05. In mice" splits; "e.g. the" and "3.5" do not).
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")


def main() -> None:
    data, alpha = Path(sys.argv.pop(1)), float(sys.argv.pop(1))
    ds = load_beir(data, "test")
    docs = list(ds.corpus.values())
    embedder = E5SmallEmbedder()
    cached = CachingEmbedder(embedder, default_cache_dir())
    whole = cached.embed_documents([f"{d.title}\n{d.text}".strip() if d.title else d.text for d in docs])
    units, owner = [], []
    for i, doc in enumerate(docs):
        for part in ([doc.title] if doc.title else []) + [s for s in SENTENCE.split(doc.text) if s.strip()]:
            units.append(part)
            owner.append(i)
    parts = cached.embed_documents(units)
    owners = np.asarray(owner)

    texts = [ds.queries[q] for q in ds.query_ids]
    qv = np.stack([embedder.embed_query(t) for t in texts])
    full = qv @ whole.T
    best = np.full_like(full, -1.0)
    for row, scores in enumerate(qv @ parts.T):
        np.maximum.at(best[row], owners, scores)
    ids = [d.id for d in docs]
    for name, mixed in [("whole", full), ("best sentence", best)] + [
            (f"whole + {a} x best", full + a * best) for a in (0.25, 0.5, 1.0, 2.0)]:
        values = [ndcg_at_k([ids[j] for j in np.argsort(-mixed[r])[:10]], ds.relevant(q))
                  for r, q in enumerate(ds.query_ids)]
        print(f"semantic alone, {name}: nDCG@10 {np.mean(values):.4f}", file=sys.stderr)

    combined = (full + alpha * best) / (1 + alpha)
    row_of = {t: r for r, t in enumerate(texts)}
    asked: dict[bytes, str] = {}
    doc_index = {d: i for i, d in enumerate(ids)}
    state: dict[str, np.ndarray] = {}
    embed_query, semantic = E5SmallEmbedder.embed_query, SQLiteStore.semantic

    def remembered(self: Any, text: str) -> np.ndarray:
        vector = embed_query(self, text)
        asked[np.asarray(vector, dtype=np.float32).tobytes()] = text
        return vector

    def patched(self: Any, vector: np.ndarray, k: int, namespace: str | None, filters: Any) -> list[tuple[int, float]]:
        text = asked.get(np.asarray(vector, dtype=np.float32).tobytes())
        if text not in row_of:
            return semantic(self, vector, k, namespace, filters)
        if not state:
            rows = list(self._reader().execute("SELECT rowid, doc_id FROM entries"))
            state["rowids"] = np.asarray([r for r, _ in rows])
            state["docs"] = np.asarray([doc_index[d] for _, d in rows])
        scores = combined[row_of[text]][state["docs"]]
        top = np.argsort(-scores)[:k]
        return [(int(state["rowids"][i]), float(scores[i])) for i in top]

    E5SmallEmbedder.embed_query = remembered  # type: ignore[method-assign]
    SQLiteStore.semantic = patched  # type: ignore[method-assign]
    sys.argv = ["engram", "eval", "beir", str(data), *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
