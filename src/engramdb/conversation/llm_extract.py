"""The LLM fact extractor: SimpleMem's lossless restatement through an OpenAI-compatible chat model.

Turns are sent in overlapping windows (default 40 turns, overlap 2). The model answers
JSON validated with pydantic; each fact must name the ids of the turns it came from, and
ids outside the window are rejected so provenance cannot be invented. A window that still
fails after the client's retries is reported in the result's ``failures`` (its turns are
stored anyway, as raw turns), never silently dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_validator

from ..model import Entry, Source
from .extract import ExtractionResult
from .model import Conversation, Turn, as_utc

if TYPE_CHECKING:  # pragma: no cover
    from ..llm import LLMClient

SYSTEM_PROMPT = """You turn dialogue into memory entries for later retrieval.
Write every fact worth remembering as one self-contained sentence:
- no pronouns: use people's names (the speaker of a turn is given before its text);
- absolute dates: resolve "yesterday", "last week", "next month" against the turn's time;
- one fact per sentence; skip greetings and small talk.
Answer with JSON only: {"facts": [{"text": str, "source_turns": [turn ids], "persons": [str],
"entities": [str], "keywords": [str], "location": str|null, "topic": str|null,
"time": "YYYY-MM-DD"|null}]}. "source_turns" must list the ids (as given) of the turns
the fact comes from; "time" is when the event happened, if known."""


class ExtractedFact(BaseModel):
    """One fact as the model must return it."""

    text: str = Field(min_length=3)
    source_turns: list[str] = Field(min_length=1)
    persons: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    location: str | None = None
    topic: str | None = None
    time: str | None = None

    @field_validator("time")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value:
            as_utc(value)  # raises ValueError -> a validation error the model is told about
        return value or None


class ExtractionReply(BaseModel):
    facts: list[ExtractedFact]


def _validator(allowed: set[str]):  # type: ignore[no-untyped-def]
    def validate(data: Any) -> ExtractionReply:
        reply = ExtractionReply.model_validate(data)
        for fact in reply.facts:
            unknown = [t for t in fact.source_turns if t not in allowed]
            if unknown:
                raise ValueError(f"fact {fact.text[:40]!r} cites turn ids not in this window: {unknown}")
        return reply
    return validate


def _render(turns: list[Turn]) -> str:
    lines = []
    for t in turns:
        when = t.timestamp.strftime("%Y-%m-%d %H:%M") if t.timestamp else "unknown time"
        caption = t.metadata.get("image_caption")
        extra = f" [shared a photo: {caption}]" if caption else ""
        lines.append(f"[{t.turn_id}] ({when}) {t.speaker}: {t.text}{extra}")
    return "\n".join(lines)


class LLMExtractor:
    """Facts from an LLM, in windows of ``window`` turns overlapping by ``overlap``."""

    name = "llm"

    def __init__(self, client: "LLMClient", window: int = 40, overlap: int = 2, max_tokens: int | None = 4096) -> None:
        if window < 1 or not 0 <= overlap < window:
            raise ValueError("need window >= 1 and 0 <= overlap < window")
        self.client = client
        self.window = window
        self.overlap = overlap
        self.max_tokens = max_tokens

    def windows(self, turns: list[Turn]) -> list[list[Turn]]:
        step = self.window - self.overlap
        out = []
        for start in range(0, len(turns), step):
            out.append(turns[start : start + self.window])
            if start + self.window >= len(turns):
                break
        return out

    def extract(self, conversation: Conversation, turn_entry_ids: dict[str, str], namespace: str) -> ExtractionResult:
        from ..llm import LLMError

        result = ExtractionResult()
        seen: set[str] = set()
        by_id = {t.turn_id: t for t in conversation.turns}
        for number, window in enumerate(self.windows(conversation.turns)):
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Session {conversation.session_id}. Turns:\n{_render(window)}"},
            ]
            try:
                reply, _ = self.client.chat_json(messages, validate=_validator({t.turn_id for t in window}),
                                                 max_tokens=self.max_tokens, purpose="extract")
            except LLMError as exc:
                result.failures.append({"window": number, "turns": [window[0].turn_id, window[-1].turn_id],
                                        "turn_ids": [t.turn_id for t in window], "error": str(exc)})
                continue
            for fact in reply.facts:
                entry = self._entry(fact, by_id, turn_entry_ids, namespace)
                if entry.id is not None and entry.id not in seen:  # overlapping windows may restate a fact
                    seen.add(entry.id)
                    result.facts.append(entry)
        return result

    def _entry(self, fact: ExtractedFact, by_id: dict[str, Turn], turn_entry_ids: dict[str, str],
               namespace: str) -> Entry:
        first = by_id[fact.source_turns[0]]
        said_at = first.timestamp.isoformat() if first.timestamp else None
        event = as_utc(fact.time) if fact.time else None
        return Entry(
            text=fact.text.strip(),
            kind="fact",
            namespace=namespace,
            timestamp=event.isoformat() if event else said_at,
            persons=fact.persons,
            entities=fact.entities,
            keywords=fact.keywords,
            location=fact.location,
            topic=fact.topic,
            # The text, not a position, identifies an LLM fact; anchoring it at its first turn
            # keeps ids stable when a window boundary moves.
            source=Source(session_id=first.session_id, turn_id=first.turn_id, speaker=first.speaker),
            metadata={"extractor": self.name, **({"said_at": said_at} if said_at else {})},
            derived_from=[turn_entry_ids[t] for t in dict.fromkeys(fact.source_turns) if t in turn_entry_ids],
        ).normalized(namespace)


__all__ = ["LLMExtractor", "ExtractedFact", "ExtractionReply", "SYSTEM_PROMPT"]
