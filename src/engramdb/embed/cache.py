"""A disk cache of document vectors keyed by model name and text hash.

Evaluations re-index the same corpora many times; with the cache only new texts reach the
model. Queries are not cached (they are cheap and rarely repeat).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from .base import Embedder


class CachingEmbedder:
    """Wraps an embedder; `embed_documents` looks texts up in a small SQLite file first."""

    def __init__(self, inner: Embedder, cache_dir: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        directory = Path(cache_dir).expanduser()
        directory.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in inner.name)
        self.path = directory / f"{safe}.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.name}\x00{text}".encode("utf-8")).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing:
            vectors = self.inner.embed_documents([texts[i] for i in missing])
            with self._lock, self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                    [(keys[i], vectors[j].astype(np.float32).tobytes()) for j, i in enumerate(missing)],
                )
            for j, i in enumerate(missing):
                found[keys[i]] = vectors[j]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, key in enumerate(keys):
            out[i] = found[key]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)
