"""The records that cross a process boundary, as pydantic models with JSON Schemas.

The CLI's ``--json`` output is validated through these models (`to_wire`), and the servers
use the same ones, so "what `engram search --json` prints" and "what the HTTP API returns"
cannot drift apart. ``python -m engramdb.schema [NAME]`` (or ``engram schema``) prints the
JSON Schema of one model, or of all.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceModel(_Model):
    """Where an entry came from: only the fields that are set are present (``{}`` for none),
    in the CLI's ``--json``, over HTTP and MCP alike."""

    doc_id: str | None = None
    path: str | None = None
    chunk_index: int | None = Field(default=None, ge=0)
    heading_path: list[str] = Field(default_factory=list)
    session_id: str | None = None
    turn_id: str | None = None
    speaker: str | None = None


class EntryModel(_Model):
    """One stored entry, every field."""

    id: str
    namespace: str
    kind: Literal["fact", "turn", "chunk"]
    text: str
    timestamp: str | None = Field(None, description="ISO 8601, UTC: the event's time, or the start of its period")
    timestamp_end: str | None = Field(None, description="exclusive end of the period the entry is about")
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    location: str | None = None
    topic: str | None = None
    source: SourceModel = Field(default_factory=SourceModel)
    metadata: dict[str, Any] = Field(default_factory=dict)
    derived_from: list[str] = Field(default_factory=list, description="ids of the entries (turns) it came from")
    created_at: str | None = None
    expires_at: str | None = Field(None, description="out of search, list and count after this time")
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None


class ChannelEvidence(_Model):
    """How one recall channel saw a hit: its 1-based rank and raw score there."""

    rank: int = Field(ge=1)
    score: float


class ContextTurnModel(_Model):
    """A turn next to a turn hit in its session (``offset`` -1: just before, +1: just after)."""

    offset: int
    id: str
    speaker: str | None
    text: str
    timestamp: str | None


class HitModel(EntryModel):
    """A search result: the full entry, its final score and every channel's evidence; with
    ``context`` asked for, the neighbouring turns of a turn hit."""

    score: float
    channels: dict[str, ChannelEvidence]
    context: list[ContextTurnModel] | None = Field(None, description="present only when the search asked for context")


class TraceCandidateModel(_Model):
    """A candidate as an explained search's stage saw it (`--explain`)."""

    id: str | None
    score: float = Field(description="the stage's score (fuse: the fused, calibrated one)")
    channels: dict[str, ChannelEvidence]
    contributions: dict[str, float] | None = Field(
        None, description="fuse only: weighted fusion's terms (weight x normalised score per channel) and m, "
                          "their sum over the stage's divisor; learned fusion's largest feature contributions")


class TraceChannelModel(BaseModel):
    """One recall channel's work in the `recall` stage; a channel may add what it read (the
    text it embedded, its translations, the lexical evidence and weight scale)."""

    model_config = ConfigDict(extra="allow")

    n: int = Field(description="candidates it returned")
    k: int = Field(description="its depth")
    ms: float
    top_score: float | None = None
    queries: int | None = Field(None, description="semantic: how many texts it embedded")


class TraceStageModel(BaseModel):
    """One stage's record, in the order run. Every stage has `stage` and `ms`; a stage that
    did nothing says why in `skipped`; the other keys are the stage's own (docs/QUERIES.md,
    "The trace": plan's plan and time window, fuse's method, weights, calibration, divisor…)."""

    model_config = ConfigDict(extra="allow")

    stage: str
    ms: float | None = None
    skipped: str | None = None
    n: int | None = Field(None, description="candidates after the stage")
    candidates: list[TraceCandidateModel] | None = Field(None, description="with explain: the stage's first ones")
    channels: dict[str, TraceChannelModel] | None = Field(None, description="recall only")


class LLMCallModel(BaseModel):
    """One logical call to the configured LLM during the search (a client may say more)."""

    model_config = ConfigDict(extra="allow")

    purpose: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float | None
    ok: bool
    error: str | None = None


class TraceModel(BaseModel):
    """What a search did, stage by stage (`result.trace`, `--json`, `--explain`)."""

    model_config = ConfigDict(extra="allow")

    preset: str | None = None
    pipeline: list[str] = Field(default_factory=list, description="the preset's stages, in order")
    namespace: str | None = None
    filters: dict[str, Any] = Field(default_factory=dict)
    now: dict[str, str] | None = Field(None, description="the reference time relative questions were read against: "
                                                        "value (ISO 8601) and from (given, newest entry or clock)")
    stages: list[TraceStageModel]
    llm_calls: list[LLMCallModel] = Field(default_factory=list)
    total_ms: float | None = None


class SearchResultModel(_Model):
    query: str
    hits: list[HitModel]
    trace: TraceModel = Field(description="per-stage trace (docs/QUERIES.md, \"The trace\")")


class PageModel(_Model):
    """One page of a listing; pass ``next_cursor`` back for the next (null: the last page)."""

    results: list[EntryModel]
    next_cursor: str | None


class HistoryEventModel(_Model):
    id: str
    seq: int
    event: Literal["ADD", "UPDATE", "DELETE"]
    at: str
    actor: str | None
    old: EntryModel | None = Field(description="the entry before the change (null for ADD)")
    new: EntryModel | None = Field(description="the entry after the change (null for DELETE)")


class SkippedFileModel(BaseModel):
    """A note an import skipped (``skip_bad_files``) and why."""

    path: str = Field(description="the file's path under the folder imported")
    reason: str


