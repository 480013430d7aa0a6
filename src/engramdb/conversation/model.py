"""Conversations as Engram sees them: sessions of turns, each turn with speaker and time."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from ..model import Entry, Source, normalize_timestamp


@dataclass(slots=True)
class Turn:
    """One utterance. ``timestamp`` is absolute (UTC); ``turn_id`` is unique within its session.
    Given to `Memory.add_conversation`, ``Turn(speaker, text)`` is enough: an empty ``turn_id``
    is numbered, and an empty ``session_id`` is the call's."""

    speaker: str
    text: str
    turn_id: str = ""
    session_id: str = ""
    timestamp: datetime | None = None
    role: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def entry_text(self) -> str:
        """What a ``turn`` entry stores: speaker-prefixed text plus any image caption."""
        text = f"{self.speaker}: {self.text}"
        caption = self.metadata.get("image_caption")
        return f"{text} [shared a photo: {caption}]" if caption else text

    def to_entry(self, namespace: str) -> Entry:
        """The raw ``turn`` entry (normalised, with its stable id)."""
        meta = {k: v for k, v in self.metadata.items() if v is not None}
        if self.role:
            meta["role"] = self.role
        return Entry(
            text=self.entry_text(),
            kind="turn",
            namespace=namespace,
            timestamp=self.timestamp.isoformat() if self.timestamp else None,
            persons=[self.speaker],
            source=Source(session_id=self.session_id, turn_id=self.turn_id, speaker=self.speaker),
            metadata=meta,
        ).normalized(namespace)


@dataclass(slots=True)
class Conversation:
    """One session of turns. ``conversation_id`` groups sessions of the same dialogue."""

    session_id: str
    turns: list[Turn]
    session_time: datetime | None = None
    conversation_id: str | None = None
    participants: list[str] = field(default_factory=list)
    #: the id versions before 2026-12-02 gave a session read without one ("session_1", …):
    #: re-importing the file replaces that session when its first turns are these
    legacy_session_id: str | None = None
    #: messages of the file that are not turns, by why: a skipped role (``system``, ``tool``…)
    #: or ``"no text"`` (a message that only called a tool, or empty content)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def speakers(self) -> list[str]:
        """Everyone who speaks, in order of first appearance (``participants`` first: people
        known to be in the session from turns stored earlier)."""
        return list(dict.fromkeys([*self.participants, *(t.speaker for t in self.turns)]))


def as_utc(value: str | datetime | None) -> datetime | None:
    """A datetime in UTC from ISO text or a datetime, by the store's timezone rule (naive means
    UTC; see `normalize_timestamp`). Raises ValueError for text that is not ISO 8601."""
    normalized = normalize_timestamp(value)
    return datetime.fromisoformat(normalized) if normalized else None


def default_session_id(turns: Sequence[Turn], start: datetime | None = None) -> str:
    """A session id for turns that came without one: from the first three turns (and the
    session's start, when known), so the same conversation gets the same id when it is written
    again — also with turns appended after its third — and a different conversation does not
    take its place."""
    key = "\x1e".join(f"{t.speaker}\x1f{t.text}" for t in turns[:3])
    if start is not None:
        key += "\x1d" + start.astimezone(timezone.utc).isoformat()  # the same id whatever the offset
    return f"session-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
