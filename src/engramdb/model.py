"""Plain typed records that flow through Engram: entries, candidates, hits and results.

No behaviour lives here beyond (de)serialisation and the stable-id rule, so every layer
(store, pipeline, CLI, eval) can share these types without import cycles.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from collections.abc import Iterator
from typing import Any, Literal, overload

from .validation import (
    check_entry_id, check_json_object, check_name, check_optional_str, check_str, check_str_list, env_int,
    normalize_timestamp,
)

Kind = Literal["fact", "turn", "chunk"]
KINDS: tuple[str, ...] = ("fact", "turn", "chunk")


#: Default cap on one entry's text (``$ENGRAM_MAX_TEXT_CHARS``): an entry is a memory — a fact,
#: a turn, a note's chunk — and embedding ~100,000 characters already takes seconds; a 2 MB text
#: took over a minute of a server's CPU for one request. Documents are imported as chunks.
MAX_TEXT_CHARS = 100_000


def max_text_chars() -> int:
    """The cap on an entry's text: ``$ENGRAM_MAX_TEXT_CHARS`` if set, else `MAX_TEXT_CHARS`."""
    return env_int("ENGRAM_MAX_TEXT_CHARS", MAX_TEXT_CHARS)


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
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ValueError(f"source must be a JSON object with the fields {', '.join(cls.__dataclass_fields__)}"
                             f" (e.g. {{\"path\": \"notes/a.md\"}}), not {type(data).__name__}")
        known = {f: data[f] for f in cls.__dataclass_fields__ if f in data}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown source field(s): {', '.join(map(str, unknown))}")
        return cls(**known).checked()

    def checked(self) -> "Source":
        """A validated copy: text fields are strings, `chunk_index` a non-negative integer."""
        index = self.chunk_index
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 2**63):
            raise ValueError(f"source.chunk_index must be a non-negative integer, not {index!r:.40}")
        return Source(
            doc_id=check_optional_str(self.doc_id, "source.doc_id"),
            path=check_optional_str(self.path, "source.path"),
            chunk_index=index,
            heading_path=check_str_list(self.heading_path, "source.heading_path"),
            session_id=check_optional_str(self.session_id, "source.session_id"),
            turn_id=check_optional_str(self.turn_id, "source.turn_id"),
            speaker=check_optional_str(self.speaker, "source.speaker"),
        )


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
    namespace: str | None = None  # None: the namespace of the call that stores it
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
    expires_at: str | None = None  # after this (UTC) the entry is out of search, list and count
    supersedes: list[str] = field(default_factory=list)  # ids of the entries this one replaced
    superseded_by: str | None = None  # set by the store when a newer entry supersedes this one

    def normalized(self, namespace: str | None = None) -> "Entry":
        """Validate every field and fill defaults (namespace, UTC timestamps, stable id).

        `namespace` is the namespace of the call storing the entry; an entry that names
        another one is refused rather than moved there. Raises ValueError naming the field.
        """
        # Whitespace around the text is not part of it: " Alice likes tea. " is the entry
        # "Alice likes tea." again (one id, one copy), as a line from a file or an LLM often ends.
        text = check_str(self.text, "entry text").strip()
        if not text:
            raise ValueError("entry text must be a non-empty string")
        if len(text) > (limit := max_text_chars()):
            raise ValueError(f"entry text is {len(text):,} characters long; the limit is {limit:,} "
                             "($ENGRAM_MAX_TEXT_CHARS): import a long document as notes (engram import, "
                             "Memory.import_path), which splits it into chunks")
        if self.kind not in KINDS:
            raise ValueError(f"entry kind must be one of {', '.join(KINDS)}, not {self.kind!r:.40}")
        own = None if self.namespace is None else check_name(self.namespace, "entry namespace")
        if namespace is not None and own is not None and own != namespace:
            raise ValueError(f"entry namespace {own!r} differs from the namespace it is written to ({namespace!r}); "
                             "drop the field or write to that namespace")
        ns = check_name(namespace or own or "default", "namespace")
        source = self.source if isinstance(self.source, Source) else Source.from_dict(self.source)
        entry = Entry(
            text=text,
            kind=self.kind,
            namespace=ns,
            timestamp=normalize_timestamp(self.timestamp),
            timestamp_end=normalize_timestamp(self.timestamp_end, "timestamp_end"),
            persons=_dedupe(check_str_list(self.persons, "entry persons")),
            entities=_dedupe(check_str_list(self.entities, "entry entities")),
            keywords=_dedupe(check_str_list(self.keywords, "entry keywords")),
            location=check_optional_str(self.location, "entry location"),
            topic=check_optional_str(self.topic, "entry topic"),
            source=source.checked(),
            metadata=dict(check_json_object(self.metadata, "entry metadata")),
            derived_from=check_str_list(self.derived_from, "entry derived_from"),
            created_at=normalize_timestamp(self.created_at, "created_at"),
            expires_at=normalize_timestamp(self.expires_at, "expires_at"),
            supersedes=[check_name(i, "entry supersedes") for i in check_str_list(self.supersedes, "entry supersedes")],
            superseded_by=check_name(self.superseded_by, "entry superseded_by") if self.superseded_by is not None
            else None,
        )
        if entry.timestamp_end is not None:
            if entry.timestamp is None:
                raise ValueError("timestamp_end needs a timestamp (the start of the period)")
            if timestamp_epoch(entry.timestamp_end) < timestamp_epoch(entry.timestamp):  # type: ignore[operator]
                raise ValueError(f"timestamp_end {entry.timestamp_end} is before timestamp {entry.timestamp}")
        entry.id = check_entry_id(self.id, "entry id") if self.id is not None else \
            stable_id(ns, entry.kind, entry.source, entry.text)
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
            "expires_at": self.expires_at,
            "supersedes": list(self.supersedes),
            "superseded_by": self.superseded_by,
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
        for name in ("persons", "entities", "keywords", "derived_from", "supersedes"):
            if values.get(name) is None:
                values[name] = []
        if values.get("metadata") is None:
            values["metadata"] = {}
        return cls(**values)  # every value is checked by `normalized`


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
    # The turns around a turn hit, in session order, as (offset, entry): -1 the turn before,
    # +1 the one after. Only when the search asked for context (None: not asked).
    context: list[tuple[int, Entry]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The full entry with the hit's final score and per-channel evidence (`HitModel`)."""
        out = {
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            **{k: v for k, v in self.entry.to_dict().items() if k not in ("id", "text")},
            "channels": {
                name: {"rank": cs.rank, "score": round(cs.score, 6)} for name, cs in self.channels.items()
            },
        }
        if self.context is not None:
            out["context"] = [{"offset": offset, "id": e.id, "speaker": e.source.speaker, "text": e.text,
                               "timestamp": e.timestamp} for offset, e in self.context]
        return out


@dataclass(slots=True)
class SearchResult:
    """What `Memory.search` returns: the hits, best first, and a per-stage trace."""

    query: str
    hits: list[Hit]
    trace: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> list[Hit]: ...

    def __getitem__(self, index: int | slice) -> Hit | list[Hit]:
        """A hit by rank (``result[0]`` is the best), or a list of them for a slice (``result[:3]``)."""
        return self.hits[index]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "hits": [h.to_dict() for h in self.hits], "trace": self.trace}


@dataclass(slots=True)
class Page:
    """One page of `Memory.list`: the entries and the cursor for the next page (None: the last)."""

    results: list[Entry]
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        """An entry of the page by position (``page[0]``), or a list of them for a slice."""
        return self.results[index]

    def to_dict(self) -> dict[str, Any]:
        return {"results": [e.to_dict() for e in self.results], "next_cursor": self.next_cursor}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
