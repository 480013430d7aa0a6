"""The narrow interface every embedding model sits behind."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` identifies the model *and* its settings (prefixes, pooling, truncation): the
    store records it and refuses vectors from any other name, because vectors of two
    models are not comparable.
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for stored texts, shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Vector for a search query, shape (dim,)."""
        ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms
