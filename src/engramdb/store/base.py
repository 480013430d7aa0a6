"""The storage interface the pipeline talks to, and the filter record shared by every channel.

The pipeline never sees SQL: it asks a `Store` for channel candidates with a `Filters`
applied *inside* the channel (prefiltering), so a filter can never drop a match that a
post-filter over a truncated list would have lost. A server-backed store (PostgreSQL +
pgvector) implements the same protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, Sequence

import numpy as np

from ..errors import InputError
from ..model import KINDS, Entry, normalize_timestamp

FILTER_KEYS = (
    "kind", "person", "entity", "keyword", "location", "topic", "since", "until",
    "doc_id", "path", "session_id", "turn_id", "speaker", "metadata.<key>",
)


@dataclass(slots=True)
class Filters:
    """Hard constraints. Lists are any-of; different fields are all-of."""

    kinds: list[str] = field(default_factory=list)
    persons: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    location: str | None = None
    topic: str | None = None
    since: str | None = None
    until: str | None = None
    doc_id: str | None = None
    path: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    speaker: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return self == Filters()

    @classmethod
    def parse(cls, data: "Filters | dict[str, Any] | None") -> "Filters":
        """Build from a dict such as ``{"person": "Alice", "since": "2023-05-01", "metadata.project": "x"}``."""
        if data is None:
            return cls()
        if isinstance(data, Filters):
            return data
        if not isinstance(data, dict):
            raise InputError("filters must be a dict of field -> value")
        out = cls()
        for key, value in data.items():
            plural = {"kind": "kinds", "kinds": "kinds", "person": "persons", "persons": "persons",
                      "entity": "entities", "entities": "entities", "keyword": "keywords", "keywords": "keywords"}
            if key in plural:
                values = [value] if isinstance(value, str) else list(value)
                getattr(out, plural[key]).extend(str(v) for v in values)
            elif key in ("since", "until"):
                try:
                    setattr(out, key, normalize_timestamp(value))
                except ValueError as exc:
                    raise InputError(f"filter {key}: {exc}") from exc
            elif key in ("location", "topic", "doc_id", "path", "session_id", "turn_id", "speaker"):
                setattr(out, key, str(value))
            elif key == "metadata" and isinstance(value, dict):
                out.metadata.update(value)
            elif key.startswith("metadata."):
                out.metadata[key.split(".", 1)[1]] = value
            else:
                raise InputError(f"unknown filter {key!r}; valid filters: {', '.join(FILTER_KEYS)}")
        bad = [k for k in out.kinds if k not in KINDS]
        if bad:
            raise InputError(f"filter kind must be one of {', '.join(KINDS)}, not {bad[0]!r}")
        return out

    @staticmethod
    def parse_cli(pairs: Iterable[str]) -> "Filters":
        """Parse ``key=value`` strings from the command line; JSON scalars (3, true) keep their type."""
        data: dict[str, Any] = {}
        for pair in pairs:
            if "=" not in pair:
                raise InputError(f"--filter expects key=value, got {pair!r}")
            key, raw = pair.split("=", 1)
            value: Any = raw
            if key.startswith("metadata."):
                try:
                    parsed = json.loads(raw)
                    if isinstance(parsed, (int, float, bool)) or parsed is None:
                        value = parsed
                except ValueError:
                    pass
            if key in ("kind", "person", "entity", "keyword") and key in data:
                existing = data[key]
                data[key] = (existing if isinstance(existing, list) else [existing]) + [value]
            else:
                data[key] = value
        return Filters.parse(data)


class Store(Protocol):
    """What the pipeline and `Memory` need from storage. Rows are addressed by integer rowid."""

    embedder_name: str | None

    def bind_embedder(self, name: str, dim: int) -> None: ...
    def classify(self, entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[Entry]]: ...
    def upsert(self, entries: Sequence[Entry], vectors: np.ndarray | None, replace: Sequence[str] = ()) -> None: ...
    def get(self, ids: Sequence[str]) -> list[Entry]: ...
    def fetch(self, rowids: Sequence[int]) -> dict[int, Entry]: ...
    def delete(self, namespace: str | None, ids: Sequence[str] | None = None, filters: Filters | None = None) -> int: ...
    def count(self, namespace: str | None = None, filters: Filters | None = None) -> int: ...
    def ids(self, namespace: str | None, filters: Filters) -> list[str]: ...
    def lexical(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def term_coverage(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, int]: ...
    def semantic(self, vector: np.ndarray, k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def symbolic(self, query: str, terms: Sequence[str], k: int, namespace: str | None, filters: Filters,
                 names: Sequence[tuple[str, str]] | None = None) -> list[tuple[int, float]]: ...
    def temporal(self, start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters) -> list[tuple[int, float]]: ...
    def dated(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def newest_timestamp(self, namespace: str | None) -> str | None: ...
    def vectors_of(self, rowids: Sequence[int]) -> np.ndarray: ...
    def substring(self, patterns: Sequence[str], k: int, namespace: str | None,
                  filters: Filters) -> list[tuple[int, float]]: ...
    def warm(self) -> None: ...
    def save_vector_snapshot(self) -> bool: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