class ImportReportModel(BaseModel):
    """What an import did. Every import reports ``path``, ``written`` and ``removed``; the
    other fields depend on what was imported: notes (``files``, ``entries``, ``unchanged``,
    ``skipped_files``), a JSONL of entries (``entries``, ``unchanged``), a conversation
    (``format``, ``sessions`` … ``llm``, ``skipped``) or an export (``format``, ``entries``,
    ``unchanged``, ``history``, ``history_restored``, ``namespaces``)."""

    model_config = ConfigDict(extra="allow")
    path: str
    written: int = Field(description="entries written: new, or changed")
    removed: int = Field(description="entries deleted because the import replaced them")
    format: str | None = Field(default=None, description="what was imported: export, locomo, turns or openai")
    files: int | None = Field(default=None, description="notes: files read")
    entries: int | None = Field(default=None, description="entries (chunks, JSONL lines, dump entries) read")
    unchanged: int | None = Field(default=None, description="entries already stored as they are")
    skipped_files: list[SkippedFileModel] | None = Field(
        default=None, description="notes, with skip_bad_files: files that are not text, left as they were")
    sessions: int | None = Field(default=None, description="conversations: sessions read")
    sessions_unchanged: int | None = None
    turns: int | None = Field(default=None, description="conversations: turns read")
    facts: int | None = Field(default=None, description="conversations: facts extracted")
    extractor: str | None = None
    failures: list[dict[str, Any]] | None = Field(
        default=None, description="conversations: extraction failures (the turns are kept)")
    llm: dict[str, Any] | None = None
    history: int | None = Field(default=None, description="export: history events read")
    history_restored: int | None = Field(default=None, description="export: history events added")
    namespaces: list[str] | None = Field(default=None, description="export: namespaces written into")
    skipped: dict[str, int] | None = Field(
        default=None, description="conversation imports: messages not stored as turns, by why (a role such as "
                                  "system or tool, or 'no text': tool calls only, or empty)")


class TurnReportModel(_Model):
    """What `add_turn` did (``engram add-turn --json``): ``turns`` is 0 for a retry of the
    session's latest turn, which writes nothing."""

    sessions: int
    sessions_unchanged: int
    turns: int
    facts: int
    written: int
    removed: int
    extractor: str | None
    failures: list[dict[str, Any]]
    llm: dict[str, Any] | None
    turn_id: str | None = Field(default=None, description="the turn's id in its session (give it as --turn-id to "
                                                          "correct the turn)")
    id: str | None = Field(default=None, description="the turn's entry id (engram get, engram history)")


class NamespaceModel(_Model):
    namespace: str
    count: int = Field(description="every stored entry, superseded and expired ones included")
    current: int = Field(description="the entries search and count see: not superseded, not expired")
    kinds: dict[str, int]


class TimelinePointModel(_Model):
    start: str = Field(description="the period's first day, YYYY-MM-DD (UTC)")
    count: int = Field(ge=1)


class TimelineModel(_Model):
    """Entry counts per period (`Memory.timeline`), oldest first; empty periods are left out."""

    field: Literal["created", "event"] = Field(description="created: when added; event: the entry's timestamp")
    bucket: Literal["day", "week", "month", "year"]
    first: str | None
    last: str | None
    undated: int = Field(ge=0, description="entries without an event time (field=event)")
    points: list[TimelinePointModel]


class SessionModel(_Model):
    """One conversation session (`Memory.sessions`): its entries are listed with filter session_id."""

    session_id: str
    turns: int
    facts: int
    count: int
    speakers: list[str]
    start: str | None
    end: str | None


class StatsModel(_Model):
    """The store (`Memory.stats`). Over HTTP an API key sees only its own namespaces: the
    store-wide ``path``, ``vectors`` and ``file_bytes`` are null for it."""

    path: str | None = Field(description="the store's file or URL (null for an API key)")
    count: int = Field(description="entries in the namespaces shown")
    namespaces: dict[str, dict[str, Any]]
    embedder: str | None
    dim: int | None
    vectors: int | None = Field(description="entries with a vector, store-wide (null for an API key)")
    schema_version: str | None
    file_bytes: int | None = Field(description="the store's size on disk, store-wide (null for an API key)")
    sqlite_version: str | None = None  # the SQLite backend's library version
    backend: str | None = None  # "postgres" for a PostgreSQL store (absent: SQLite)
    server_version: str | None = None  # the PostgreSQL server's version


MODELS: dict[str, type[BaseModel]] = {
    "entry": EntryModel, "hit": HitModel, "search_result": SearchResultModel, "page": PageModel,
    "history_event": HistoryEventModel, "import_report": ImportReportModel, "namespace": NamespaceModel,
    "stats": StatsModel, "timeline": TimelineModel, "session": SessionModel, "turn_report": TurnReportModel,
}


def to_wire(name: str, data: Any) -> Any:
    """`data` checked against model `name` and dumped as plain JSON (a list for a list)."""
    model = MODELS[name]
    # exclude_unset: the output keeps exactly the keys it was given (a source lists only
    # its set fields), checked and typed by the model.
    if isinstance(data, list):
        return [model.model_validate(item).model_dump(mode="json", exclude_unset=True) for item in data]
    return model.model_validate(data).model_dump(mode="json", exclude_unset=True)


def json_schema(name: str | None = None) -> dict[str, Any]:
    """The JSON Schema of one model, or ``{name: schema}`` of all."""
    if name is not None:
        if name not in MODELS:
            from .errors import InputError

            raise InputError(f"unknown schema {name!r}; choose one of {', '.join(MODELS)}")
        return MODELS[name].model_json_schema()
    return {key: model.model_json_schema() for key, model in MODELS.items()}


if __name__ == "__main__":  # pragma: no cover - exercised through `engram schema` in the tests
    print(json.dumps(json_schema(sys.argv[1] if len(sys.argv) > 1 else None), indent=2, ensure_ascii=False))
