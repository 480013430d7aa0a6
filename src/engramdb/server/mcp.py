"""Engram as an MCP server: memory tools for any MCP client, over stdio (`engram mcp`) or
streamable HTTP (mounted at ``/mcp`` by `engram serve`).

The namespace comes from the server's configuration (``--namespace``, stdio) or from the
request's API key (HTTP, resolved exactly as for the HTTP API), never from a tool argument a
model would have to invent. Each tool returns a short text for the model plus
structured content (ids, scores, timestamps, provenance) so it can cite and update what it
found. Engram's errors come back as tool errors with their one-line message.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Any, Callable, Literal, Sequence, get_type_hints

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ..errors import EngramError, InputError
from ..memory import Memory
from ..schema import NamespaceModel, SessionModel, TimelineModel, to_wire
from .auth import ApiError, authenticate, caller_of
from .keys import KeyStore
from .models import DEFAULT_K, checked_k

INSTRUCTIONS = (
    "Long-term memory. Call memory_search before answering questions about the user, past conversations or "
    "stored notes; call memory_add to remember a new fact (one self-contained sentence, names instead of "
    "pronouns, absolute dates). To correct a fact use memory_update (same id); when the world changed "
    "(a move, a new job) use memory_add with supersedes=[old id] so the old fact stays as history."
)


#: what memory_update's `clear` sets each field to: emptied, or no value (an expiry: never)
CLEARED: dict[str, Any] = {"metadata": {}, "persons": [], "entities": [], "keywords": [], "location": None,
                           "topic": None, "timestamp": None, "timestamp_end": None, "expires_at": None}
Clearable = Literal["metadata", "persons", "entities", "keywords", "location", "topic", "timestamp", "timestamp_end",
                    "expires_at"]


class NamespacesResult(BaseModel):
    """memory_namespaces: the namespaces this caller may use, as ``GET /v1/namespaces``."""

    model_config = ConfigDict(extra="forbid")
    namespaces: list[NamespaceModel]


class SessionsResult(BaseModel):
    """memory_sessions: the namespace's conversation sessions, as ``GET /v1/sessions``."""

    model_config = ConfigDict(extra="forbid")
    sessions: list[SessionModel]


def _engram_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (EngramError, ApiError) as exc:
            raise ToolError(str(exc)) from None
    return wrapper


