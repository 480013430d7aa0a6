"""The storage interface the pipeline talks to, and the filter record shared by every channel.

The pipeline never sees SQL: it asks a `Store` for channel candidates with a `Filters`
applied *inside* the channel (prefiltering), so a filter can never drop a match that a
post-filter over a truncated list would have lost. A server-backed store (PostgreSQL +
pgvector) implements the same protocol; what each channel's scores mean is defined once,
for every backend, in `store.channels`. A backend's own upkeep (in-memory indexes, their
warm-up and snapshots) is not part of the protocol: `close` finishes it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Callable, ContextManager, Iterable, Iterator, Mapping, Protocol, Sequence

import numpy as np

from ..errors import InputError, StoreCorruptError, StoreError, WriteConflictError
from ..model import KINDS, Entry, Source
from ..validation import check_json_scalar, check_str, check_str_list, json_or_text, normalize_timestamp

# The version of the stored entry format (fields, lifecycle columns) every backend holds; the
# SQLite file's schema carries the same number, and an export records it.
SCHEMA_VERSION = "5"

# Metadata keys a JSON path can name as they are (`sql_filters`); a filter may name any key an
# entry can store ("user.id", "customer name"), the others are matched key by key.
METADATA_KEY = re.compile(r"[^\W][\w\-]{0,63}")

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
    # Lifecycle views, set by `Memory` from its own arguments (not filter keys): by default
    # a store call sees every row; search, list and count hide superseded entries and the
    # ones expired at `visible_at` (epoch seconds) unless asked not to.
    include_superseded: bool = True
    visible_at: float | None = None

    def is_empty(self) -> bool:
        return self == Filters()

    def matching_only(self) -> "Filters":
        """These filters without the lifecycle view (what `where_clause` keys its cache on)."""
        return dataclasses.replace(self, include_superseded=True, visible_at=None)

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
            try:
                out._set(key, value)
            except ValueError as exc:
                raise InputError(f"filter {key}: {exc}" if not str(exc).startswith("unknown filter") else str(exc)) \
                    from None
        bad = [k for k in out.kinds if k not in KINDS]
        if bad:
            raise InputError(f"filter kind must be one of {', '.join(KINDS)}, not {bad[0]!r}")
        return out

    def _set(self, key: Any, value: Any) -> None:
        plural = {"kind": "kinds", "kinds": "kinds", "person": "persons", "persons": "persons",
                  "entity": "entities", "entities": "entities", "keyword": "keywords", "keywords": "keywords"}
        if not isinstance(key, str):
            raise ValueError(f"unknown filter {key!r}; valid filters: {', '.join(FILTER_KEYS)}")
        if isinstance(value, str) and not value.strip() and not key.startswith("metadata"):
            # `--filter since=` would otherwise be no filter at all, silently
            raise ValueError("needs a value, not an empty string")
        if key in plural:
            values = [value] if isinstance(value, str) else value
            getattr(self, plural[key]).extend(check_str_list(values, "value"))
        elif key in ("since", "until"):
            if key == "until" and _is_bare_date(value):
                day = value.isoformat() if isinstance(value, date) else str(value).strip()
                normalize_timestamp(day, "value")  # a day that does not exist is named as given
                value = f"{day}T23:59:59"  # the whole day (times are kept to the second)
            setattr(self, key, normalize_timestamp(value, "value"))
        elif key in ("location", "topic", "doc_id", "path", "session_id", "turn_id", "speaker"):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)  # `--filter turn_id=3` or {"turn_id": 3} mean the text "3"
            setattr(self, key, check_str(value, "value"))
        elif key == "metadata" and isinstance(value, dict):
            for name, item in value.items():
                self._set_metadata(name, item)
        elif key.startswith("metadata."):
            self._set_metadata(key.split(".", 1)[1], value)
        else:
            raise ValueError(f"unknown filter {key!r}; valid filters: {', '.join(FILTER_KEYS)}")

    def _set_metadata(self, name: Any, value: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a metadata filter names its key: metadata.<key>, not {name!r:.60}")
        check_str(name, "metadata key")  # no lone surrogates
        self.metadata[name] = check_json_scalar(value, f"metadata.{name}")

    @staticmethod
    def parse_cli(pairs: Iterable[str]) -> "Filters":
        """Parse ``key=value`` strings from the command line; JSON scalars (3, true) keep their type."""
        data: dict[str, Any] = {}
        for pair in pairs:
            if "=" not in pair:
                raise InputError(f"a filter is key=value, not {pair!r:.80}")
            key, raw = pair.split("=", 1)
            value: Any = raw
            if key.startswith("metadata."):
                if isinstance(json_or_text(raw), (dict, list)):  # matched nothing, where the library refuses it
                    raise InputError(f"filter {key}: a metadata filter matches a string, number, true, false or "
                                     f"null, not a JSON {'object' if raw.lstrip().startswith('{') else 'list'} "
                                     f"(the text itself is {key}={json.dumps(raw)})")
                value = json_or_text(raw, scalars_only=True)
            if key in ("kind", "person", "entity", "keyword") and key in data:
                existing = data[key]
                data[key] = (existing if isinstance(existing, list) else [existing]) + [value]
            elif key in data and data[key] != value:  # the last one used to win silently
                raise InputError(f"filter {key} is given twice ({data[key]!r} and {value!r}); give it once")
            else:
                data[key] = value
        return Filters.parse(data)


@dataclass(frozen=True, slots=True)
class EntryTerms:
    """An entry's analysed terms, made once by the write path (`engramdb.writer`) and handed
    to the store with the entry, as its vector is: ``body`` from its text, ``tags`` from its
    keywords, persons, entities and topic (weighted `channels.TAG_WEIGHT` in BM25)."""

    body: tuple[str, ...]
    tags: tuple[str, ...]


def check_expected(expect: Mapping[str, Entry] | None, replaced: Mapping[str, str],
                   decode: Callable[[str], Entry]) -> None:
    """Inside a write transaction: each entry `expect` names must still be stored as it was read
    (`replaced` holds what the write just deleted, id -> stored JSON); else the write is rolled
    back with `WriteConflictError` (an update read before another writer's commit)."""
    for entry_id, entry in (expect or {}).items():
        old = replaced.get(entry_id)
        if old is None or decode(old) != entry:
            raise WriteConflictError(f"entry {entry_id} changed while this write was prepared; nothing was written")


class Store(Protocol):
    """What the pipeline and `Memory` need from storage. Rows are addressed by integer rowid
    (unique in the store, never reused, increasing in insertion order).

    ``location`` names the store in messages (a file path, a URL without its password).
    """

    location: str
    embedder_name: str | None

    def bind_embedder(self, name: str, dim: int) -> None: ...
    def recorded_embedder(self) -> str | None: ...
    def classify(self, entries: Sequence[Entry]) -> tuple[list[Entry], list[str], list[Entry]]: ...
    def upsert(self, namespace: str, entries: Sequence[Entry], vectors: np.ndarray | None,
               terms: Sequence[EntryTerms], replace: Sequence[str] = (), scope: Filters | None = None,
               keep: set[str] | None = None, actor: str | None = None, log: bool = True,
               expect: Mapping[str, Entry] | None = None,
               places: Mapping[str, int] | None = None, unique_turns: bool = False) -> tuple[int, int]: ...
    def get(self, namespace: str, ids: Sequence[str]) -> list[Entry]: ...
    def fetch(self, rowids: Sequence[int]) -> dict[int, Entry]: ...
    def stored_vectors(self, namespace: str, texts: dict[str, str]) -> dict[str, np.ndarray]: ...
    def history(self, namespace: str, entry_id: str) -> list[dict[str, Any]]: ...
    def expired_ids(self, namespace: str | None, at: float) -> list[tuple[str, str]]: ...
    def iter_entries(self, namespace: str | None) -> Iterator[tuple[Entry, int]]:
        """Every entry of `namespace` (None: all) in the store's order — rowid order: where
        `list` shows it, the tie-break of equal scores — with its place in its session's order
        for a copy (`batches.copy_place`), streamed from one snapshot. A copy that writes them in
        this order, with these `places`, keeps both orders."""
        ...
    def iter_history(self, namespace: str | None) -> Iterator[dict[str, Any]]: ...
    def restore_history(self, events: Sequence[dict[str, Any]]) -> int: ...
    def delete(self, namespace: str, ids: Sequence[str] | None = None, filters: Filters | None = None,
               actor: str | None = None, missing_ok: bool = False) -> int: ...
    def count(self, namespace: str | None = None, filters: Filters | None = None) -> int: ...
    def ids(self, namespace: str | None, filters: Filters) -> list[str]: ...
    def page(self, namespace: str, filters: Filters, *, newest_first: bool, limit: int,
             after: int | None = None) -> tuple[list[Entry], int | None]: ...
    def namespaces(self) -> dict[str, dict[str, int]]: ...
    def timeline(self, namespace: str, filters: Filters, field: str,
                 bucket: str) -> tuple[list[tuple[str, int]], int, str | None, str | None]: ...
    def sessions(self, namespace: str, filters: Filters, limit: int) -> list[dict[str, Any]]: ...
    def lexical(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def term_coverage(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, int]: ...
    def idf_mass(self, terms: Sequence[str]) -> float: ...
    def semantic(self, vector: np.ndarray, k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def symbolic(self, query: str, terms: Sequence[str], k: int, namespace: str | None, filters: Filters,
                 names: Sequence[tuple[str, str]] | None = None) -> list[tuple[int, float]]: ...
    def temporal(self, start: float, end: float, terms: Sequence[str], k: int, namespace: str | None,
                 filters: Filters) -> list[tuple[int, float]]: ...
    def dated(self, terms: Sequence[str], k: int, namespace: str | None, filters: Filters) -> list[tuple[int, float]]: ...
    def newest_timestamp(self, namespace: str | None) -> str | None: ...
    def match_names(self, namespace: str | None, text: str) -> list[tuple[str, str]]: ...
    def vectors_of(self, rowids: Sequence[int]) -> np.ndarray: ...
    def turn_neighbours(self, rowids: Sequence[int], span: int, namespace: str | None,
                        filters: Filters) -> dict[int, list[tuple[int, int]]]: ...
    def substring(self, patterns: Sequence[str], k: int, namespace: str | None,
                  filters: Filters) -> list[tuple[int, float]]: ...
    def stats(self) -> dict[str, Any]: ...
    def warm(self) -> None:
        """Load indexes and caches now rather than on the first searches (`engram serve` calls
        it in the background at start). Searches are right either way."""
        ...
    def bulk_load(self, rows: int) -> ContextManager[None]:
        """Writes of about `rows` entries follow (a migrate, a large import): the backend
        may defer index maintenance to the end. Searches stay correct meanwhile."""
        ...
    def close(self) -> None: ...


def _is_bare_date(value: Any) -> bool:
    """A day without a time ("2024-03-14", ISO's basic "20240314", or a `date`): `until` it
    means to that day's end."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return True
    if not isinstance(value, str):
        return False
    text = value.strip()
    return (len(text) == 10 and text[4] == "-" and text[7] == "-" and text.replace("-", "").isdigit()) or \
        (len(text) == 8 and text.isdigit())


def refuse_newer(version: object, location: str, current: str) -> None:
    """A store written by a newer Engram (its schema past `current`) is refused, on either
    backend: this version would migrate it "back" (SQLite: marking it older than it is) or write
    rows the newer one does not expect — on a shared PostgreSQL store, a teammate's older client."""
    try:
        newer = version is not None and int(str(version)) > int(current)
    except ValueError:
        newer = True  # not a number this version knows
    if newer:
        raise StoreError(f"store {location} was written by a newer Engram (schema {str(version)[:20]}; this one "
                         f"reads schema {current} and older): upgrade engramdb to use it")


def decode_entry(data: str) -> Entry:
    """An entry from the JSON a store's ``data`` column holds (written by `Entry.to_dict`). A
    row that is not an entry (edited by hand, damaged) is `StoreCorruptError` naming what is
    wrong: it was a raw TypeError ("unexpected keyword argument 'broken'") on both backends."""
    try:
        raw = json.loads(data)
        raw["source"] = Source.from_dict(raw.get("source"))
        return Entry(**raw)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StoreCorruptError(f"a stored entry cannot be read ({str(exc)[:160]}); restore the store from a "
                                "backup, or delete that entry") from None
