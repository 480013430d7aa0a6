"""The HTTP API: `Memory`'s methods one-to-one under ``/v1``, scoped by API key.

Scope is resolved on the server from the request's key (`auth.py`), never guessed by the
client. The same tools as `engram mcp` are mounted at ``/mcp`` (streamable HTTP, stateless),
behind the same keys. Errors are ``{"error": {"code", "message"}}`` with the status their
cause means.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path
from typing import Any, AsyncIterator, Literal, MutableMapping

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from pydantic import BaseModel

from .. import __version__
from ..errors import (
    EngramError, InputError, ModelMismatchError, NotAStoreError, NotFoundError, ReadOnlyStoreError, StoreBusyError,
    StoreUnavailableError,
)
from ..conversation.ingest import check_turn
from ..memory import MAX_K, Memory
from ..schema import (
    EntryModel, HistoryEventModel, ImportReportModel, NamespaceModel, PageModel, SearchResultModel, SessionModel,
    StatsModel, TimelineModel, to_wire,
)
from ..store.base import Filters
from .auth import (ApiError, Caller, authenticate, caller_of, namespaces_seen, refuse_repeated, resolve,
                   wanted_namespace)
from .body_limit import BodyLimit
from .head import HeadAsGet
from .entry_path import ENTRY, ENTRY_ID, HISTORY, HistoryRoute
from .addresses import is_loopback
from .messages import told
from .loopback_guard import LoopbackGuard
from .keys import ApiKey, KeyStore
from .models import (
    AddRequest, AddResponse, DeleteResponse, ErrorResponse, HealthResponse, SearchRequest, TurnsRequest, TurnsResponse,
    UpdateRequest, checked_k,
)

STATUS = [(InputError, 400, "bad_input"), (NotFoundError, 404, "not_found"), (ReadOnlyStoreError, 409, "read_only"),
          (StoreBusyError, 503, "busy"), (StoreUnavailableError, 503, "store_unavailable"),
          (ModelMismatchError, 409, "model_mismatch"), (NotAStoreError, 500, "not_a_store")]

#: seconds a client should wait before it tries a transient failure again (``Retry-After``)
RETRY_AFTER = {"busy": 1, "store_unavailable": 5}


#: the framework's own HTTP errors, by status, as error codes
HTTP_CODES = {400: "bad_input", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
              415: "unsupported_media_type"}


#: the error statuses every endpoint but /healthz may answer with (docs/SERVER.md)
ERROR_STATUSES = {400: "bad_input", 401: "unauthorized: no valid API key", 403: "forbidden: the key's role or namespace",
                  404: "not_found", 409: "read_only or model_mismatch", 413: "too_large",
                  422: "invalid_request: a body, query or path value that does not match the schema",
                  500: "store_error or not_a_store: the store cannot be used as asked (its disk is full, it is "
                       "damaged, it is not an Engram store); the message says which",
                  503: "busy: another process held the write lock; store_unavailable: the store's database server "
                       "cannot be reached now (both transient, with Retry-After); keys_unavailable: the keys file "
                       "is unreadable"}

#: how /openapi.json describes the Retry-After header of a 503
RETRY_HEADER = {"Retry-After": {"description": "seconds to wait before trying again (busy, store_unavailable)",
                                "schema": {"type": "integer"}}}


#: what /v1/import reads (raw, so FastAPI cannot see it): JSONL, as `engram export` writes it
IMPORT_BODY = {"requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {
    "type": "string", "description": "one JSON object per line: entries, or an `engram export` dump of one "
                                     "namespace (any content type is read the same)"}}}}}


def _document_auth(app: FastAPI) -> None:
    """OpenAPI with the API keys (Bearer or X-API-Key) every endpoint but /healthz takes; the
    keys are checked in `authenticated`, which reads the headers itself."""
    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            spec.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "an API key from `engram keys create`"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"}}
            spec["security"] = [{"bearer": []}, {"apiKey": []}]
            for methods in spec["paths"].values():
                for operation in methods.values():
                    if "503" in operation.get("responses", {}):
                        operation["responses"]["503"]["headers"] = RETRY_HEADER
            health = spec["paths"].get("/healthz", {}).get("get")
            if health is not None:
                health["security"] = []
                health["responses"] = {code: r for code, r in health["responses"].items() if code in ("200", "503")}
                health["responses"]["503"]["description"] = \
                    "store_unavailable: the store cannot be read now (its database server is down, say)"
            app.openapi_schema = spec
        return app.openapi_schema
    app.openapi = schema  # type: ignore[method-assign]


class Limits(BaseModel):
    """Configurable request limits (`engram serve` options)."""

    max_body_bytes: int = 10_000_000
    max_batch: int = 1_000
    max_k: int = 100


def scoped_stats(stats: dict[str, Any], namespaces: list[str]) -> dict[str, Any]:
    """`Memory.stats` as a key bound to `namespaces` may see it: its namespaces' counts and the
    engine (model, schema, versions); the store-wide totals that would tell of other
    namespaces (vectors, size) and the operator's file or URL are null."""
    mine = {ns: counts for ns, counts in stats["namespaces"].items() if ns in namespaces}
    return {**stats, "namespaces": mine, "count": sum(counts["count"] for counts in mine.values()),
            "path": None, "vectors": None, "file_bytes": None}


