"""Plain typed records that flow through Engram: entries, candidates, hits and results.

No behaviour lives here beyond (de)serialisation and the stable-id rule, so every layer
(store, pipeline, CLI, eval) can share these types without import cycles.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

Kind = Literal["fact", "turn", "chunk"]
KINDS: tuple[str, ...] = ("fact", "turn", "chunk")


@dataclass(slots=True)
class Source:
    """Where an entry came from. Every field is optional; fill what is known."""

    doc_id: str | None = None
    path: str | None = None
    chunk_index: int | None = None
    heading_path: list[str] = field(default_factory=list)
    session_id: str | None = None
    turn_id: str | None = None
    speaker: str | None = None

    def key(self) -> str:
        """The part of the source that identifies *where* (not *what*) for the stable id."""
        parts = [
            self.doc_id or "",
            self.path or "",
            "" if self.chunk_index is None else str(self.chunk_index),
            self.session_id or "",
            self.turn_id or "",
        ]
        return "\x1f".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], "")}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Source":
        if not data:
            return cls()
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown source field(s): {', '.join(unknown)}")
        if "heading_path" in known and known["heading_path"] is None:
            known["heading_path"] = []
        if known.get("chunk_index") is not None:
            known["chunk_index"] = int(known["chunk_index"])
        return cls(**known)


def normalize_timestamp(value: str | datetime | None) -> str | None:
    """Return an ISO 8601 timestamp in UTC, or None.

    Timezone rule: an aware value is converted to UTC; a naive value (no offset) is taken
    to *be* UTC. Conversations usually carry local wall-clock times with no zone, and
    treating them as UTC keeps "8 May 2023, 1:56 pm" on 8 May whatever the machine's zone.
    Date-only strings ("2023-05-08") mean midnight of that day.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"timestamp {value!r} is not ISO 8601 (e.g. 2023-05-08T13:56:00)") from exc
    else:
        dt = value
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="seconds")


def timestamp_epoch(value: str | None) -> float | None:
    """Seconds since the epoch for a normalised timestamp (used for range filters)."""
    if not value:
        return None
    return datetime.fromisoformat(value).timestamp()


def stable_id(namespace: str, kind: str, source: Source, text: str) -> str:
    """Same namespace, kind, source location and text -> same id, so re-import is idempotent."""
    digest = hashlib.sha256(
        "\x1e".join([namespace, kind, source.key(), text]).encode("utf-8")
    ).hexdigest()
    return digest[:24]


@dataclass(slots=True)
class Entry:
    """One unit of memory: a distilled fact, a raw conversation turn or a document chunk."""

    text: str
    kind: str = "fact"
    namespace: str = "default"
    id: str | None = None
    timestamp: str | None = None
    timestamp_end: str | None = None
    persons: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    location: str | None = None
    topic: str | None = None
    source: Source = field(default_factory=Source)
    metadata: dict[str, Any] = field(default_factory=dict)
    derived_from: list[str] = field(default_factory=list)
    created_at: str | None = None

    def normalized(self, namespace: str | None = None) -> "Entry":
        """Validate and fill defaults (namespace, UTC timestamp, stable id). Raises ValueError."""
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("entry text must be a non-empty string")
        if self.kind not in KINDS:
            raise ValueError(f"entry kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        ns = namespace or self.namespace or "default"
        if not isinstance(self.metadata, dict):
            raise ValueError("entry metadata must be a JSON object")
        for name in ("persons", "entities", "keywords", "derived_from"):
            values = getattr(self, name)
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"entry {name} must be a list of strings")
        json.dumps(self.metadata)  # raises TypeError early for non-JSON metadata
        entry = Entry(
            text=self.text,
            kind=self.kind,
            namespace=ns,
            timestamp=normalize_timestamp(self.timestamp),
            timestamp_end=normalize_timestamp(self.timestamp_end),
            persons=_dedupe(self.persons),
            entities=_dedupe(self.entities),
            keywords=_dedupe(self.keywords),
            location=self.location or None,
            topic=self.topic or None,
            source=self.source if isinstance(self.source, Source) else Source.from_dict(self.source),
            metadata=dict(self.metadata),
            derived_from=list(self.derived_from),
            created_at=self.created_at,
        )
        if entry.timestamp_end is not None:
            if entry.timestamp is None:
                raise ValueError("timestamp_end needs a timestamp (the start of the period)")
            if timestamp_epoch(entry.timestamp_end) < timestamp_epoch(entry.timestamp):  # type: ignore[operator]
                raise ValueError(f"timestamp_end {entry.timestamp_end} is before timestamp {entry.timestamp}")
        entry.id = self.id or stable_id(ns, entry.kind, entry.source, entry.text)
        return entry

    def to_dict(self) -> dict[str, Any]:
        data = {
            "id": self.id,
            "namespace": self.namespace,
            "kind": self.kind,
            "text": self.text,
            "timestamp": self.timestamp,
            "timestamp_end": self.timestamp_end,
            "persons": list(self.persons),
            "entities": list(self.entities),
            "keywords": list(self.keywords),
            "location": self.location,
            "topic": self.topic,
            "source": self.source.to_dict(),
            "metadata": dict(self.metadata),
            "derived_from": list(self.derived_from),
            "created_at": self.created_at,
        }
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Entry":
        """Build an entry from a JSON object (e.g. one JSONL line). Raises ValueError on bad fields."""
        if not isinstance(data, dict):
            raise ValueError("an entry must be a JSON object")
        allowed = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"unknown field(s): {', '.join(unknown)}")
        if "text" not in data:
            raise ValueError("missing required field 'text'")
        values = dict(data)
        values["source"] = Source.from_dict(values.get("source"))
        for name in ("persons", "entities", "keywords", "derived_from"):
            if values.get(name) is None:
                values[name] = []
        if values.get("metadata") is None:
            values["metadata"] = {}
        return cls(**values)


def _dedupe(values: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for v in values:
        v = v.strip()
        if v and v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


@dataclass(slots=True)
class ChannelScore:
    """How one recall channel saw a hit: its 1-based rank and raw score in that channel."""

    rank: int
    score: float


@dataclass(slots=True)
class Candidate:
    """A stage's unit of work: an entry row with per-channel evidence and a fused score."""

    rowid: int
    score: float = 0.0
    channels: dict[str, ChannelScore] = field(default_factory=dict)
    entry: Entry | None = None


@dataclass(slots=True)
class Hit:
    """One search result: the entry, its fused score and the evidence of every channel."""

    id: str
    text: str
    score: float
    entry: Entry
    channels: dict[str, ChannelScore]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            "kind": self.entry.kind,
            "timestamp": self.entry.timestamp,
            **({"timestamp_end": self.entry.timestamp_end} if self.entry.timestamp_end else {}),
            "persons": list(self.entry.persons),
            "derived_from": list(self.entry.derived_from),
            "source": self.entry.source.to_dict(),
            "channels": {
                name: {"rank": cs.rank, "score": round(cs.score, 6)} for name, cs in self.channels.items()
            },
        }


@dataclass(slots=True)
class SearchResult:
    """What `Memory.search` returns: the hits, best first, and a per-stage trace."""

    query: str
    hits: list[Hit]
    trace: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "hits": [h.to_dict() for h in self.hits], "trace": self.trace}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
