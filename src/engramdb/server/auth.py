"""Who a request is and which namespace it acts in: one rule for the HTTP API and MCP over HTTP.

Scope is resolved here, never guessed by the client: a key is bound to namespaces, a request
acts in its key's namespace (a key with several names one with ``X-Engram-Namespace`` or
``?namespace=``; any other is 403). Without keys (loopback only, see `engram serve`) the
namespace comes from that header or parameter, else the server's own (``engram -n NAME serve``,
``default`` when none is named).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import InputError
from .keys import ApiKey, KeyStore

NAMESPACE_HEADER = "x-engram-namespace"


class ApiError(Exception):
    """An HTTP error with its status and a stable code: ``{"error": {"code", "message"}}``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class Caller:
    """The namespace a request acts in and its key (None on an open loopback server)."""

    namespace: str
    key: ApiKey | None

    def require(self, role: str, what: str = "this") -> None:
        if self.key is not None and not self.key.allows(role):
            raise ApiError(403, "forbidden", f"this key's role is {self.key.role!r}; {what} needs {role!r}")


def presented_secret(headers: Mapping[str, str]) -> str | None:
    """The key from ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; two different keys
    are a bad request (the second used to be ignored, whichever the client meant)."""
    authorization = headers.get("authorization")
    bearer = authorization[7:].strip() if authorization and authorization.lower().startswith("bearer ") else None
    api_key = headers.get("x-api-key")
    if bearer and api_key and bearer != api_key:
        raise ApiError(400, "bad_input", "Authorization and X-API-Key hold different keys; send one")
    return bearer or api_key or None


def authenticate(keys: KeyStore, headers: Mapping[str, str]) -> ApiKey | None:
    """The request's key (None on an open server); 401 without a valid one."""
    if not keys.configured():
        return None
    secret = presented_secret(headers)
    if not secret:
        raise ApiError(401, "unauthorized", "an API key is required (Authorization: Bearer <key> or X-API-Key)")
    try:
        key = keys.lookup(secret)
    except InputError:  # a damaged keys file: the operator's problem, and no key is valid
        raise ApiError(503, "keys_unavailable", "the server cannot read its API keys file; "
                       "its operator must repair or replace it") from None
    if key is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key")
    return key


def resolve(key: ApiKey | None, wanted: str | None, default: str = "default") -> Caller:
    """The namespace for a request by `key` that asked for `wanted` (or nothing); on an open
    server (no key) a request that names none acts in the server's `default`."""
    if key is None:
        return Caller(wanted or default, None)
    if wanted is None:
        if len(key.namespaces) > 1:
            raise ApiError(400, "bad_input", f"this key has several namespaces; name one of {key.namespaces} "
                                             "with X-Engram-Namespace")
        return Caller(key.namespaces[0], key)
    if wanted not in key.namespaces:
        raise ApiError(403, "forbidden", f"this key may not use namespace {wanted!r}")
    return Caller(wanted, key)


#: What says who a request is and where it acts: each given at most once (or the same each time).
_SCOPE_HEADERS = ("authorization", "x-api-key", NAMESPACE_HEADER)


def refuse_repeated(headers: Any, query: Any) -> None:
    """A 400 for a scope named twice differently: two ``Authorization`` headers, two
    ``X-Engram-Namespace`` headers or two ``?namespace=`` parameters with different values (the
    first or the last used to win silently, as a proxy adding its own header would never see).
    `headers` and `query` are Starlette's multi-value mappings."""
    for where, values, names in (("header", headers, _SCOPE_HEADERS), ("parameter", query, ("namespace",))):
        for name in names:
            given = values.getlist(name)
            if len(set(given)) > 1:
                label = f"?{name}=" if where == "parameter" else name.title()
                raise ApiError(400, "bad_input", f"{label} is given {len(given)} times with different values; "
                                                 "send it once")


def caller_of(keys: KeyStore, headers: Any, query: Any, default: str = "default") -> Caller:
    """Authenticate and resolve in one step, from a request's headers and query parameters
    (Starlette's multi-value mappings: a scope named twice differently is refused)."""
    refuse_repeated(headers, query)
    return resolve(authenticate(keys, headers), wanted_namespace(headers.get(NAMESPACE_HEADER), query.get("namespace")),
                   default)


def wanted_namespace(header: str | None, query: str | None) -> str | None:
    """The namespace a request names, by ``X-Engram-Namespace`` or ``?namespace=`` (None: none).
    Named twice differently, named empty, or a header that is not UTF-8 is a bad request, not a
    guess (the header used to win silently, an empty one to mean the server's namespace)."""
    if header is not None:
        try:
            header = header.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            raise ApiError(400, "bad_input", "X-Engram-Namespace must be UTF-8 text") from None
    for name, value in (("X-Engram-Namespace", header), ("?namespace=", query)):
        if value is not None and not value.strip():
            raise ApiError(400, "bad_input", f"{name} names no namespace; leave it out for the default")
    if header is not None and query is not None and header != query:
        raise ApiError(400, "bad_input", f"X-Engram-Namespace ({header!r}) and ?namespace= ({query!r}) name "
                                         "different namespaces; name one")
    return header if header is not None else query


def namespaces_seen(rows: list[dict[str, Any]], allowed: Sequence[str] | None) -> list[dict[str, Any]]:
    """`Memory.namespaces()` rows as a caller bound to `allowed` sees them (None: every one):
    each of its namespaces by name, one that holds nothing yet with zero counts, so that a key
    bound to a new namespace finds it (it saw ``[]``)."""
    if allowed is None:
        return rows
    stored = {row["namespace"]: row for row in rows}
    return [stored.get(ns) or {"namespace": ns, "count": 0, "current": 0, "kinds": {}} for ns in sorted(set(allowed))]
