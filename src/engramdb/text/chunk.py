"""Split notes into chunks that keep their heading path (Markdown-aware, CJK-aware)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")


@dataclass(slots=True)
class Chunk:
    text: str
    heading_path: list[str] = field(default_factory=list)


def text_size(text: str) -> int:
    """A rough token count: CJK characters count one each, other text one per word."""
    cjk = len(_CJK.findall(text))
    return cjk + len(_CJK.sub(" ", text).split())


def _split_long(paragraph: str, max_size: int) -> list[str]:
    pieces, current = [], ""
    for sentence in (s for s in _SENTENCE.split(paragraph) if s.strip()):
        candidate = f"{current} {sentence}".strip() if current and not _CJK.search(sentence[:1]) else current + sentence
        if current and text_size(candidate) > max_size:
            pieces.append(current.strip())
            current = sentence
        else:
            current = candidate
    if current.strip():
        pieces.append(current.strip())
    return pieces


def chunk_markdown(text: str, max_size: int = 160) -> list[Chunk]:
    """Chunks of at most ~``max_size`` tokens, never crossing a heading.

    Each chunk records the path of headings above it (``["Project XYZ", "Decisions"]``);
    paragraphs are packed together up to the size, long paragraphs split at sentence ends.
    """
    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []
    paragraphs: list[str] = []

    def flush() -> None:
        heading = [title for _, title in path]
        current = ""
        for paragraph in paragraphs:
            for piece in _split_long(paragraph, max_size) if text_size(paragraph) > max_size else [paragraph]:
                candidate = f"{current}\n\n{piece}" if current else piece
                if current and text_size(candidate) > max_size:
                    chunks.append(Chunk(current, heading))
                    current = piece
                else:
                    current = candidate
        if current.strip():
            chunks.append(Chunk(current, heading))
        paragraphs.clear()

    block: list[str] = []
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            if block:
                paragraphs.append("\n".join(block).strip())
                block = []
            flush()
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2))]
        elif not line.strip():
            if block:
                paragraphs.append("\n".join(block).strip())
                block = []
        else:
            block.append(line.rstrip())
    if block:
        paragraphs.append("\n".join(block).strip())
    flush()
    return [c for c in chunks if c.text.strip()]
