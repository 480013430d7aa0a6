"""What one search carries from stage to stage, and the shape every stage has."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..model import Candidate
from ..plan.model import QueryPlan
from ..store.base import Filters
from .presets import Preset
from .trace import Trace

if TYPE_CHECKING:
    from .search import SearchPipeline


@dataclass(slots=True)
class SearchContext:
    """The question, its settings and plan, and the engine the stages call back into."""

    query: str
    k: int
    preset: Preset
    namespace: str | None
    filters: Filters
    trace: Trace
    engine: "SearchPipeline"
    group_by: str | None = None
    now: datetime | None = None
    explain: bool = False
    reflect: bool = True
    plan: QueryPlan = field(default_factory=lambda: QueryPlan(query=""))
    # Each candidate's fused score (its best over recall rounds), so stages that rescore in
    # place (rerank) can be undone before reflection merges in more candidates.
    fused_scores: dict[int, float] = field(default_factory=dict)


class Stage(Protocol):
    """A pipeline stage: candidates in, candidates out, a record of itself in ``rec``.

    ``rec`` is the stage's trace record (name, timing and counts are filled in around it);
    a stage with nothing to do sets ``rec["skipped"]`` to the reason and returns its input.
    """

    name: str

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]: ...


def attach_entries(ctx: SearchContext, candidates: list[Candidate]) -> list[Candidate]:
    """Load the entries of `candidates` that lack one; rows deleted meanwhile are dropped."""
    missing = [c.rowid for c in candidates if c.entry is None]
    if missing:
        entries = ctx.engine.store.fetch(missing)
        for c in candidates:
            if c.entry is None:
                c.entry = entries.get(c.rowid)
    return [c for c in candidates if c.entry is not None]
