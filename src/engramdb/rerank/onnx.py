"""An ONNX cross-encoder run with onnxruntime, offline, from a directory the user gives.

The directory holds ``model.onnx`` and a Hugging Face ``tokenizer.json`` — what
``optimum-cli export onnx --task text-classification`` writes for a model such as
``cross-encoder/ms-marco-MiniLM-L-6-v2`` or ``BAAI/bge-reranker-base``. The model takes
``input_ids`` and ``attention_mask`` (and ``token_type_ids`` if it declares them) for the
pair encoded as ``[CLS] query [SEP] text [SEP]``, and returns logits of shape ``[batch, 1]``
(one relevance logit) or ``[batch, 2]`` (the second column is "relevant").
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import InputError


class OnnxCrossEncoder:
    """Scores (query, text) pairs with a cross-encoder; raw logits, higher is more relevant."""

    batch_size = 16

    def __init__(self, path: str | os.PathLike[str], max_tokens: int = 512, num_threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = Path(path).expanduser()
        model, tokenizer = folder / "model.onnx", folder / "tokenizer.json"
        for needed in (model, tokenizer):
            if not needed.is_file():
                raise InputError(f"cross-encoder {folder}: {needed.name} not found (the directory needs model.onnx "
                                 "and tokenizer.json; see docs/PRESETS.md, 'Rerank')")
        self.name = f"onnx/{folder.name}"
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
            raise InputError(f"cross-encoder {folder}: tokenizer.json could not be read: {exc}") from exc
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or max(1, min(4, os.cpu_count() or 1))
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            raise InputError(f"cross-encoder {folder}: model.onnx could not be loaded: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise InputError(f"cross-encoder {folder}: model.onnx lacks input(s) {', '.join(sorted(missing))}")
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One logit per text: its relevance to `query` (higher is better)."""
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            encodings = self._tokenizer.encode_batch([(query, text) for text in batch])
            feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64)}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            with self._lock:
                logits = np.asarray(self._session.run(None, feed)[0], dtype=np.float64)
            logits = logits.reshape(len(batch), -1)
            out.extend((logits[:, 1] if logits.shape[1] == 2 else logits[:, 0]).tolist())
        return out
