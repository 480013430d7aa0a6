"""The HTTP API's request and response bodies (the records of `engram schema` aside), as
pydantic models: FastAPI validates requests with them and publishes their JSON Schemas in
``/openapi.json``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ..errors import InputError
from ..memory import MAX_K
from ..schema import EntryModel
from ..validation import shown


#: how many hits a search returns when it names no k (HTTP and MCP; a lower --max-k caps it)
DEFAULT_K = 10


def checked_k(k: Any, max_k: int | None) -> int:
    """A search's `k` against the limit that applies here: the server's ``--max-k`` (None:
    none), or the library's `MAX_K` when that is lower, so the message states the real one."""
    most = MAX_K if max_k is None else min(max_k, MAX_K)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= most:
        raise InputError(f"k must be an integer from 1 to {most} here, not {shown(k)}")
    return k


def _document_aliases(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Publish a field's other names (``q`` for ``query``; ``role`` and ``content`` for a turn's
    ``speaker`` and ``text``) in its JSON Schema: the server takes them, so a client generated
    from ``/openapi.json`` may send them (the schema named only the first and forbade the rest),
    and a required field is satisfied by any one of its names."""
    properties, required = schema.get("properties", {}), schema.get("required", [])
    choices: list[dict[str, Any]] = []
    for info in model.model_fields.values():
        alias = info.validation_alias
        names = [n for n in alias.choices if isinstance(n, str)] if isinstance(alias, AliasChoices) else []
        if len(names) < 2 or names[0] not in properties:
            continue
        main = names[0]
        for other in names[1:]:
            properties[other] = {key: value for key, value in properties[main].items() if key != "title"}
            properties[other]["description"] = f"another name for {main} (give one of {', '.join(names)})"
        # one name each, never two (the server refuses "query" and "q" together)
        choices.append({"not": {"anyOf": [{"required": [a, b]} for i, a in enumerate(names) for b in names[i + 1:]]}})
        if main in required:
            required.remove(main)
            choices.append({"anyOf": [{"required": [name]} for name in names]})
    if choices:
        schema["allOf"] = choices
    if not required:
        schema.pop("required", None)


class _Body(BaseModel):
    # Strict, as the library is: k = "3" or k = true is an error, not a 3 or a 1.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True,
                              json_schema_extra=_document_aliases)


class _Reply(BaseModel):
    # What the server sends is exactly this: a client may validate it strictly.
    model_config = ConfigDict(extra="forbid")


class AddRequest(_Body):
    """One entry (``text``, or ``entry`` with all fields) or a batch (``entries``)."""

    text: str | None = None
    entry: dict[str, Any] | None = None
    entries: list[str | dict[str, Any]] | None = None
    supersedes: list[str] | None = None
    expires_at: str | None = None
    actor: str | None = None


class AddResponse(BaseModel):
    results: list[EntryModel]


class SearchRequest(_Body):
    query: str | list[dict[str, Any]] = Field(
        validation_alias=AliasChoices("query", "q"),
        description="a question, the last few utterances ('User: … Assistant: …'), or chat messages "
                    "[{role, content}, …]")
    k: int = Field(DEFAULT_K, validation_alias=AliasChoices("k", "top_k", "limit"))

    @model_validator(mode="before")
    @classmethod
    def _one_name_each(cls, data: Any) -> Any:
        """`q` is another name for `query`, `top_k` and `limit` for `k`: one of each, not two."""
        if isinstance(data, dict):
            for names in (("query", "q"), ("k", "top_k", "limit")):
                given = [n for n in names if n in data]
                if len(given) > 1:
                    raise ValueError(f"give one of {' or '.join(names)}, not {' and '.join(given)}")
        return data
    filters: dict[str, Any] = Field(default_factory=dict)
    threshold: float | None = None
    preset: str | dict[str, Any] = "default"
    group_by: Literal["doc", "path", "session"] | None = None
    now: str | None = None
    explain: bool = False
    include_superseded: bool = False
    show_expired: bool = False
    context: int = Field(0, description="neighbouring turns per side for each turn hit (0-10)")


class UpdateRequest(_Body):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    persons: list[str] | None = None
    entities: list[str] | None = None
    keywords: list[str] | None = None
    location: str | None = None
    topic: str | None = None
    timestamp: str | None = None
    timestamp_end: str | None = None
    expires_at: str | None = None
    actor: str | None = None


class TurnIn(_Body):
    # A chat message's own fields are taken too ({"role", "content"}), as a conversation file's are.
    speaker: str = Field(validation_alias=AliasChoices("speaker", "role"))
    text: str = Field(validation_alias=AliasChoices("text", "content"))
    timestamp: str | None = None
    turn_id: str | None = None


class TurnsRequest(_Body):
    turns: list[TurnIn]
    extractor: Literal["offline", "llm", "none"] = "offline"
    actor: str | None = None


class TurnsResponse(_Reply):
    """What ``POST /v1/conversations/{session_id}/turns`` wrote (`add_turn` for each turn)."""

    session_id: str
    turns: int = Field(description="turns written: new ones, and ones a turn_id corrected in place")
    unchanged: int = Field(description="turns the session held already (a retry): nothing written for them")
    facts: int = Field(description="facts extracted from the turns written")
    written: int = Field(description="entries written, turns and facts")
    removed: int = Field(description="entries a corrected turn replaced: the old turn and its facts")
    turn_ids: list[str | None] = Field(description="each turn's id in the session, in the order sent: give it as "
                                                   "turn_id to correct that turn")
    ids: list[str | None] = Field(description="each turn's entry id, in the order sent (for GET /v1/memories/{id})")


class DeleteResponse(BaseModel):
    deleted: int


class HealthResponse(_Reply):
    """``GET /healthz`` while the server can read its store."""

    status: Literal["ok"]
    version: str
    max_k: int = Field(description="the largest k a search may ask for (`engram serve --max-k`)")


class ErrorBody(_Reply):
    code: str = Field(description="stable, for programs: bad_input, invalid_request, unauthorized, forbidden, "
                                  "not_found, read_only, model_mismatch, too_large, busy, store_unavailable, "
                                  "keys_unavailable, method_not_allowed, store_error, not_a_store")
    message: str = Field(description="one line, for people")


class ErrorResponse(_Reply):
    """Every error the API answers: ``{"error": {"code", "message"}}`` (docs/SERVER.md)."""

    error: ErrorBody
