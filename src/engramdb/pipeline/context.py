"""What one search carries from stage to stage, what stages are built with, and their shape.

The pipeline is one-way: a stage gets its collaborators (its preset section, the store's
calls it needs, the embedder, a retriever for gap queries) when it is built, and what the
search has found so far when it is called. Stages never rescore candidates in place: a
stage that changes scores returns new `Candidate` objects, so the fused ranking stays as
fusion left it for reflection to merge into.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Protocol

from ..model import Candidate, Entry
from ..plan.model import QueryPlan
from ..store.base import Filters
from .trace import Trace

Rows = list[tuple[int, float]]
#: loads entries by row id (rows deleted meanwhile are absent)
Fetch = Callable[[list[int]], dict[int, Entry]]


@dataclass(slots=True)
class SearchContext:
    """The question, its settings and plan, and what recall and fusion produced.

    ``recalled`` holds each channel's result list from the latest recall, best first — what
    fusion ranks. ``fused`` is the best fused ranking so far (each row's best score over recall
    rounds), which reflection merges new recall into before the post-fusion stages run again.
    """

    query: str
    k: int
    namespace: str | None
    filters: Filters
    trace: Trace
    group_by: str | None = None
    now: datetime | None = None
    explain: bool = False
    reflect: bool = True
    plan: QueryPlan = field(default_factory=lambda: QueryPlan(query=""))
    recalled: dict[str, Rows] = field(default_factory=dict)
    fused: list[Candidate] = field(default_factory=list)
    #: rows the lexical channel found through the query's translations (rowid -> (rank,
    #: score) in that list): fused as lexical, reported to the user as `translated`
    translated: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: the lexical channel's own word matches, by rowid, when translations were merged in
    worded: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: the channel weights for this query (after `[adapt]`), set by recall for fusion
    weights: dict[str, float] = field(default_factory=dict)
    #: how `[adapt]` read the query (terms, dialogue, share), for the fuse record; None: off
    adapted: dict[str, Any] | None = None


class Stage(Protocol):
    """A pipeline stage: candidates in, candidates out, a record of itself in ``rec``.

    ``rec`` is the stage's trace record (name, timing and counts are filled in around it);
    a stage with nothing to do sets ``rec["skipped"]`` to the reason and returns its input.
    """

    name: str

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]: ...


#: recall and fuse again for another plan, traced under a label: ``(ctx, plan, label) -> fused``
Retrieve = Callable[[SearchContext, QueryPlan, str], list[Candidate]]
#: the preset's post-fusion stages again: ``(ctx, candidates, label) -> candidates``
AfterFusion = Callable[[SearchContext, list[Candidate], str], list[Candidate]]


def attach_entries(fetch: Fetch, candidates: list[Candidate]) -> list[Candidate]:
    """Load the entries of `candidates` that lack one; rows deleted meanwhile are dropped.

    Attaching an entry is the one change made to a candidate after it is created: the entry
    is the row's data, not a score, so every stage sees the same one."""
    missing = [c.rowid for c in candidates if c.entry is None]
    if missing:
        entries = fetch(missing)
        for c in candidates:
            if c.entry is None:
                c.entry = entries.get(c.rowid)
    return [c for c in candidates if c.entry is not None]


def merge_candidates(old: list[Candidate], new: list[Candidate]) -> list[Candidate]:
    """Extra recall joins the first: a row keeps its best score."""
    merged = {c.rowid: c for c in old}
    for c in new:
        if c.rowid not in merged or c.score > merged[c.rowid].score:
            merged[c.rowid] = c
    return sorted(merged.values(), key=lambda c: (-c.score, c.rowid))
