"""`Filters` as SQL conditions on the ``entries`` table (alias ``e``), values always bound as
parameters. Every channel and every listing applies filters through this one function; a
backend's SQL dialect (`SQLDialect`) says how it binds a value, tests membership and reads a
metadata key, so each filter has one meaning on every backend."""

from __future__ import annotations

from typing import Any, Sequence

from ..model import timestamp_epoch
from .base import METADATA_KEY, Filters


class SQLDialect:
    """SQLite's: ``?`` parameters, ``IN (?, …)`` lists, metadata read from the JSON text."""

    mark = "?"
    always = "1"

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({','.join(self.mark * len(values))})", list(values)

    def metadata_equals(self, key: str, value: Any) -> tuple[str, list[Any]]:
        """Typed equality: null matches a stored null (not a missing key), true matches true
        (not 1), 3 matches 3 and 3.0 (not "3"). Keys are checked by `Filters.parse`."""
        if not METADATA_KEY.fullmatch(key):  # "user.id", 'say "hi"': no path names it safely
            return self._metadata_member(key, value)
        path = f'$.metadata."{key}"'
        if value is None:
            return "json_type(e.data, ?) = 'null'", [path]
        if isinstance(value, bool):
            return "json_type(e.data, ?) = ?", [path, "true" if value else "false"]
        if isinstance(value, (int, float)):
            return "json_type(e.data, ?) IN ('integer', 'real') AND json_extract(e.data, ?) = ?", [path, path, value]
        return "json_type(e.data, ?) = 'text' AND json_extract(e.data, ?) = ?", [path, path, str(value)]

    @staticmethod
    def _metadata_member(key: str, value: Any) -> tuple[str, list[Any]]:
        """The same typed equality over the metadata object's members, for any key."""
        member = "EXISTS (SELECT 1 FROM json_each(e.data, '$.metadata') m WHERE m.key = ? AND "
        if value is None:
            return member + "m.type = 'null')", [key]
        if isinstance(value, bool):
            return member + "m.type = ?)", [key, "true" if value else "false"]
        if isinstance(value, (int, float)):
            return member + "m.type IN ('integer', 'real') AND m.value = ?)", [key, value]
        return member + "m.type = 'text' AND m.value = ?)", [key, str(value)]


SQLITE = SQLDialect()


def where_clause(namespace: str | None, f: Filters, dialect: SQLDialect = SQLITE) -> tuple[str, list[Any]]:
    """SQL conditions on alias `e` (entries) for a namespace and filters, in `dialect`."""
    mark = dialect.mark
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, values: Sequence[Any] = ()) -> None:
        clauses.append(clause)
        params.extend(values)

    if namespace is not None:
        add(f"e.namespace = {mark}", [namespace])
    if not f.include_superseded:
        add("e.superseded_by IS NULL")
    if f.visible_at is not None:
        add(f"(e.expires_at IS NULL OR e.expires_at > {mark})", [float(f.visible_at)])
    if f.kinds:
        add(*dialect.one_of("e.kind", f.kinds))
    for field_name, values in (("person", f.persons), ("entity", f.entities), ("keyword", f.keywords)):
        if values:
            member, bound = dialect.one_of("t.value", [v.strip().lower() for v in values])
            add(f"EXISTS (SELECT 1 FROM tags t WHERE t.field = '{field_name}' AND t.rowid = e.rowid AND {member})", bound)
    if f.location:
        add(f"lower(e.location) = {mark}", [f.location.strip().lower()])
    if f.topic:
        add(f"lower(e.topic) = {mark}", [f.topic.strip().lower()])
    if f.since:  # an entry about a period counts while the period lasts (its end is exclusive)
        since = timestamp_epoch(f.since)
        add(f"(e.ts >= {mark} OR e.ts_end > {mark})", [since, since])
    if f.until:
        add(f"e.ts <= {mark}", [timestamp_epoch(f.until)])
    for column in ("doc_id", "path", "session_id", "turn_id", "speaker"):
        value = getattr(f, column)
        if value is not None:
            add(f"e.{column} = {mark}", [value])
    for key, value in f.metadata.items():
        add(*dialect.metadata_equals(key, value))
    return (" AND ".join(clauses) or dialect.always), params
