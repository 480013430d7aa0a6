"""Conversation evidence windows: a strong turn lifts the turns next to it in its session.

The evidence for a question about a conversation often spans neighbouring turns — a
question and its answer, a statement and the reply that names the thing. The turn that
matches the query best is found by the channels; its neighbour, which holds the rest of the
evidence, often shares few of the query's words. The ``neighbours`` stage (LycheeMem's
source windows, as a ranking signal) gives each of the ``span`` turns before and after one
of the ``top`` best candidates the evidence ``lift`` × that candidate's score, combined with
the turn's own score by ``combine``:

* ``"or"`` (the default preset's): scores are probabilities (a calibrated preset), and a
  turn is relevant by its own evidence or by its neighbour's: ``1 − (1 − own)(1 − lift ×
  neighbour)``. A turn next to a strong one that also matches the query itself outranks one
  that only sits next to it (measured: LoCoMo turns R@10 0.710 → 0.732, Hit@10 0.771 → 0.793
  against ``"max"``).
* ``"max"``: the lift is a floor, ``max(own, lift × neighbour)``; any score scale.

A turn no channel found joins the candidates that way. Its evidence shows as channel
``neighbour`` (rank: the lifting candidate's rank; score: ``lift`` × its score; lifted by
several, its score combines every lift and the strongest lifter is shown). A turn among
the `top` that a better one lifted lifts its own neighbours from its lifted score, so a very
strong turn reaches two turns away (measured: LoCoMo turns R@10 0.691 without that chaining,
0.697 with it). Measured in docs/BENCHMARKS.md ("Conversation evidence windows").

A turn of small talk lifts nothing (`conversation.extract.is_small_talk`: "Haha okay, back to
work." matched "Where do I work now?" by its one word, and lifted the assistant's replies around
it above the answer); it is scaled down later (`group`'s ``small_talk``), but would have lent
its neighbours its score first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..conversation.extract import is_small_talk
from ..model import Candidate, ChannelScore
from .context import Fetch, attach_entries
from .fuse import ordered

if TYPE_CHECKING:
    from ..store.base import Filters
    from .context import SearchContext

#: the store's ``turn_neighbours(rowids, span, namespace, filters)``: (offset, rowid) pairs
TurnNeighbours = Callable[[Sequence[int], int, "str | None", "Filters"], "dict[int, list[tuple[int, int]]]"]


@dataclass(frozen=True, slots=True)
class NeighboursConfig:
    """Lift the neighbours of the `top` best candidates by `lift` × their score (unset: off),
    combined with a neighbour's own score by `combine` (``"max"`` or ``"or"``)."""

    lift: float | None = None
    top: int = 10
    span: int = 1
    combine: str = "max"

    @property
    def active(self) -> bool:
        return bool(self.lift)


class NeighboursStage:
    """Built with the preset's ``[neighbours]`` and the store's ``turn_neighbours``."""

    name = "neighbours"

    def __init__(self, conf: NeighboursConfig, turn_neighbours: TurnNeighbours, fetch: Fetch | None = None) -> None:
        self.conf, self.turn_neighbours, self.fetch = conf, turn_neighbours, fetch

    def __call__(self, ctx: "SearchContext", candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        conf = self.conf
        if not conf.active:
            rec["skipped"] = "no [neighbours] lift set"
            return candidates
        lift = float(conf.lift or 0.0)
        top = [c for c in candidates[: conf.top] if c.score > 0]  # a lift of a negative score means nothing
        around = self.turn_neighbours([c.rowid for c in top], conf.span, ctx.namespace, ctx.filters)
        if not any(around.values()):
            rec["skipped"] = "no conversation turns (with neighbours) among the best candidates"
            return candidates
        if self.fetch is not None:  # read only where there are turns to lift
            lifters = [c for c in top if around.get(c.rowid)]
            chatter = {c.rowid for c in attach_entries(self.fetch, lifters) if c.entry is not None
                       and c.entry.kind == "turn" and is_small_talk(c.entry.text, c.entry.source.speaker)}
            if chatter:
                top = [c for c in top if c.rowid not in chatter]
                rec["small_talk"] = len(chatter)
        by_rowid = {c.rowid: c for c in candidates}
        lifted = added = 0
        for rank, first in enumerate(top, start=1):
            parent = by_rowid[first.rowid]  # lifted already by a better one: lifts from there
            for _, rowid in around.get(parent.rowid, []):
                evidence = lift * parent.score
                cand = by_rowid.get(rowid)
                score = combined(cand.score if cand is not None else None, evidence, conf.combine)
                if cand is not None and score <= cand.score:
                    continue
                if cand is None:
                    added += 1
                    cand = Candidate(rowid=rowid, score=score)
                lifted += 1
                # A new candidate, not the old one rescored: the fused ranking stays as it was.
                # Lifted by several turns, its score combines every lift and the evidence shown
                # is the strongest lifter's (the one that explains most of the lift).
                shown = cand.channels.get("neighbour")
                if shown is None or evidence > shown.score:
                    shown = ChannelScore(rank=rank, score=round(evidence, 6))
                by_rowid[rowid] = replace(cand, score=score, channels={**cand.channels, "neighbour": shown})
        rec.update({"lift": lift, "span": conf.span, "top": conf.top, "combine": conf.combine,
                    "lifted": lifted, "added": added})
        return ordered(by_rowid) if lifted else candidates


def combined(own: float | None, evidence: float, how: str) -> float:
    """A turn's score from its own (None: no channel found it) and its neighbour's evidence."""
    if how == "or":  # both are probabilities: relevant by either
        p = min(max(own, 0.0), 1.0) if own is not None else 0.0
        return 1.0 - (1.0 - p) * (1.0 - min(max(evidence, 0.0), 1.0))
    return evidence if own is None else max(own, evidence)


COMBINE = ("max", "or")


def parse_neighbours(section: dict[str, Any], check: Any) -> NeighboursConfig:
    if not section:
        return NeighboursConfig()
    return NeighboursConfig(lift=check.number("neighbours", section, "lift", None, 0.0, 1.0),
                            top=check.integer("neighbours", section, "top", 10, high=1000) or 10,
                            span=check.integer("neighbours", section, "span", 1, high=20) or 1,
                            combine=check.choice("neighbours", section, "combine", "max", COMBINE))
