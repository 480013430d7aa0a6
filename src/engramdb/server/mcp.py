"""Engram as an MCP server: memory tools for any MCP client, over stdio (`engram mcp`) or
streamable HTTP (mounted at ``/mcp`` by `engram serve`).

The namespace comes from the server's configuration (``--namespace``, stdio) or from the
request's API key (HTTP, resolved exactly as for the HTTP API), never from a tool argument a
model would have to invent. Each tool declares its arguments (each described) and its output
schema; it returns a short, readable text for the model plus structured content (ids, scores,
timestamps, provenance) matching that schema, so it can cite and update what it found.
Engram's errors come back as tool errors with their one-line message.
"""

from __future__ import annotations

import functools
import inspect
from typing import Annotated, Any, Callable, Literal, Sequence, get_type_hints

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..errors import EngramError, InputError
from ..memory import Memory
from ..schema import ContextTurnModel, EntryModel, NamespaceModel, SessionModel, SourceModel, TimelineModel, to_wire
from .auth import ApiError, authenticate, caller_of, namespaces_seen
from .keys import KeyStore
from .messages import told
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

#: other names a lenient client may send for an argument (tool -> alias -> the argument): accepted,
#: never published in the schema, so a model sees one name for each thing
ALIASES: dict[str, dict[str, str]] = {"memory_search": {"q": "query", "top_k": "k", "limit": "k"}}
#: arguments a tool needs whose signature default is only there for an alias to stand in
REQUIRED: dict[str, tuple[str, ...]] = {"memory_search": ("query",)}

ISO = "ISO 8601 date or time, e.g. 2024-03-14 or 2024-03-14T10:00:00+01:00"

# -- the arguments, described for a model ------------------------------------------------------

FilterArg = Annotated[dict[str, Any] | None, Field(description=(
    "Hard constraints, all of which must hold: kind ('fact', 'turn' or 'chunk', or a list), person, entity, "
    "keyword (a name or a list: any of them), location, topic, since and until (" + ISO + "; until a bare date "
    "takes the whole day), doc_id, path (a note's file), session_id, turn_id, speaker (a conversation's), "
    "metadata.<key> (a stored metadata value; or metadata: {key: value}). "
    "E.g. {\"person\": \"Alice\", \"since\": \"2024-01-01\", \"kind\": \"fact\"}."))]
Query = Annotated[str | list[dict[str, Any]] | None, Field(description=(
    "What to find: a question, the last few utterances as 'User: … Assistant: …', or the chat messages as a "
    "list of {role, content}."))]
K = Annotated[int | None, Field(description=f"How many hits, 1 to the server's limit (default {DEFAULT_K}).")]
Now = Annotated[str | None, Field(description=(
    f"The time relative words ('yesterday', 'last week') are read against, {ISO}; default: the newest entry's "
    "time in the namespace that is not after the clock (a conversation's own present), else the clock. Give the "
    "current time to read them against today."))]
ContextTurns = Annotated[int | None, Field(description=(
    "For each conversation-turn hit, this many neighbouring turns before and after it, 0 to 10 (default 0)."))]
EntryId = Annotated[str, Field(description="The memory's id, as a search, list or add returned it.")]
Text = Annotated[str, Field(description="The fact: one self-contained sentence (names, not pronouns; absolute "
                                        "dates).")]
Names = Annotated[list[str] | None, Field(description="People it is about, by name.")]
Keywords = Annotated[list[str] | None, Field(description="Words it should be found by.")]
Timestamp = Annotated[str | None, Field(description=f"When it happened or holds from, {ISO}.")]
Expires = Annotated[str | None, Field(description=f"When it stops mattering ({ISO}); it then leaves search.")]
Supersedes = Annotated[list[str] | None, Field(description=(
    "Ids of stored facts this one replaces (the world changed): they stay as history, out of search."))]
Metadata = Annotated[dict[str, Any] | None, Field(description=(
    "Tags of your own, key to a string, number or boolean; filter on them with metadata.<key>."))]
Limit = Annotated[int | None, Field(description="How many per page, 1 to 1000 (default 20).")]
Cursor = Annotated[str | None, Field(description="A page's next_cursor, as it is, for the next page.")]


class _Out(BaseModel):
    # What a tool sends is exactly this: a client may validate it strictly.
    model_config = ConfigDict(extra="forbid")


