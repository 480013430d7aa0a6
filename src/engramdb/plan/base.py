"""What every planner gets and gives: a `PlanContext` in, a `QueryPlan` out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Protocol

from .model import QueryPlan


@dataclass(slots=True)
class PlanContext:
    """Facts about the store a planner may use.

    ``now`` is the reference time for relative expressions. ``match_names(text)`` returns the
    ``(field, value)`` pairs (``person``/``entity``/``location``, lower-cased) of names the
    namespace already holds that occur in ``text`` — the gazetteer, so no NER model is needed.
    """

    now: datetime | None
    match_names: Callable[[str], list[tuple[str, str]]]


class Planner(Protocol):
    """Reads a question into a `QueryPlan`. Must not raise for any input text."""

    name: str

    def plan(self, query: str, context: PlanContext) -> QueryPlan: ...
