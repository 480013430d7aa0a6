"""`QueryPlan`: what a question asks for, as the recall channels need it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

INTENTS = ("lookup", "temporal", "enumeration", "multi-hop", "comparison", "preference")
MAX_SUB_QUERIES = 4
#: sub-queries and route queries together
MAX_SEMANTIC_QUERIES = 6


@dataclass(slots=True)
class EvidenceRoute:
    """A sub-goal of the question with its own queries and constraints (e.g. one per person
    compared, or "what X did" and "when" for a temporal multi-hop question)."""

    goal: str
    queries: list[str] = field(default_factory=list)
    persons: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)


@dataclass(slots=True)
class QueryPlan:
    """The planner's reading of a question.

    ``sub_queries`` holds at most `MAX_SUB_QUERIES` texts, the original question always
    first. ``time_start``/``time_end`` are a half-open window resolved against the reference
    time (None when the question names no time). ``planner`` says which planner produced the
    plan (``rules``, ``llm``, or ``none`` for no planning); ``notes`` records fallbacks.
    ``present`` says the question asks for the present state of something that may have
    changed ("where do I work now?", "我现在住哪"): the newest statement should answer it;
    ``former`` that it asks for a state before it changed ("where did I work before?",
    "我以前的领导是谁"): the older statement should.
    """

    query: str
    sub_queries: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    persons: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    location: str | None = None
    time_start: datetime | None = None
    time_end: datetime | None = None
    time_expression: str | None = None
    intent: str = "lookup"
    present: bool = False
    former: bool = False
    routes: list[EvidenceRoute] = field(default_factory=list)
    planner: str = "rules"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.sub_queries or self.sub_queries[0] != self.query:
            self.sub_queries = [self.query, *[q for q in self.sub_queries if q != self.query]]
        self.sub_queries = list(dict.fromkeys(q.strip() for q in self.sub_queries if q.strip()))[:MAX_SUB_QUERIES]
        if self.intent not in INTENTS:
            raise ValueError(f"intent must be one of {', '.join(INTENTS)}, not {self.intent!r}")

    @property
    def has_window(self) -> bool:
        return self.time_start is not None and self.time_end is not None

    def semantic_queries(self) -> list[str]:
        """The texts the semantic channel embeds: the sub-queries, then each route's own
        queries (an LLM planner's routes may hold queries its sub-queries lack), at most
        `MAX_SEMANTIC_QUERIES`."""
        texts = [*self.sub_queries, *(q for r in self.routes for q in r.queries)]
        return list(dict.fromkeys(t.strip() for t in texts if t.strip()))[:MAX_SEMANTIC_QUERIES]

    def names(self) -> list[tuple[str, str]]:
        """(field, lower-cased value) pairs for the symbolic channel: the plan's names and
        those of its routes."""
        persons = [*self.persons, *(p for r in self.routes for p in r.persons)]
        entities = [*self.entities, *(e for r in self.routes for e in r.entities)]
        pairs = [("person", p) for p in persons] + [("entity", e) for e in entities]
        if self.location:
            pairs.append(("location", self.location))
        return list(dict.fromkeys((f, v.strip().lower()) for f, v in pairs if v.strip()))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("time_start", "time_end"):
            data[key] = data[key].isoformat() if data[key] else None
        return data
