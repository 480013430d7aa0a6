"""Dialogue-context queries: an agent often searches with the last few utterances of a
conversation ("<Bart>: "…" <Assistant>: "…" <Bart>: "…"", or one "Speaker: …" per line).
What the user asks now is in the last utterance; a time expression earlier in the chatter
("I barely slept this week") is not the window the question is about."""

from __future__ import annotations

import re

# "<Name>:" tags anywhere, or "Name:" / "Name：" at the start of a line (names up to 40 chars).
_TAG = re.compile(r"<([^<>\n]{1,40})>\s*[:：]")
_LINE = re.compile(r"^[ \t]*([^\s:：<>][^:：<>\n]{0,39})[:：]", re.MULTILINE)


def utterances(query: str) -> list[str]:
    """The utterances of a dialogue-context query (one item: not a dialogue)."""
    for pattern in (_TAG, _LINE):
        marks = list(pattern.finditer(query))
        if len(marks) >= 2:
            ends = [m.start() for m in marks[1:]] + [len(query)]
            return [query[m.end():e].strip().strip('"“”').strip() for m, e in zip(marks, ends)]
    return [query]


def last_utterance(query: str) -> str:
    """The last utterance of a dialogue-context query, or the whole query."""
    parts = [u for u in utterances(query) if u]
    return parts[-1] if parts else query
