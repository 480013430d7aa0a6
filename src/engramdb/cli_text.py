"""What the CLI prints for people: stored text without terminal control.

An entry's text comes from anyone with a write key, an imported chat or a notes folder, and a
terminal obeys what it prints: an OSC sequence sets the window title or writes the clipboard
(``ESC ] 52 ; c ; …``), BEL rings, backspace and carriage return overwrite what was printed.
Human-readable output drops them; ``--json`` output escapes control characters anyway.
"""

from __future__ import annotations

import re
from typing import Any

import click

# ESC with what follows it: an OSC string up to BEL or ST, a CSI sequence, or one character;
# then any other C0 control but tab and newline, DEL and the C1 controls.
_CONTROL = re.compile(r"\x1b(?:\][^\x07\x1b]*(?:\x07|\x1b\\)?|\[[0-?]*[ -/]*[@-~]?|[\x20-\x7e]?)"
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal escape sequences and control characters (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def echo(message: Any = "", **kwargs: Any) -> None:
    """`click.echo` of `message` made :func:`printable`."""
    click.echo(printable(str(message)), **kwargs)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 entry``, ``2 entries``: a count with its noun in the number it takes."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or (noun[:-1] + 'ies' if noun.endswith('y') and noun[-2:-1] not in 'aeiou' else noun + 's')}"