class CompactEntry(_Out):
    """A memory as a model needs it to cite and update it; a field only when it is set."""

    id: str
    text: str
    kind: Literal["fact", "turn", "chunk"]
    timestamp: str | None = Field(None, description="ISO 8601, UTC: the time it is about")
    score: float | None = Field(None, description="search only: with the default preset, the chance it is relevant")
    persons: list[str] | None = None
    source: SourceModel | None = Field(None, description="where it came from: a note's file and heading, a "
                                                         "conversation's session, turn and speaker")
    derived_from: list[str] | None = Field(None, description="a fact: the ids of the turns it came from")
    expires_at: str | None = None
    superseded_by: str | None = None
    context: list[ContextTurnModel] | None = Field(None, description="with context: the neighbouring turns")


class SearchResult(_Out):
    """memory_search: the best memories for the query, best first."""

    hits: list[CompactEntry]


class AddResult(_Out):
    """memory_add: the stored memory."""

    id: str
    entry: CompactEntry


class ListResult(_Out):
    """memory_list: a page of memories, newest first."""

    results: list[CompactEntry]
    next_cursor: str | None = Field(description="pass it as cursor for the next page; null on the last")


class GetResult(_Out):
    """memory_get: the memories found, every field, and the ids this namespace does not hold."""

    entries: list[EntryModel]
    missing: list[str]


class UpdateResult(_Out):
    """memory_update: the memory as it now is."""

    entry: CompactEntry


class DeleteResult(_Out):
    """memory_delete: how many memories were deleted (1)."""

    deleted: int


class HistoryEvent(_Out):
    event: Literal["ADD", "UPDATE", "DELETE"]
    at: str
    actor: str | None
    text: str | None = Field(description="the memory's text after the event (before it, for DELETE)")


class HistoryResult(_Out):
    """memory_history: every version of a memory, oldest first."""

    events: list[HistoryEvent]


class AddTurnResult(_Out):
    """memory_add_turn: the turn and what was written (``POST /v1/conversations/{session}/turns``'s counts)."""

    session_id: str
    turn_id: str | None = Field(description="the turn's id within its session: give it as turn_id to correct it")
    id: str | None = Field(description="the turn's memory id (for memory_get, memory_history)")
    turns: int = Field(description="1 when the turn was written (new, or corrected in place by its turn_id)")
    unchanged: int = Field(description="1 when the session held the turn already (a retry): nothing written")
    facts: int = Field(description="facts extracted from the turn")
    written: int = Field(description="entries written, the turn and its facts")
    removed: int = Field(description="entries a corrected turn replaced: the old turn and its facts")


class NamespacesResult(_Out):
    """memory_namespaces: the namespaces this caller may use, as ``GET /v1/namespaces``."""

    namespaces: list[NamespaceModel]


class SessionsResult(_Out):
    """memory_sessions: the namespace's conversation sessions, as ``GET /v1/sessions``."""

    sessions: list[SessionModel]


def reply(data: BaseModel, text: str) -> CallToolResult:
    """A tool's result: a short text for the model, the data as structured content (the keys it
    was given, so a field that is not set is left out rather than sent as null)."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data.model_dump(mode="json", exclude_unset=True))


def _engram_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EngramError as exc:
            raise ToolError(told(exc)) from None
        except ApiError as exc:
            raise ToolError(str(exc)) from None
    return wrapper


def _compact(entry: dict[str, Any], score: float | None = None) -> CompactEntry:
    """The fields a model needs to cite and update an entry."""
    out = {"id": entry["id"], "text": entry["text"], "kind": entry["kind"], "timestamp": entry.get("timestamp")}
    if score is not None:
        out["score"] = round(score, 6)  # as the CLI's --json and the HTTP API: near-ties stay apart
    for key in ("persons", "source", "derived_from", "expires_at", "superseded_by", "context"):
        if entry.get(key):
            out[key] = entry[key]
    return CompactEntry.model_validate(out)


def _short(text: str, most: int = 300) -> str:
    """One line of at most `most` characters."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[:most - 1] + "…"


def _lines(entries: Sequence[CompactEntry | EntryModel]) -> str:
    """One line per memory: its id, score and date when it has them, and its text."""
    out = []
    for e in entries:
        score = getattr(e, "score", None)
        about = ", ".join(x for x in (f"{score:.2f}" if score is not None else "", (e.timestamp or "")[:10]) if x)
        out.append(f"[{e.id}]{f' ({about})' if about else ''} {_short(e.text)}")
    return "\n".join(out)


