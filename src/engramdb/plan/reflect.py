"""Reflection: SimpleMem's sufficiency check, asking an LLM whether the hits answer the question.

`Reflector.judge` makes one chat call per round. When the evidence is incomplete the model
names what is missing and writes up to three short search queries for it; the caller runs
them, merges the hits and judges again, for at most ``max_rounds`` rounds. A failed call
gives no verdict (``complete=None``, ``ok=False``) and no gap queries, so the caller stops instead of
looping on a dead endpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, field_validator

from ..model import Hit
from .model import QueryPlan

if TYPE_CHECKING:  # pragma: no cover
    from ..llm import LLMClient

SYSTEM_PROMPT = """You check whether retrieved memory evidence answers a question.
Read the question and the numbered evidence (each with its time). If the evidence answers
the question completely, say so. If not, say briefly what is missing and write 1-3 short
search queries (a few words each, naming persons and things) that would find the missing
pieces; do not repeat the question.
Answer with JSON only: {"complete": bool, "missing": str, "queries": [str]}"""

_HIT_CHARS = 300  # enough for a fact or a turn; keeps a 10-hit prompt well under 1k tokens


@dataclass(slots=True)
class Judgement:
    """The reflector's verdict on one round of evidence.

    ``gap_queries`` are new searches for the missing pieces (distinct, never the original
    question, empty when ``complete``). ``ok`` is False when the LLM call failed; ``complete``
    is then None (no verdict: the model never judged the hits), ``gap_queries`` empty so a retrieval
    loop stops, and ``reason`` holds the error.
    """

    complete: bool | None
    gap_queries: list[str] = field(default_factory=list)
    reason: str = ""
    ok: bool = True

    def to_dict(self) -> dict[str, Any]:
        """A plain dict for traces and JSON output."""
        return asdict(self)


class ReflectReply(BaseModel):
    """The reflection JSON the model must return."""

    complete: bool
    missing: str = ""
    queries: list[str] = []

    @field_validator("missing", mode="before")
    @classmethod
    def _missing(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("queries", mode="before")
    @classmethod
    def _queries(cls, value: Any) -> Any:
        return [] if value is None else value  # models often send null for "no queries"


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_hits(hits: Sequence[Hit], limit: int = _HIT_CHARS) -> str:
    """Numbered evidence lines ``[n] (time) text``, each text cut to ``limit`` characters."""
    if not hits:
        return "(no evidence found)"
    return "\n".join(f"[{n}] ({h.entry.timestamp or 'unknown time'}) {_one_line(h.text, limit)}"
                     for n, h in enumerate(hits, 1))


class Reflector:
    """Judges evidence sufficiency with one chat call per round (``max_rounds`` is for the caller's loop)."""

    def __init__(self, client: LLMClient, max_rounds: int = 2, max_gap_queries: int = 3, max_tokens: int = 500,
                 max_hits: int = 10) -> None:
        self.client = client
        self.max_rounds = max_rounds
        self.max_gap_queries = max_gap_queries
        self.max_tokens = max_tokens
        self.max_hits = max_hits  # the top hits shown; the rest rarely change the verdict and cost tokens

    def judge(self, query: str, plan: QueryPlan, hits: Sequence[Hit]) -> Judgement:
        """Whether ``hits`` answer ``query``; if not, the searches that may fill the gap. Never raises."""
        try:
            reply, _ = self.client.chat_json(self._messages(query, plan, hits), validate=ReflectReply.model_validate,
                                             max_tokens=self.max_tokens, purpose="reflect")
        except Exception as exc:  # noqa: BLE001 - a failed check must end the loop, not the search
            return Judgement(complete=None, reason=_one_line(str(exc), 300) or type(exc).__name__, ok=False)
        missing = reply.missing.strip()
        if reply.complete:
            return Judgement(complete=True, reason=missing or "the evidence answers the question")
        # Queries already searched (the question and the plan's sub-queries) would only bring back the same hits.
        seen = {q.strip().lower() for q in (query, *plan.sub_queries)}
        gaps: list[str] = []
        for q in reply.queries:
            q = q.strip()
            if q and q.lower() not in seen:
                seen.add(q.lower())
                gaps.append(q)
        return Judgement(complete=False, gap_queries=gaps[: self.max_gap_queries],
                         reason=missing or "the evidence is incomplete")

    def _messages(self, query: str, plan: QueryPlan, hits: Sequence[Hit]) -> list[dict[str, Any]]:
        window = (f"{plan.time_start.date() if plan.time_start else '...'} to "
                  f"{plan.time_end.date() if plan.time_end else '...'} (end exclusive)"
                  if plan.time_start or plan.time_end else "none")
        user = (f"Question: {query}\nIntent: {plan.intent}\nPersons: {', '.join(plan.persons) or 'none'}\n"
                f"Time window: {window}\nEvidence:\n{render_hits(list(hits)[: self.max_hits])}")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


__all__ = ["Judgement", "ReflectReply", "Reflector", "render_hits", "SYSTEM_PROMPT"]
