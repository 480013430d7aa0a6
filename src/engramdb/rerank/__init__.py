"""Cross-encoder rerankers: read the question and an entry together and score the pair.

No package on PyPI ships cross-encoder weights for offline use (the ones that exist download
at run time), so Engram loads an ONNX cross-encoder from a directory the user gives; see
`OnnxCrossEncoder` and docs/PRESETS.md for how to export one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, Sequence

from .onnx import OnnxCrossEncoder


class Reranker(Protocol):
    """Scores (query, text) pairs; higher means more relevant. Any scale."""

    name: str

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


_loaded: dict[str, OnnxCrossEncoder] = {}


def load_reranker(path: str | os.PathLike[str]) -> OnnxCrossEncoder:
    """The cross-encoder in directory `path` (``model.onnx`` + ``tokenizer.json``), loaded once."""
    key = str(Path(path).expanduser().resolve())
    if key not in _loaded:
        _loaded[key] = OnnxCrossEncoder(key)
    return _loaded[key]


def reranker_from_env() -> OnnxCrossEncoder | None:
    """The cross-encoder named by ``ENGRAM_RERANKER``, if set."""
    path = os.environ.get("ENGRAM_RERANKER")
    return load_reranker(path) if path else None


__all__ = ["OnnxCrossEncoder", "Reranker", "load_reranker", "reranker_from_env"]
