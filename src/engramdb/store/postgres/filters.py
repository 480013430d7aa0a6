"""`Filters` as PostgreSQL conditions on ``entries`` (alias ``e``), values bound as parameters:
the same meaning as `store.sql_filters.where_clause` for SQLite, applied inside every channel."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from ..base import Filters
from ...model import timestamp_epoch


def where_clause(namespace: str | None, f: Filters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if namespace is not None:
        clauses.append("e.namespace = %s")
        params.append(namespace)
    if not f.include_superseded:
        clauses.append("e.superseded_by IS NULL")
    if f.visible_at is not None:
        clauses.append("(e.expires_at IS NULL OR e.expires_at > %s)")
        params.append(float(f.visible_at))
    if f.kinds:
        clauses.append("e.kind = ANY(%s)")
        params.append(list(f.kinds))
    for field_name, values in (("person", f.persons), ("entity", f.entities), ("keyword", f.keywords)):
        if values:
            clauses.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.field = '{field_name}' AND t.rowid = e.rowid "
                           "AND t.value = ANY(%s))")
            params.append([v.strip().lower() for v in values])
    if f.location:
        clauses.append("lower(e.location) = %s")
        params.append(f.location.strip().lower())
    if f.topic:
        clauses.append("lower(e.topic) = %s")
        params.append(f.topic.strip().lower())
    if f.since:
        clauses.append("e.ts >= %s")
        params.append(timestamp_epoch(f.since))
    if f.until:
        clauses.append("e.ts <= %s")
        params.append(timestamp_epoch(f.until))
    for column in ("doc_id", "path", "session_id", "turn_id", "speaker"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"e.{column} = %s")
            params.append(value)
    for key, value in f.metadata.items():
        # Typed equality as on SQLite: null matches a stored null (not a missing key), true
        # matches true (not 1), 3 matches 3 and 3.0 (not "3"). Containment (GIN-indexed) with
        # the value's JSON type checked, so an array holding the value does not match.
        kind = ("null" if value is None else "boolean" if isinstance(value, bool)
                else "number" if isinstance(value, (int, float)) else "string")
        clauses.append("e.metadata @> %s AND jsonb_typeof(e.metadata -> %s) = %s")
        params += [Jsonb({key: value if kind != "string" else str(value)}), key, kind]
    return (" AND ".join(clauses) or "TRUE"), params
