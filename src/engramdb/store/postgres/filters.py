"""`Filters` as PostgreSQL conditions on ``entries`` (alias ``e``), values bound as parameters:
`store.sql_filters.where_clause` itself, in PostgreSQL's dialect, applied inside every channel."""

from __future__ import annotations

from typing import Any, Sequence

from psycopg.types.json import Jsonb

from ..base import Filters
from ..sql_filters import SQLDialect, where_clause as _where_clause


class PostgresDialect(SQLDialect):
    """``%s`` parameters, ``= ANY(array)`` lists, metadata from the indexed ``jsonb`` column."""

    mark = "%s"
    always = "TRUE"

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s)", [list(values)]

    def metadata_equals(self, key: str, value: Any) -> tuple[str, list[Any]]:
        """Typed equality as on SQLite, by containment (GIN-indexed) with the value's JSON
        type checked, so an array holding the value does not match."""
        kind = ("null" if value is None else "boolean" if isinstance(value, bool)
                else "number" if isinstance(value, (int, float)) else "string")
        return ("e.metadata @> %s AND jsonb_typeof(e.metadata -> %s) = %s",
                [Jsonb({key: value if kind != "string" else str(value)}), key, kind])


POSTGRES = PostgresDialect()


def where_clause(namespace: str | None, f: Filters) -> tuple[str, list[Any]]:
    return _where_clause(namespace, f, POSTGRES)
