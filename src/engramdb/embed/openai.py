"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, Ollama, llama.cpp, ...)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Sequence

import numpy as np

from ..errors import EmbedderUnavailable
from .base import l2_normalize


class OpenAIEmbedder:
    """Calls ``POST {base_url}/embeddings`` with batches of texts.

    ``base_url`` defaults to ``$ENGRAM_EMBED_BASE_URL`` and the key to ``$ENGRAM_EMBED_API_KEY``
    (or ``$OPENAI_API_KEY``). The dimension is learnt from the first response unless given.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        retries: int = 3,
    ) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("ENGRAM_EMBED_BASE_URL") or "").rstrip("/")
        if not self.base_url:
            raise EmbedderUnavailable(
                "no embedding endpoint: pass base_url or set ENGRAM_EMBED_BASE_URL (e.g. http://localhost:8000/v1)"
            )
        self.api_key = api_key or os.environ.get("ENGRAM_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self.name = f"openai/{model}"
        self.batch_size = batch_size
        self.timeout = timeout
        self.retries = retries
        self.dim = dim if dim is not None else len(self._post(["dimension probe"])[0])

    def _post(self, texts: list[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Exception | None = None
        for attempt in range(self.retries):
            request = urllib.request.Request(f"{self.base_url}/embeddings", data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read())
                rows = sorted(payload["data"], key=lambda item: item["index"])
                return l2_normalize(np.array([row["embedding"] for row in rows], dtype=np.float32))
            except urllib.error.HTTPError as exc:
                last = exc
                if exc.code < 500 and exc.code != 429:
                    break  # a client error will not fix itself
            except (urllib.error.URLError, TimeoutError, KeyError, ValueError) as exc:
                last = exc
            time.sleep(min(2**attempt * 0.5, 8))
        raise EmbedderUnavailable(f"embedding endpoint {self.base_url} failed: {last}")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._post(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._post([text])[0]