def _count(n: int, what: str) -> str:
    """``1 memory``, ``2 memories``, ``3 facts``."""
    return f"{n} {what if n == 1 else what[:-1] + 'ies' if what.endswith('y') else what + 's'}"


class EngramMCPServer(MCPServer):
    """The SDK's server, with argument mistakes reported as the HTTP API reports them: an
    argument a tool does not take is refused (not silently dropped), a value of the wrong type
    is one line naming the argument, not pydantic's multi-line report, and every error reads
    ``<tool>: <message>``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, list[str]] = {}  # tool name -> the arguments it takes
        self.types: dict[str, dict[str, TypeAdapter[Any]]] = {}  # tool name -> argument -> its type, strict
        self.aliases: dict[str, dict[str, str]] = {}  # tool name -> another name -> the argument it names

    def register(self, name: str, fn: Callable[..., Any], aliases: dict[str, str] | None = None) -> None:
        """Record the arguments tool `name` takes (its function's, without the context), their
        types, and the other names a lenient client may send for some (``q`` for ``query``)."""
        hints = get_type_hints(fn)
        self.arguments[name] = [p for p in inspect.signature(fn).parameters if p != "ctx"]
        self.types[name] = {p: TypeAdapter(hints[p]) for p in self.arguments[name] if p in hints}
        self.aliases[name] = dict(aliases or {})

    async def list_tools(self) -> list[Any]:
        """The SDK's list, with the arguments a tool cannot do without marked required: `query`
        has a default only so that its other name (`q`) may stand for it, so the schema did not
        say a search needs one."""
        tools = await super().list_tools()
        for tool in tools:
            needed = [a for a in REQUIRED.get(tool.name, ()) if a in tool.input_schema.get("properties", {})]
            if needed:
                tool.input_schema["required"] = sorted({*tool.input_schema.get("required", []), *needed})
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        takes = self.arguments.get(name)
        aliases = self.aliases.get(name, {})
        unknown = sorted(set(arguments or {}) - set(takes) - set(aliases)) if takes is not None else []
        if unknown:
            raise ToolError(f"{name}: no argument {unknown[0]!r}; " +
                            (f"it takes {', '.join(takes)}" if takes else "it takes no arguments"))
        # null is "not given", for every argument alike: a model (or a client that sends every
        # property, strict tool calling) sends null for the ones it does not mean.
        arguments = {key: value for key, value in (arguments or {}).items() if value is not None}
        for argument, value in arguments.items():  # named as the client named it
            adapter = self.types.get(name, {}).get(aliases.get(argument, argument))
            if adapter is None:
                continue
            try:  # strict, as the HTTP API: k=true or k="3" is a mistake, not 1 or 3
                adapter.validate_python(value, strict=True)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ToolError(f"{name}: {argument}: {first.get('msg', 'invalid')}") from None
        for canonical in dict.fromkeys(aliases.values()):
            given = [a for a in (canonical, *(a for a, c in aliases.items() if c == canonical)) if a in arguments]
            if len(given) > 1:
                raise ToolError(f"{name}: {' and '.join(given)} name the same argument; give one")
            if given and given[0] != canonical:
                arguments[canonical] = arguments.pop(given[0])
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and cause.errors():
                first = cause.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                said = "required, and not given" if first.get("type") == "missing" else first.get("msg", "invalid")
                raise ToolError(f"{name}: {where}: {said}") from None
            wrapped = f"Error executing tool {name}: "  # the SDK's prefix: one prefix for every error
            if str(exc).startswith(wrapped):
                raise type(exc)(f"{name}: {str(exc)[len(wrapped):]}") from exc.__cause__
            raise


def build_server(memory: Memory, namespace: str = "default", keys: KeyStore | None = None,
                 max_k: int | None = None) -> EngramMCPServer:
    """The tools over `memory`. A call that arrives over HTTP acts in its key's namespace
    (`keys`, with the role each tool needs; on an open server the one its request names, else
    `namespace`); one over stdio in `namespace`. `max_k` caps a search's k as the HTTP API's
    ``--max-k`` does (None: the library's own limit)."""
    server = EngramMCPServer("engram", instructions=INSTRUCTIONS)

    def scope(ctx: Context, role: str, tool: str) -> str:
        request = ctx.request_context.request
        if request is None or keys is None:
            return namespace
        who = caller_of(keys, request.headers, request.query_params, namespace)
        who.require(role, tool)
        return who.namespace

    @server.tool(name="memory_search", description=(
        "Find the stored memories most useful for a question or for the conversation so far. Returns the best "
        "entries with their ids, scores (with the default preset: the chance each is relevant), times and sources."))
    @_engram_errors
    def memory_search(ctx: Context, query: Query = None, k: K = None, filters: FilterArg = None, now: Now = None,
                      context: ContextTurns = None) -> Annotated[CallToolResult, SearchResult]:
        ns = scope(ctx, "read", "memory_search")
        # The SDK hands a JSON-array string over already parsed: `Memory.search` takes the messages.
        if not query:  # none, "" or []
            raise InputError("give the question as query")
        size = checked_k(k if k is not None else min(DEFAULT_K, max_k or DEFAULT_K), max_k)
        result = memory.search(query, k=size, filters=filters, now=now, namespace=ns, context=context or 0)
        found = SearchResult(hits=[_compact(h.to_dict(), h.score) for h in result.hits])
        return reply(found, f"{_count(len(found.hits), 'memory')} found, best first:\n{_lines(found.hits)}"
                     if found.hits else "no memories found")

    @server.tool(name="memory_add", description=(
        "Remember a fact. Write it self-contained (names, not pronouns; absolute dates). To record that the world "
        "changed (a move, a new job), give the old fact's id in supersedes."))
    @_engram_errors
    def memory_add(ctx: Context, text: Text, persons: Names = None, keywords: Keywords = None,
                   timestamp: Timestamp = None, expires_at: Expires = None, supersedes: Supersedes = None,
                   metadata: Metadata = None) -> Annotated[CallToolResult, AddResult]:
        ns = scope(ctx, "write", "memory_add")
        item = {"text": text, "persons": persons or [], "keywords": keywords or [], "timestamp": timestamp,
                "metadata": metadata or {}, "expires_at": expires_at}
        [entry_id] = memory.add([item], namespace=ns, supersedes=supersedes, actor="mcp")
        entry = _compact(memory.get(entry_id, namespace=ns)[0].to_dict())
        replaced = f" (superseding {', '.join(supersedes)})" if supersedes else ""
        return reply(AddResult(id=entry_id, entry=entry), f"remembered [{entry_id}]{replaced}: {_short(entry.text)}")

    @server.tool(name="memory_list", description=(
        "Page through stored memories, newest first; pass next_cursor as cursor for the next page."))
    @_engram_errors
    def memory_list(ctx: Context, limit: Limit = None, cursor: Cursor = None,
                    filters: FilterArg = None) -> Annotated[CallToolResult, ListResult]:
        ns = scope(ctx, "read", "memory_list")
        page = memory.list(namespace=ns, limit=20 if limit is None else limit, cursor=cursor, filters=filters)
        listed = ListResult(results=[_compact(e.to_dict()) for e in page.results], next_cursor=page.next_cursor)
        more = "; more with cursor=next_cursor" if page.next_cursor else ""
        return reply(listed, f"{_count(len(listed.results), 'memory')}{more}" +
                     (f":\n{_lines(listed.results)}" if listed.results else ""))

    @server.tool(name="memory_get", description="Read stored memories by id, with every field.")
    @_engram_errors
    def memory_get(ctx: Context, ids: Annotated[list[str] | None, Field(description="The ids to read.")] = None,
                   id: Annotated[str | None, Field(description="One id to read (or give ids).")] = None
                   ) -> Annotated[CallToolResult, GetResult]:
        ns = scope(ctx, "read", "memory_get")
        if ids is not None and id is not None:  # as memory_search's query and q: one argument, two names
            raise InputError("ids and id name the same argument; give one")
        wanted = list(ids or []) + ([id] if id else [])
        if not wanted:
            raise InputError("give ids (or id)")
        found = memory.get(wanted, namespace=ns)
        got = GetResult(entries=to_wire("entry", [e.to_dict() for e in found]),
                        missing=sorted(set(wanted) - {e.id for e in found}))
        missing = f"\nnot found: {', '.join(got.missing)}" if got.missing else ""
        return reply(got, f"{_count(len(got.entries), 'memory')}" + (f":\n{_lines(got.entries)}" if got.entries
                                                                     else "") + missing)

    @server.tool(name="memory_update", description=(
        "Correct a stored memory in place (same id); the old version stays in its history. Pass only what changes: "
        "a field left out (or null) stays as it is; metadata and lists are replaced whole. clear: fields to empty, "
        "e.g. [\"expires_at\"] so it never expires, [\"persons\", \"metadata\"] to drop its tags."))
    @_engram_errors
    def memory_update(ctx: Context, id: EntryId,
                      text: Annotated[str | None, Field(description="The corrected text.")] = None,
                      metadata: Metadata = None, persons: Names = None,
                      entities: Annotated[list[str] | None, Field(description="Things it is about, by name.")] = None,
                      keywords: Keywords = None,
                      location: Annotated[str | None, Field(description="Where it happened.")] = None,
                      topic: Annotated[str | None, Field(description="What it is about, in a word or two.")] = None,
                      timestamp: Timestamp = None,
                      timestamp_end: Annotated[str | None, Field(description=(
                          f"The end of the period it is about (exclusive), {ISO}."))] = None,
                      expires_at: Expires = None,
                      clear: Annotated[list[Clearable] | None, Field(description=(
                          "Fields to empty (lists, metadata) or unset (an expiry: never expires)."))] = None
                      ) -> Annotated[CallToolResult, UpdateResult]:
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
        entry = _compact(memory.update(id, namespace=ns, actor="mcp", **changes).to_dict())
        changed = ", ".join(dict.fromkeys([*given, *(clear or [])])) or "nothing"
        return reply(UpdateResult(entry=entry), f"updated [{entry.id}] ({changed}): {_short(entry.text)}")

    @server.tool(name="memory_delete", description="Forget a stored memory by id (its history stays readable).")
    @_engram_errors
    def memory_delete(ctx: Context, id: EntryId) -> Annotated[CallToolResult, DeleteResult]:
        ns = scope(ctx, "write", "memory_delete")
        deleted = memory.delete(id, namespace=ns, actor="mcp")
        return reply(DeleteResult(deleted=deleted), f"deleted [{id}]")

    @server.tool(name="memory_history", description=(
        "Every version of a memory, oldest first: ADD, UPDATE and DELETE events."))
    @_engram_errors
    def memory_history(ctx: Context, id: EntryId) -> Annotated[CallToolResult, HistoryResult]:
        ns = scope(ctx, "read", "memory_history")
        events = HistoryResult(events=[
            HistoryEvent.model_validate({"event": e.event, "at": e.at, "actor": e.actor,
                                         "text": version.text if version else None})
            for e in memory.history(id, namespace=ns) for version in [e.new or e.old]])
        lines = [f"{e.event} {e.at}{f' by {e.actor}' if e.actor else ''}: {_short(e.text or '', 120)}"
                 for e in events.events]
        return reply(events, f"{_count(len(lines), 'event')} for [{id}], oldest first:\n" + "\n".join(lines))

    @server.tool(name="memory_add_turn", description=(
        "Record one conversation turn (who said what) in a session; facts are distilled from it. Returns the "
        "turn's turn_id; to correct a turn, send it again with that turn_id and the new text. Sending the same "
        "turn twice (a retry) stores it once."))
    @_engram_errors
    def memory_add_turn(ctx: Context, speaker: Annotated[str, Field(description="Who said it, by name.")],
                        text: Annotated[str, Field(description="What they said.")],
                        session_id: Annotated[str, Field(description=(
                            "The conversation it belongs to (any name you keep using for it)."))],
                        timestamp: Annotated[str | None, Field(description=(
                            f"When it was said, {ISO}; default: now."))] = None,
                        turn_id: Annotated[str | None, Field(description=(
                            "This turn's id in the session: new turns get one (returned); give one the session "
                            "holds to correct that turn, or to make a retry safe."))] = None
                        ) -> Annotated[CallToolResult, AddTurnResult]:
        ns = scope(ctx, "write", "memory_add_turn")
        for name, value in (("speaker", speaker), ("text", text), ("session_id", session_id)):
            if not value.strip():
                raise InputError(f"{name} must be a non-empty string")
        report = memory.add_turn(speaker, text, session_id=session_id, timestamp=timestamp, turn_id=turn_id,
                                 namespace=ns, actor="mcp")
        unchanged = 1 if not report.turns or report.sessions_unchanged else 0
        result = AddTurnResult(session_id=session_id, turn_id=report.turn_id, id=report.id,
                               turns=1 - unchanged, unchanged=unchanged,
                               facts=report.facts, written=report.written, removed=report.removed)
        what = "stored already (a retry): nothing written" if unchanged else \
            f"recorded{' (corrected)' if report.removed else ''}, {_count(report.facts, 'fact')} extracted"
        return reply(result, f"turn {result.turn_id} of session {session_id!r} [{result.id}] {what}")

    @server.tool(name="memory_namespaces", description=(
        "The memory's namespaces this connection may use, each with its entry count (every stored entry), "
        "current (what search sees: not superseded, not expired) and counts per kind (fact, turn, chunk)."))
    @_engram_errors
    def memory_namespaces(ctx: Context) -> Annotated[CallToolResult, NamespacesResult]:
        request = ctx.request_context.request
        if request is None or keys is None:  # stdio: the one namespace this server is bound to
            allowed: list[str] | None = [namespace]
        else:  # as GET /v1/namespaces: a key's own namespaces, whatever its role; all on an open server
            key = authenticate(keys, request.headers)
            allowed = None if key is None else key.namespaces
        rows = namespaces_seen(memory.namespaces(), allowed)
        result = NamespacesResult.model_validate({"namespaces": to_wire("namespace", rows)})
        return reply(result, "\n".join(f"{n.namespace}: {_count(n.count, 'entry')} "
                                       f"({n.current} current)" for n in result.namespaces) or "no namespaces yet")

    @server.tool(name="memory_sessions", description=(
        "The stored conversation sessions, most recently written first: each session_id with its turns, facts, "
        "speakers and its first and last time. memory_list with filters={\"session_id\": …} lists one's entries."))
    @_engram_errors
    def memory_sessions(ctx: Context, limit: Annotated[int | None, Field(description=(
            "How many sessions, 1 to 1000 (default 100)."))] = None) -> Annotated[CallToolResult, SessionsResult]:
        ns = scope(ctx, "read", "memory_sessions")
        result = SessionsResult.model_validate({"sessions": to_wire("session", memory.sessions(
            namespace=ns, limit=100 if limit is None else limit))})
        lines = []
        for one in result.sessions:
            said = f"; {', '.join(one.speakers)}" if one.speakers else ""
            when = f", {(one.start or '')[:10]} to {(one.end or '')[:10]}" if one.start else ""
            lines.append(f"{one.session_id}: {_count(one.turns, 'turn')}, {_count(one.facts, 'fact')}{said}{when}")
        return reply(result, "\n".join(lines) or "no sessions")

    @server.tool(name="memory_timeline", description=(
        "How many memories there are per day, week, month or year (bucket; auto picks one for the span): by when "
        "they were added (field=created) or by the time they are about (field=event; undated counts those "
        "without one). filters as for memory_list."))
    @_engram_errors
    def memory_timeline(ctx: Context, field: Annotated[Literal["created", "event"] | None, Field(description=(
                            "created (default): when they were added; event: the time they are about."))] = None,
                        bucket: Annotated[Literal["auto", "day", "week", "month", "year"] | None, Field(
                            description="The period counted (default auto: one that suits the span).")] = None,
                        filters: FilterArg = None,
                        include_superseded: Annotated[bool | None, Field(description=(
                            "Count superseded memories too (default false)."))] = None,
                        show_expired: Annotated[bool | None, Field(description=(
                            "Count expired memories too (default false)."))] = None
                        ) -> Annotated[CallToolResult, TimelineModel]:
        ns = scope(ctx, "read", "memory_timeline")
        result = TimelineModel.model_validate(to_wire("timeline", memory.timeline(
            namespace=ns, filters=filters, field=field or "created", bucket=bucket or "auto",
            include_superseded=bool(include_superseded), show_expired=bool(show_expired))))
        total = sum(p.count for p in result.points)
        span = f" from {result.first[:10]} to {result.last[:10]}" if result.first and result.last else ""
        undated = f"; {result.undated} undated" if result.field == "event" and result.undated else ""
        return reply(result, f"{_count(total, 'memory')} by {result.field} time, per {result.bucket}{span} "
                             f"({_count(len(result.points), 'period')} with any){undated}")

    for tool in (memory_search, memory_add, memory_list, memory_get, memory_update, memory_delete, memory_history,
                 memory_add_turn, memory_namespaces, memory_sessions, memory_timeline):
        server.register(tool.__name__, tool, ALIASES.get(tool.__name__))
    return server
