"""Split notes into chunks that keep their heading path (Markdown-aware, CJK-aware).

Markdown as notes apps write it: a fenced code block (```` ``` ```` or ``~~~``) is text, so a
``# comment`` inside it is not a heading and its blank lines do not end a paragraph; a YAML or
TOML front-matter block at the top of the file (Obsidian, Hugo, Jekyll) is metadata, not a
chunk. A paragraph longer than a chunk is split at sentence ends, and a run with none (a
minified line, an unpunctuated Chinese line) at word boundaries, or every ``max_size``
characters for CJK, and a word of more than `WORD_CHARS` characters counts (and is cut) as
several, so no chunk grows past the size however the text is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# An opening fence: up to three spaces, then three or more backticks or tildes.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = {"---": "---", "+++": "+++"}  # YAML, TOML
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s*")
#: A "word" longer than this (a base64 blob, a minified line without spaces) counts one per this
#: many characters and is cut there: one such word was one chunk of any length.
WORD_CHARS = 200
# A word (of at most WORD_CHARS characters), or one CJK character (each counts one, `text_size`),
# with the spaces after it.
_PIECE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]\s*|[^\s\u3400-\u9fff\uf900-\ufaff]{1,%d}\s*|\s+" % WORD_CHARS)


@dataclass(slots=True)
class Chunk:
    text: str
    heading_path: list[str] = field(default_factory=list)


def text_size(text: str) -> int:
    """A rough token count: CJK characters count one each, other text one per word."""
    cjk = len(_CJK.findall(text))
    return cjk + sum(-(-len(word) // WORD_CHARS) for word in _CJK.sub(" ", text).split())


def _by_size(run: str, max_size: int) -> list[str]:
    """A run without sentence ends cut into pieces of `max_size` words / CJK characters."""
    pieces, current, size = [], "", 0
    for match in _PIECE.finditer(run):
        token = match.group()
        counted = 1 if token.strip() else 0
        if size + counted > max_size and current.strip():
            pieces.append(current.strip())
            current, size = "", 0
        current, size = current + token, size + counted
    if current.strip():
        pieces.append(current.strip())
    return pieces


def _split_long(paragraph: str, max_size: int) -> list[str]:
    pieces, current = [], ""
    sentences = (s for s in _SENTENCE.split(paragraph) if s.strip())
    for sentence in (p for s in sentences for p in (_by_size(s, max_size) if text_size(s) > max_size else [s])):
        candidate = f"{current} {sentence}".strip() if current and not _CJK.search(sentence[:1]) else current + sentence
        if current and text_size(candidate) > max_size:
            pieces.append(current.strip())
            current = sentence
        else:
            current = candidate
    if current.strip():
        pieces.append(current.strip())
    return pieces


def _without_front_matter(lines: list[str]) -> list[str]:
    """The lines after a front-matter block that opens the file (none: all of them)."""
    close = _FRONT_MATTER.get(lines[0].strip()) if lines else None
    if close is None:
        return lines
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() == close:
            return lines[number + 1:]
    return lines  # never closed: a horizontal rule, not front matter


def chunk_markdown(text: str, max_size: int = 160) -> list[Chunk]:
    """Chunks of at most ~``max_size`` tokens, never crossing a heading.

    Each chunk records the path of headings above it (``["Project XYZ", "Decisions"]``);
    paragraphs are packed together up to the size, long paragraphs split at sentence ends
    (else at words); a fenced code block is one paragraph and holds no headings.
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
    fence: str | None = None  # the open fence's marker, while inside a code block
    # Whether anything (text, or a heading under it) followed the latest heading: a heading with
    # nothing under it is a note of its own ("# Dentist appointment Friday 3pm", a list of tasks
    # written as headings), kept as a chunk of its heading path alone.
    bare = False

    def close_bare(level: int) -> None:
        if bare and path and level <= path[-1][0]:
            chunks.append(Chunk("", [title for _, title in path]))

    for line in _without_front_matter(text.splitlines()):
        opening = _FENCE.match(line)
        if fence is not None:
            bare = False
            block.append(line.rstrip())
            # A closing fence: the same character, at least as long, nothing after it.
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip().lstrip(fence[0]):
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            bare = False
            block.append(line.rstrip())
            continue
        match = _HEADING.match(line)
        if match:
            if block:
                paragraphs.append("\n".join(block).strip())
                block = []
            flush()
            level = len(match.group(1))
            close_bare(level)
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, match.group(2))]
            bare = True
        elif not line.strip():
            if block:
                paragraphs.append("\n".join(block).strip())
                block = []
        else:
            bare = False
            block.append(line.rstrip())
    if block:
        paragraphs.append("\n".join(block).strip())
    flush()
    close_bare(0)
    return [c for c in chunks if c.text.strip() or c.heading_path]