def _error_response(exc: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse({"error": {"code": exc.code, "message": exc.message}}, status_code=exc.status, headers=headers)


def _error(status: int, code: str, message: str) -> JSONResponse:
    """The one error body; a transient failure (`RETRY_AFTER`) says when to try again."""
    retry = RETRY_AFTER.get(code)
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status,
                        headers={"Retry-After": str(retry)} if retry is not None else None)


class WireRoute(APIRoute):
    """A route whose response keeps exactly the keys its records were given (`to_wire`), as
    the CLI's ``--json`` prints them: an entry's ``source`` lists only its set fields (``{}``
    for none), a hit has ``context`` only when it was asked for; never the response model's
    defaults filled in as nulls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["response_model_exclude_unset"] = True
        super().__init__(*args, **kwargs)


class McpGuard:
    """ASGI wrapper of the MCP endpoint: a request without a valid key (or naming a namespace
    its key may not use) is refused before MCP sees it; each tool checks its role again."""

    def __init__(self, app: Any, keys: KeyStore, namespace: str = "default") -> None:
        self.app, self.keys, self.namespace = app, keys, namespace

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            request = Request(scope)  # headers and query as the tools read them (mcp.py)
            try:
                caller_of(self.keys, request.headers, request.query_params, self.namespace)
            except ApiError as exc:
                await _error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _methods_at(app: FastAPI, scope: MutableMapping[str, Any]) -> list[str]:
    """The methods the app's routes serve at the request's path, sorted."""
    methods: set[str] = set()
    for route in app.router.routes:
        if isinstance(route, APIRoute) and route.matches(scope)[0] != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")  # served as GET without its body (head.py)
    return sorted(methods)


def create_app(memory: Memory, keys: KeyStore, limits: Limits | None = None, *, mcp: bool = True,
               web: bool = True, host: str = "127.0.0.1", close_on_shutdown: bool = False,
               namespace: str = "default") -> FastAPI:
    """The app over `memory` (opened with ``allow_preset_files=False``), authorised by `keys`;
    without keys (an open loopback server) a request that names no namespace acts in `namespace`;
    with `mcp`, the MCP tools at ``/mcp`` (`host` sets the MCP transport's DNS-rebinding guard);
    with `web`, the web page at ``/`` (static files that call the public API, `page.py`).
    With `close_on_shutdown` the app closes `memory` when the server shuts down (uvicorn
    re-raises SIGTERM after a graceful shutdown, so code after ``uvicorn.run`` never runs)."""
    limits = limits or Limits()
    default_namespace = namespace
    mcp_server = None
    if mcp:
        from mcp.server.transport_security import TransportSecuritySettings

        from .mcp import build_server

        mcp_server = build_server(memory, namespace, keys=keys, max_k=limits.max_k)
        # The app's own guard (LoopbackGuard, below) checks Host and Origin for /mcp as for /v1:
        # on an open loopback server only, so a keyed one may sit behind a proxy, /mcp included.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False) \
            if is_loopback(host) else None
        mcp_routes = mcp_server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                    json_response=True, host=host, transport_security=security,
                                                    max_request_body_size=limits.max_body_bytes).routes

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            if mcp_server is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            if close_on_shutdown:
                memory.close()

    # redirect_slashes=False: a path is served as sent or is 404, never redirected to another
    # (`/v1/memories/` is an entry without its id, not the list; a redirect would carry a
    # DELETE to the bulk endpoint, with a Location naming the server's own address).
    app = FastAPI(title="Engram", version=__version__, lifespan=lifespan, redirect_slashes=False,
                  description="Hybrid memory for LLM agents: the `Memory` API over HTTP, scoped by API key.",
                  responses={status: {"model": ErrorResponse, "description": text}
                             for status, text in ERROR_STATUSES.items()})
    _document_auth(app)
    app.router.route_class = WireRoute

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(EngramError)
    async def _engram_error(request: Request, exc: EngramError) -> JSONResponse:
        for kind, status, code in STATUS:
            if isinstance(exc, kind):
                return _error(status, code, told(exc))
        return _error(500, "store_error", told(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # The framework's own errors (no such path or method, a body it cannot parse) in the
        # API's one error shape, not {"detail": ...}.
        code = HTTP_CODES.get(exc.status_code, "http_error")
        message = "no such endpoint" if exc.status_code == 404 else \
            f"{request.method} is not allowed here" if exc.status_code == 405 else \
            "the body is not valid JSON (or not UTF-8)" if exc.status_code == 400 else str(exc.detail)
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # Every method the path serves: the router names only its first route's (POST for
            # /v1/memories, which GET and DELETE serve too).
            allowed = _methods_at(app, request.scope)
            headers = {**(headers or {}), "Allow": ", ".join(allowed)} if allowed else headers
            message = f"{request.method} is not allowed here; {', '.join(allowed)} is" if len(allowed) == 1 else \
                f"{request.method} is not allowed here; use one of {', '.join(allowed)}" if allowed else message
        return JSONResponse({"error": {"code": code, "message": message}}, status_code=exc.status_code,
                            headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") == "json_invalid":  # not JSON at all: 400, as a body that is not UTF-8
            message = f"the body is not valid JSON ({first.get('ctx', {}).get('error', 'cannot parse it')})"
            return JSONResponse({"error": {"code": "bad_input", "message": message}}, status_code=400)
        if first.get("type") == "missing" and not where:
            message = "the request needs a JSON object body"
        elif first.get("type") == "model_attributes_type" and not where:
            # JSON sent as text/plain, or as a form (curl -d's default): the body was read as a string
            message = "the request needs a JSON object body, sent with Content-Type: application/json"
        else:
            said = str(first.get("msg", "invalid")).removeprefix("Value error, ")
            message = f"{where}: {said}" if where else said
        return JSONResponse({"error": {"code": "invalid_request", "message": message}}, status_code=422)

    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)  # declared or chunked (body_limit.py)
    app.add_middleware(HeadAsGet)  # HEAD wherever GET is served (head.py)
    if is_loopback(host):
        app.add_middleware(LoopbackGuard, bound=host, keys=keys)  # DNS rebinding, cross-site posts (loopback_guard.py)

    def authenticated(request: Request, authorization: str | None = Header(None),
                      x_api_key: str | None = Header(None)) -> ApiKey | None:
        """The request's key (None on an open server); 401 without a valid one."""
        refuse_repeated(request.headers, request.query_params)
        headers = {k: v for k, v in (("authorization", authorization), ("x-api-key", x_api_key)) if v}
        return authenticate(keys, headers)

    def caller(key: ApiKey | None = Depends(authenticated), x_engram_namespace: str | None = Header(None),
               namespace: str | None = Query(None, description="the namespace, for a key with several")) -> Caller:
        """The namespace this request acts in, and its key (None on an open server)."""
        return resolve(key, wanted_namespace(x_engram_namespace, namespace), default_namespace)

    def by_key(key: ApiKey | None = Depends(authenticated)) -> str | None:
        """Who a write that names no actor is recorded as: its key ("key:<label>", else
        "key:<id>"), as MCP's writes are "mcp"; none on an open server. An edit's history said
        nobody, so on a team's server no one could tell who changed what."""
        return None if key is None else f"key:{key.label or key.id}"[:200]

    def need(role: str) -> Any:
        def check(who: Caller = Depends(caller)) -> str:
            who.require(role)
            return who.namespace
        return check

    @app.get("/healthz", tags=["meta"], response_model=HealthResponse)
    def healthz() -> Any:
        """Whether the server can read its store: one read of the store's metadata (a load
        balancer's probe), with the largest k a search may ask for (the web page's k field). 503 ``store_unavailable`` while it cannot (a PostgreSQL server down);
        the reason goes to the server's log, not to this unauthenticated caller."""
        try:
            memory.store.recorded_embedder()
        except EngramError as exc:
            logging.getLogger("uvicorn.error").warning("health check: %s", exc)
            return _error(503, "store_unavailable", "the store cannot be read now; the server's log says why")
        # The k a search may really ask for: a --max-k above the library's 1,000 is capped there.
        return {"status": "ok", "version": __version__, "max_k": min(limits.max_k, MAX_K)}

    @app.post("/v1/memories", response_model=AddResponse, tags=["memories"])
    def add(body: AddRequest, ns: str = Depends(need("write")), keyed: str | None = Depends(by_key)) -> Any:
        given = [name for name in ("text", "entry", "entries") if getattr(body, name) is not None]
        if len(given) != 1:
            raise InputError("give one of text, entry or entries" + (f", not {' and '.join(given)}" if given else ""))
        items: list[Any] = [x for x in ([body.text] if body.text is not None else []) +
                            ([body.entry] if body.entry is not None else []) + list(body.entries or [])]
        if not items:
            raise InputError("entries is empty")
        if len(items) > limits.max_batch:
            raise InputError(f"{len(items)} entries in one request; the limit is {limits.max_batch}")
        ids = memory.add(items, namespace=ns, supersedes=body.supersedes, expires_at=body.expires_at,
                         actor=body.actor or keyed)
        stored = {e.id: e for e in memory.get(ids, namespace=ns)}
        return {"results": to_wire("entry", [stored[i].to_dict() for i in dict.fromkeys(ids) if i in stored])}

    @app.post("/v1/memories/search", response_model=SearchResultModel, tags=["memories"])
    def search(body: SearchRequest, ns: str = Depends(need("read"))) -> Any:
        # The default k (10) follows a lower --max-k; a k the client asks for must fit under it.
        k = checked_k(body.k if "k" in body.model_fields_set else min(body.k, limits.max_k), limits.max_k)
        result = memory.search(body.query, k=k, filters=body.filters, namespace=ns, preset=body.preset,
                               group_by=body.group_by, now=body.now, explain=body.explain, threshold=body.threshold,
                               include_superseded=body.include_superseded, show_expired=body.show_expired,
                               context=body.context)
        return to_wire("search_result", result.to_dict())

    @app.get("/v1/memories", response_model=PageModel, tags=["memories"])
    def list_memories(ns: str = Depends(need("read")), limit: int = 50, cursor: str | None = None,
                      order: Literal["newest", "oldest"] = "newest",
                      filter: list[str] = Query(default_factory=list, description="key=value, repeatable"),
                      include_superseded: bool = False, show_expired: bool = False) -> Any:
        page = memory.list(namespace=ns, filters=Filters.parse_cli(filter), order=order, limit=limit, cursor=cursor,
                           include_superseded=include_superseded, show_expired=show_expired)
        return to_wire("page", page.to_dict())

    @app.delete("/v1/memories", response_model=DeleteResponse, tags=["memories"])
    def delete_by_filter(ns: str = Depends(need("admin")),
                         filter: list[str] = Query(default_factory=list, description="key=value, repeatable"),
                         all: bool = Query(False, description="with no filter: empty the namespace"),
                         actor: str | None = None, keyed: str | None = Depends(by_key)) -> Any:
        """Delete every entry of the namespace that matches the filters (admin). With no filter,
        ``all=true`` is required, so a slip cannot empty a namespace."""
        parsed = Filters.parse_cli(filter)
        if not all and not filter:  # said in this API's spelling, not the library's all=True
            raise ApiError(400, "bad_input", "delete needs a filter (?filter=key=value) or ?all=true to empty "
                                             "the namespace")
        return {"deleted": memory.delete(filters=parsed, namespace=ns, all=all, actor=actor or keyed)}

    @app.post("/v1/purge-expired", response_model=DeleteResponse, tags=["memories"])
    def purge_expired(ns: str = Depends(need("admin")), actor: str | None = None,
                      keyed: str | None = Depends(by_key)) -> Any:
        """Delete the namespace's entries whose ``expires_at`` has passed (admin)."""
        return {"deleted": memory.purge_expired(namespace=ns, actor=actor or keyed)}

    def history(entry_id: str = PathParam(description=ENTRY_ID), ns: str = Depends(need("read"))) -> Any:
        """Every version of the entry, oldest first: ADD, UPDATE and DELETE events."""
        return to_wire("history_event", [e.to_dict() for e in memory.history(entry_id, namespace=ns)])

    # Before the entry's own GET, which would read ".../history" as part of the id.
    app.router.add_api_route(HISTORY, history, methods=["GET"], response_model=list[HistoryEventModel],
                             tags=["memories"], route_class_override=HistoryRoute,
                             response_model_exclude_unset=True)  # as WireRoute

    @app.api_route("/v1/memories/", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    def no_entry_id() -> None:
        raise NotFoundError("no entry id after /v1/memories/ (an entry is /v1/memories/{id}; listing, adding and "
                            "deleting by filter are /v1/memories, without the slash)")

    @app.get(ENTRY, response_model=EntryModel, tags=["memories"])
    def get(entry_id: str = PathParam(description=ENTRY_ID), ns: str = Depends(need("read"))) -> Any:
        found = memory.get(entry_id, namespace=ns)
        if not found:
            # GET on the search endpoint reads "search" as an entry id: say where searching is
            hint = " (to search: POST /v1/memories/search with {\"query\": …})" if entry_id == "search" else ""
            raise NotFoundError(f"not found in namespace {ns!r}: {entry_id}{hint}")
        return to_wire("entry", found[0].to_dict())

    @app.patch(ENTRY, response_model=EntryModel, tags=["memories"])
    def update(body: UpdateRequest, entry_id: str = PathParam(description=ENTRY_ID),
               ns: str = Depends(need("write")), keyed: str | None = Depends(by_key)) -> Any:
        changes = body.model_dump(exclude_unset=True)
        actor = changes.pop("actor", None) or keyed
        return to_wire("entry", memory.update(entry_id, namespace=ns, actor=actor, **changes).to_dict())

    @app.delete(ENTRY, response_model=DeleteResponse, tags=["memories"])
    def delete(entry_id: str = PathParam(description=ENTRY_ID), ns: str = Depends(need("write")),
               actor: str | None = None, keyed: str | None = Depends(by_key)) -> Any:
        return {"deleted": memory.delete(entry_id, namespace=ns, actor=actor or keyed)}

    # A session id may hold slashes ("team/standup", as `engram add-turn` takes it): the rest of the
    # path up to /turns, sent as they are or encoded (%2F), as an entry id is.
    @app.post("/v1/conversations/{session_id:entry_id}/turns", response_model=TurnsResponse, tags=["conversations"])
    def add_turns(session_id: str, body: TurnsRequest, ns: str = Depends(need("write")),
                  keyed: str | None = Depends(by_key)) -> Any:
        """Append turns to a session, in order; facts are extracted from each as by `add_turn`."""
        if len(body.turns) > limits.max_batch:
            raise InputError(f"{len(body.turns)} turns in one request; the limit is {limits.max_batch}")
        for i, t in enumerate(body.turns):  # every turn checked before the first is written
            try:
                check_turn(t.speaker, t.text, session_id, t.timestamp, t.turn_id)
            except InputError as exc:
                raise InputError(f"turns[{i}]: {exc}") from None
        reports = [memory.add_turn(t.speaker, t.text, session_id=session_id, timestamp=t.timestamp,
                                   turn_id=t.turn_id, namespace=ns, extractor=body.extractor,
                                   actor=body.actor or keyed)
                   for t in body.turns]
        # A retry reports turns == 0 (nothing written); so would a session found unchanged.
        unchanged = sum(1 for r in reports if not r.turns or r.sessions_unchanged)
        return {"session_id": session_id, "turns": len(reports) - unchanged, "unchanged": unchanged,
                "facts": sum(r.facts for r in reports), "written": sum(r.written for r in reports),
                "removed": sum(r.removed for r in reports),
                "turn_ids": [r.turn_id for r in reports], "ids": [r.id for r in reports]}

    @app.post("/v1/import", tags=["transfer"], response_model=ImportReportModel, openapi_extra=IMPORT_BODY)
    async def import_jsonl(request: Request, ns: str = Depends(need("admin"))) -> Any:
        """A JSONL body (entries, or an `engram export` dump of one namespace) imported into the
        key's namespace; the body is streamed to a temporary file, then validated whole."""
        import asyncio
        import tempfile

        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as tmp:
            path = Path(tmp.name)
            try:
                async for chunk in request.stream():  # at most --max-body-bytes (body_limit.py)
                    tmp.write(chunk)
            except BaseException:  # the client went away (or sent too much): no file left behind
                tmp.close()
                path.unlink(missing_ok=True)
                raise
        try:
            report = await asyncio.to_thread(memory.import_path, path, namespace=ns)
        except InputError as exc:  # name the body's line, not the server's temporary file
            raise InputError(str(exc).replace(str(path), "body")) from None
        finally:
            path.unlink(missing_ok=True)
        report["path"] = "request body"
        return to_wire("import_report", report)

    @app.get("/v1/export", tags=["transfer"], response_class=StreamingResponse,
             responses={200: {"description": "one JSON object per line (`engram export`)",
                              "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
    def export(ns: str = Depends(need("read"))) -> StreamingResponse:
        """The namespace as JSONL (`engram export`), streamed from one snapshot."""
        lines = (json.dumps(line, ensure_ascii=False) + "\n" for line in memory.export(namespace=ns))
        return StreamingResponse(lines, media_type="application/x-ndjson")

    @app.get("/v1/namespaces", response_model=list[NamespaceModel], tags=["meta"])
    def namespaces(key: ApiKey | None = Depends(authenticated)) -> Any:
        # a key sees the namespaces it is bound to, whatever its role, empty ones included
        rows = namespaces_seen(memory.namespaces(), None if key is None else key.namespaces)
        return to_wire("namespace", rows)

    @app.get("/v1/timeline", response_model=TimelineModel, tags=["meta"])
    def timeline(ns: str = Depends(need("read")), field: Literal["created", "event"] = "created",
                 bucket: Literal["auto", "day", "week", "month", "year"] = "auto",
                 filter: list[str] = Query(default_factory=list, description="key=value, repeatable"),
                 include_superseded: bool = False, show_expired: bool = False) -> Any:
        """Entry counts per day, week, month or year: by when they were added, or by their own time."""
        return to_wire("timeline", memory.timeline(namespace=ns, filters=Filters.parse_cli(filter), field=field,
                                                   bucket=bucket, include_superseded=include_superseded,
                                                   show_expired=show_expired))

    @app.get("/v1/sessions", response_model=list[SessionModel], tags=["conversations"])
    def sessions(ns: str = Depends(need("read")), limit: int = 100) -> Any:
        """The namespace's conversation sessions, most recently written first."""
        return to_wire("session", memory.sessions(namespace=ns, limit=limit))

    @app.get("/v1/stats", response_model=StatsModel, tags=["meta"])
    def stats(key: ApiKey | None = Depends(authenticated)) -> Any:
        if key is not None and not key.allows("admin"):
            raise ApiError(403, "forbidden", f"this key's role is {key.role!r}; store statistics need 'admin'")
        return to_wire("stats", memory.stats() if key is None else scoped_stats(memory.stats(), key.namespaces))

    if web:
        from .page import mount_page

        mount_page(app)
    if mcp_server is not None:
        for route in mcp_routes:  # one ASGI endpoint at /mcp; wrap it in the key check
            route.app = McpGuard(route.app, keys, namespace)  # type: ignore[attr-defined]
            app.router.routes.append(route)
    return app
