"""The LLM planner: SimpleMem's requirements analysis and targeted sub-queries in one chat call.

The model reads the question (with the reference time and the names the store already
knows), states what the answer needs (persons, entities, place, time, intent) and writes at
most three short sub-queries. Its JSON is validated with pydantic; anything that goes wrong
(endpoint down, output still invalid after the client's corrections, a bug) falls back to
the rule planner, with a note in ``plan.notes``, so planning never raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

from ..conversation.model import as_utc
from ..text.dialogue import without_roles
from .base import PlanContext, Planner
from .model import INTENTS, MAX_SUB_QUERIES, EvidenceRoute, QueryPlan

if TYPE_CHECKING:  # pragma: no cover
    from ..llm import LLMClient

SYSTEM_PROMPT = f"""You plan searches over a personal memory store (facts and conversation turns).
Step 1, requirements analysis: decide what information the answer needs: the persons and other
entities involved, the place, the time, and the kind of question (intent).
Step 2, targeted sub-queries: write the fewest short search queries that fetch the pieces the
question itself would not find, at most 3. Fewer is better; a simple lookup needs none. Add one
only for a separate piece of evidence (each person compared, the event a "when" depends on, ...).
Intents: lookup (one fact), temporal (when, or bounded in time), enumeration (list every ...),
multi-hop (combine several facts), comparison (two or more persons or things), preference
(likes, opinions, what someone would do).
Resolve relative times ("last year", "in May") against the reference time into a half-open
window: time_start inclusive, time_end exclusive, both YYYY-MM-DD; null when no time is named.
Spell persons and entities as in the known names when they match.
"present" is true when the question asks for the current state of something that may have
changed over time ("where does she work now?", "what is my current address?"), false otherwise;
"former" is true when it asks for the state before a change ("where did she work before?",
"what was my old address?"), false otherwise.
"routes" lists the sub-goals, each with its own queries and names (may be empty).
Answer with JSON only: {{"intent": one of {", ".join(INTENTS)}, "keywords": [str],
"persons": [str], "entities": [str], "location": str|null, "time_start": "YYYY-MM-DD"|null,
"time_end": "YYYY-MM-DD"|null, "present": bool, "former": bool, "sub_queries": [str], "routes": [{{"goal": str, "queries": [str],
"persons": [str], "entities": [str]}}]}}"""

MAX_EXTRA_QUERIES = MAX_SUB_QUERIES - 1  # the original question takes the first slot


def _clean(values: Any) -> list[str]:
    """Stripped, non-empty, case-insensitively distinct strings; models often send null for []."""
    if values is None:
        return []
    if not isinstance(values, list):
        raise ValueError("must be a list of strings")
    out: dict[str, str] = {}
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"must be a list of strings, got {value!r}")
        if value.strip():
            out.setdefault(value.strip().lower(), value.strip())
    return list(out.values())


Strings = Annotated[list[str], BeforeValidator(_clean)]


class RouteReply(BaseModel):
    """One evidence route as the model must return it."""

    goal: str = Field(min_length=1)
    queries: Strings = Field(default_factory=list)
    persons: Strings = Field(default_factory=list)
    entities: Strings = Field(default_factory=list)


class PlanReply(BaseModel):
    """The planner's JSON reply."""

    intent: str
    keywords: Strings = Field(default_factory=list)
    persons: Strings = Field(default_factory=list)
    entities: Strings = Field(default_factory=list)
    location: Annotated[str | None, BeforeValidator(lambda v: (v.strip() or None) if isinstance(v, str) else v)] = None
    time_start: str | None = None
    time_end: str | None = None
    #: the question asks for the present state of something (models may leave it out: false)
    present: Annotated[bool, BeforeValidator(lambda v: False if v is None else v)] = False
    #: the question asks for a state before it changed (likewise)
    former: Annotated[bool, BeforeValidator(lambda v: False if v is None else v)] = False
    sub_queries: list[str] = Field(default_factory=list)
    routes: Annotated[list[RouteReply], BeforeValidator(lambda v: [] if v is None else v)] = Field(default_factory=list)

    @field_validator("intent")
    @classmethod
    def _intent(cls, value: str) -> str:
        value = value.strip().lower().replace("_", "-")  # "multi_hop" is a spelling, not a mistake
        if value not in INTENTS:
            raise ValueError(f"intent must be one of {', '.join(INTENTS)}, not {value!r}")
        return value

    @field_validator("time_start", "time_end")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            as_utc(value)  # raises ValueError, which the client feeds back to the model
            return value.strip()
        return None

    @field_validator("sub_queries", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> list[str]:
        if isinstance(value, list) and any(isinstance(q, str) and not q.strip() for q in value):
            raise ValueError("sub-queries must be non-empty")
        return _clean(value)  # more than 3 are cut in `LLMPlanner.plan`, once the question is known

    @model_validator(mode="after")
    def _window(self) -> PlanReply:
        if self.time_start and self.time_end and as_utc(self.time_end) <= as_utc(self.time_start):  # type: ignore[operator]
            raise ValueError(f"time_end {self.time_end} must be after time_start {self.time_start}")
        return self


def _render_user(query: str, context: PlanContext) -> str:
    names = context.match_names(without_roles(query))
    known = "; ".join(f"{field}: {value}" for field, value in names) or "none"
    now = context.now.isoformat() if context.now else "unknown"
    return f"Question: {query}\nReference time: {now}\nKnown names in the question: {known}"


class LLMPlanner:
    """Plans with one chat call; falls back to ``fallback`` (normally the rule planner) on any failure."""

    name = "llm"

    def __init__(self, client: LLMClient, fallback: Planner, max_tokens: int = 800) -> None:
        self.client = client
        self.fallback = fallback
        self.max_tokens = max_tokens

    def plan(self, query: str, context: PlanContext) -> QueryPlan:
        """A `QueryPlan` with ``planner="llm"``, or the fallback's plan with a note saying why."""
        try:
            return self._plan(query, context)
        except Exception as exc:  # noqa: BLE001 - planning must never break a search
            reason = " ".join(str(exc).split()) or type(exc).__name__
            reason = reason if len(reason) <= 300 else reason[:297] + "..."
            note = f"llm planner failed ({reason}); used {getattr(self.fallback, 'name', 'fallback')}"
        try:
            plan = self.fallback.plan(query, context)
        except Exception as exc:  # noqa: BLE001 - a broken fallback still must not raise
            return QueryPlan(query=query, planner="none", notes=[note, f"fallback failed: {exc}"])
        plan.notes.append(note)
        return plan

    def _plan(self, query: str, context: PlanContext) -> QueryPlan:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": _render_user(query, context)}]
        reply, _ = self.client.chat_json(messages, validate=PlanReply.model_validate,
                                         max_tokens=self.max_tokens, purpose="plan")
        extra = [q for q in reply.sub_queries if q.lower() != query.strip().lower()]
        cut = len(extra) > MAX_EXTRA_QUERIES
        notes = [f"llm gave {len(extra)} sub-queries; kept {MAX_EXTRA_QUERIES}"] if cut else []
        return QueryPlan(
            query=query,
            sub_queries=[query, *extra[:MAX_EXTRA_QUERIES]],
            keywords=reply.keywords,
            persons=reply.persons,
            entities=reply.entities,
            location=reply.location,
            time_start=as_utc(reply.time_start),
            time_end=as_utc(reply.time_end),
            intent=reply.intent,
            present=reply.present and not (reply.time_start or reply.time_end),
            former=reply.former and not reply.present and not (reply.time_start or reply.time_end),
            routes=[EvidenceRoute(goal=r.goal.strip(), queries=r.queries, persons=r.persons, entities=r.entities)
                    for r in reply.routes],
            planner=self.name,
            notes=notes,
        )


__all__ = ["LLMPlanner", "PlanReply", "RouteReply", "SYSTEM_PROMPT"]