def _compact(entry: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The fields a model needs to cite and update an entry."""
    out = {"id": entry["id"], "text": entry["text"], "kind": entry["kind"], "timestamp": entry.get("timestamp")}
    if score is not None:
        out["score"] = round(score, 4)
    for key in ("persons", "source", "derived_from", "expires_at", "superseded_by", "context"):
        if entry.get(key):
            out[key] = entry[key]
    return out


class EngramMCPServer(MCPServer):
    """The SDK's server, with argument mistakes reported as the HTTP API reports them: an
    argument a tool does not take is refused (not silently dropped), and a value of the wrong
    type is one line naming the argument, not pydantic's multi-line report."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, list[str]] = {}  # tool name -> the arguments it takes
        self.types: dict[str, dict[str, TypeAdapter[Any]]] = {}  # tool name -> argument -> its type, strict
        self.aliases: dict[str, list[tuple[str, ...]]] = {}  # tool name -> groups of names for one argument

    def register(self, name: str, fn: Callable[..., Any], aliases: Sequence[tuple[str, ...]] = ()) -> None:
        """Record the arguments tool `name` takes (its function's, without the context), their
        types, and which of them name the same thing (``query`` / ``q``)."""
        hints = get_type_hints(fn)
        self.arguments[name] = [p for p in inspect.signature(fn).parameters if p != "ctx"]
        self.types[name] = {p: TypeAdapter(hints[p]) for p in self.arguments[name] if p in hints}
        self.aliases[name] = list(aliases)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        takes = self.arguments.get(name)
        unknown = sorted(set(arguments or {}) - set(takes)) if takes is not None else []
        if unknown:
            raise ToolError(f"{name} takes no argument {unknown[0]!r} (it takes {', '.join(takes or [])})")
        # null is "not given", for every argument alike: a model (or a client that sends every
        # property, strict tool calling) sends null for the ones it does not mean.
        arguments = {key: value for key, value in (arguments or {}).items() if value is not None}
        for group in self.aliases.get(name, []):
            given = [a for a in group if (arguments or {}).get(a) is not None]
            if len(given) > 1:
                raise ToolError(f"{name}: {' and '.join(given)} name the same argument; give one")
        for argument, value in (arguments or {}).items():
            adapter = self.types.get(name, {}).get(argument)
            if adapter is None:
                continue
            try:  # strict, as the HTTP API: k=true or k="3" is a mistake, not 1 or 3
                adapter.validate_python(value, strict=True)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ToolError(f"{name}: {argument}: {first.get('msg', 'invalid')}") from None
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and cause.errors():
                first = cause.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise ToolError(f"{name}: {where}: {first.get('msg', 'invalid')}") from None
            raise


def build_server(memory: Memory, namespace: str = "default", keys: KeyStore | None = None,
                 max_k: int | None = None) -> EngramMCPServer:
    """The tools over `memory`. A call that arrives over HTTP acts in its key's namespace
    (`keys`, with the role each tool needs; on an open server the one its request names, else
    `namespace`); one over stdio in `namespace`. `max_k` caps a
    search's k as the HTTP API's ``--max-k`` does (None: the library's own limit)."""
    server = EngramMCPServer("engram", instructions=INSTRUCTIONS)

    def scope(ctx: Context, role: str, tool: str) -> str:
        request = ctx.request_context.request
        if request is None or keys is None:
            return namespace
        who = caller_of(keys, request.headers, request.query_params, namespace)
        who.require(role, tool)
        return who.namespace

    @server.tool(name="memory_search", structured_output=True, description=(
        "Find the stored memories most useful for a question or for the conversation so far (query: the question, "
        "the last few utterances as 'User: … Assistant: …', or the chat messages as a JSON array of role/content). "
        "Returns the best "
        "entries with their ids, scores (with the default preset: the chance each is relevant), times and sources. "
        "k: how many (default 10). context=1 adds the turn before and after each conversation-turn hit."))
    @_engram_errors
    def memory_search(ctx: Context, query: str | list[dict[str, Any]] | None = None, k: int | None = None,
                      q: str | None = None, top_k: int | None = None, limit: int | None = None,
                      filters: dict[str, Any] | None = None, now: str | None = None,
                      context: int = 0) -> dict[str, Any]:
        ns = scope(ctx, "read", "memory_search")
        # The SDK hands a JSON-array string over already parsed: the messages go back to the
        # text `Memory.search` reads them from (text.dialogue).
        text = json.dumps(query, ensure_ascii=False) if isinstance(query, list) else (query or q)
        if not text:
            raise InputError("give the question as query")
        size = checked_k(next((v for v in (k, top_k, limit) if v is not None), min(DEFAULT_K, max_k or DEFAULT_K)),
                         max_k)
        result = memory.search(text, k=size, filters=filters, now=now, namespace=ns, context=context)
        hits = [_compact(h.to_dict(), h.score) for h in result.hits]
        return {"hits": hits, "summary": "\n".join(f"[{h['id']}] ({h['score']}) {h['text']}" for h in hits)
                or "no memories found"}

    @server.tool(name="memory_add", structured_output=True, description=(
        "Remember a fact. Write it self-contained (names, not pronouns; absolute dates). supersedes: ids of stored "
        "facts this one replaces (they are kept as history, out of search). expires_at: ISO time it stops mattering."))
    @_engram_errors
    def memory_add(ctx: Context, text: str, persons: list[str] | None = None, keywords: list[str] | None = None,
                   timestamp: str | None = None, expires_at: str | None = None, supersedes: list[str] | None = None,
                   metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        ns = scope(ctx, "write", "memory_add")
        item = {"text": text, "persons": persons or [], "keywords": keywords or [], "timestamp": timestamp,
                "metadata": metadata or {}, "expires_at": expires_at}
        [entry_id] = memory.add([item], namespace=ns, supersedes=supersedes, actor="mcp")
        return {"id": entry_id, "entry": _compact(memory.get(entry_id, namespace=ns)[0].to_dict())}

    @server.tool(name="memory_list", structured_output=True,
                 description="Page through stored memories, newest first; pass next_cursor for the next page.")
    @_engram_errors
    def memory_list(ctx: Context, limit: int = 20, cursor: str | None = None,
                    filters: dict[str, Any] | None = None) -> dict[str, Any]:
        ns = scope(ctx, "read", "memory_list")
        page = memory.list(namespace=ns, limit=limit, cursor=cursor, filters=filters)
        return {"results": [_compact(e.to_dict()) for e in page.results], "next_cursor": page.next_cursor}

    @server.tool(name="memory_get", structured_output=True, description="Read stored memories by id, every field.")
    @_engram_errors
    def memory_get(ctx: Context, ids: list[str] | None = None, id: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, "read", "memory_get")
        wanted = list(ids or []) + ([id] if id else [])
        if not wanted:
            raise InputError("give ids")
        found = memory.get(wanted, namespace=ns)
        return {"entries": [e.to_dict() for e in found], "missing": sorted(set(wanted) - {e.id for e in found})}

    @server.tool(name="memory_update", structured_output=True, description=(
        "Correct a stored memory in place (same id); the old version stays in its history. Pass only what changes: "
        "a field left out (or null) stays as it is; metadata and lists are replaced whole. clear: fields to empty, "
        "e.g. [\"expires_at\"] so it never expires, [\"persons\", \"metadata\"] to drop its tags."))
    @_engram_errors
    def memory_update(ctx: Context, id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
                      persons: list[str] | None = None, entities: list[str] | None = None,
                      keywords: list[str] | None = None, location: str | None = None, topic: str | None = None,
                      timestamp: str | None = None, timestamp_end: str | None = None, expires_at: str | None = None,
                      clear: list[Clearable] | None = None) -> dict[str, Any]:
        ns = scope(ctx, "write", "memory_update")
        # null is "not given" (a model may send every argument, null for those it does not
        # mean); emptying a field is asked for by name in `clear`.
        given = {k: v for k, v in {"text": text, "metadata": metadata, "persons": persons, "entities": entities,
                                   "keywords": keywords, "location": location, "topic": topic,
                                   "timestamp": timestamp, "timestamp_end": timestamp_end,
                                   "expires_at": expires_at}.items() if v is not None}
        twice = [name for name in dict.fromkeys(clear or []) if name in given]
        if twice:
            raise InputError(f"{twice[0]} is given and cleared; give one or the other")
        changes = given | {name: CLEARED[name] for name in clear or []}
        return {"entry": _compact(memory.update(id, namespace=ns, actor="mcp", **changes).to_dict())}

    @server.tool(name="memory_delete", structured_output=True,
                 description="Forget a stored memory by id (its history stays readable).")
    @_engram_errors
    def memory_delete(ctx: Context, id: str) -> dict[str, Any]:
        ns = scope(ctx, "write", "memory_delete")
        return {"deleted": memory.delete(id, namespace=ns, actor="mcp")}

    @server.tool(name="memory_history", structured_output=True,
                 description="Every version of a memory, oldest first: ADD, UPDATE and DELETE events.")
    @_engram_errors
    def memory_history(ctx: Context, id: str) -> dict[str, Any]:
        ns = scope(ctx, "read", "memory_history")
        events = memory.history(id, namespace=ns)
        return {"events": [{"event": e.event, "at": e.at, "actor": e.actor, "text": version.text if version else None}
                           for e in events for version in [e.new or e.old]]}

    @server.tool(name="memory_add_turn", structured_output=True, description=(
        "Record one conversation turn (speaker and text) in a session; facts are distilled from it."))
    @_engram_errors
    def memory_add_turn(ctx: Context, speaker: str, text: str, session_id: str,
                        timestamp: str | None = None) -> dict[str, Any]:
        ns = scope(ctx, "write", "memory_add_turn")
        report = memory.add_turn(speaker, text, session_id=session_id, timestamp=timestamp, namespace=ns)
        return {"facts": report.facts, "written": report.written}

    @server.tool(name="memory_namespaces", structured_output=True, description=(
        "The memory's namespaces this connection may use, each with its entry count (every stored entry), "
        "current (what search sees: not superseded, not expired) and counts per kind (fact, turn, chunk)."))
    @_engram_errors
    def memory_namespaces(ctx: Context) -> NamespacesResult:
        request = ctx.request_context.request
        if request is None or keys is None:  # stdio: the one namespace this server is bound to
            allowed: list[str] | None = [namespace]
        else:  # as GET /v1/namespaces: a key's own namespaces, whatever its role; all on an open server
            key = authenticate(keys, request.headers)
            allowed = None if key is None else key.namespaces
        rows = [r for r in memory.namespaces() if allowed is None or r["namespace"] in allowed]
        return NamespacesResult.model_validate({"namespaces": to_wire("namespace", rows)})

    @server.tool(name="memory_sessions", structured_output=True, description=(
        "The stored conversation sessions, most recently written first: each session_id with its turns, facts, "
        "speakers and its first and last time. memory_list with filters={\"session_id\": …} lists one's entries."))
    @_engram_errors
    def memory_sessions(ctx: Context, limit: int = 100) -> SessionsResult:
        ns = scope(ctx, "read", "memory_sessions")
        return SessionsResult.model_validate({"sessions": to_wire("session", memory.sessions(namespace=ns,
                                                                                           limit=limit))})

    @server.tool(name="memory_timeline", structured_output=True, description=(
        "How many memories there are per day, week, month or year (bucket; auto picks one for the span): by when "
        "they were added (field=created) or by the time they are about (field=event; undated counts those "
        "without one). filters as for memory_list."))
    @_engram_errors
    def memory_timeline(ctx: Context, field: Literal["created", "event"] = "created",
                        bucket: Literal["auto", "day", "week", "month", "year"] = "auto",
                        filters: dict[str, Any] | None = None, include_superseded: bool = False,
                        show_expired: bool = False) -> TimelineModel:
        ns = scope(ctx, "read", "memory_timeline")
        return TimelineModel.model_validate(to_wire("timeline", memory.timeline(
            namespace=ns, filters=filters, field=field, bucket=bucket, include_superseded=include_superseded,
            show_expired=show_expired)))

    for tool in (memory_search, memory_add, memory_list, memory_get, memory_update, memory_delete, memory_history,
                 memory_add_turn, memory_namespaces, memory_sessions, memory_timeline):
        server.register(tool.__name__, tool, aliases=[("query", "q"), ("k", "top_k", "limit")]
                        if tool is memory_search else ())
    return server
