"""`Filters` as SQL conditions on the ``entries`` table (alias ``e``), values always bound as
parameters. Every channel and every listing applies filters through this one function."""

from __future__ import annotations

from typing import Any

from ..model import timestamp_epoch
from .base import Filters


def where_clause(namespace: str | None, f: Filters) -> tuple[str, list[Any]]:
    """SQL conditions on alias `e` (entries) for a namespace and filters."""
    clauses: list[str] = []
    params: list[Any] = []
    if namespace is not None:
        clauses.append("e.namespace = ?")
        params.append(namespace)
    if not f.include_superseded:
        clauses.append("e.superseded_by IS NULL")
    if f.visible_at is not None:
        clauses.append("(e.expires_at IS NULL OR e.expires_at > ?)")
        params.append(f.visible_at)
    if f.kinds:
        clauses.append(f"e.kind IN ({','.join('?' * len(f.kinds))})")
        params += f.kinds
    for field_name, values in (("person", f.persons), ("entity", f.entities), ("keyword", f.keywords)):
        if values:
            clauses.append(
                f"EXISTS (SELECT 1 FROM tags t WHERE t.field = '{field_name}' AND t.rowid = e.rowid "
                f"AND t.value IN ({','.join('?' * len(values))}))"
            )
            params += [v.strip().lower() for v in values]
    if f.location:
        clauses.append("lower(e.location) = ?")
        params.append(f.location.strip().lower())
    if f.topic:
        clauses.append("lower(e.topic) = ?")
        params.append(f.topic.strip().lower())
    if f.since:
        clauses.append("e.ts >= ?")
        params.append(timestamp_epoch(f.since))
    if f.until:
        clauses.append("e.ts <= ?")
        params.append(timestamp_epoch(f.until))
    for column in ("doc_id", "path", "session_id", "turn_id", "speaker"):
        value = getattr(f, column)
        if value is not None:
            clauses.append(f"e.{column} = ?")
            params.append(value)
    for key, value in f.metadata.items():
        # Typed equality: null matches a stored null (not a missing key), true matches
        # true (not 1), 3 matches 3 and 3.0 (not "3"). Keys are checked by Filters.parse.
        path = f'$.metadata."{key}"'
        if value is None:
            clauses.append("json_type(e.data, ?) = 'null'")
            params.append(path)
        elif isinstance(value, bool):
            clauses.append("json_type(e.data, ?) = ?")
            params += [path, "true" if value else "false"]
        elif isinstance(value, (int, float)):
            clauses.append("json_type(e.data, ?) IN ('integer', 'real') AND json_extract(e.data, ?) = ?")
            params += [path, path, value]
        else:
            clauses.append("json_type(e.data, ?) = 'text' AND json_extract(e.data, ?) = ?")
            params += [path, path, str(value)]
    return (" AND ".join(clauses) or "1"), params
