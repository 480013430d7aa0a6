"""Reading JSON and JSONL files that users hand in, with every failure as one clear line.

Lines are decoded one by one, so bad UTF-8 names its line; a UTF-8 byte-order mark at the
start of a file is skipped; NaN/Infinity (not JSON),
integers too long to convert and nesting too deep for the parser are `InputError`s, not
tracebacks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from .errors import InputError

#: the UTF-8 byte-order mark some editors start a file with (Windows Notepad did): no part of the text
BOM = "\ufeff"


def jsonl_objects(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank line; bad UTF-8 or JSON raises `InputError`
    naming the line. Lines are decoded one by one, so an error names where it is."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from exc
    with handle:
        for number, line in text_lines(handle, lambda n, why: InputError(f"{path}:{n}: {why}")):
            if line.strip():
                yield number, parse_json(line, f"{path}:{number}")


def text_lines(handle: IO[bytes], bad_line: Callable[[int, str], Exception]) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a binary file, decoded one by one, a UTF-8 byte-order
    mark at the start skipped; a line that is not UTF-8 raises ``bad_line(number, reason)``."""
    for number, raw in enumerate(handle, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise bad_line(number, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        yield number, line.removeprefix(BOM) if number == 1 else line


def parse_json(text: str, where: str, lines: bool = False) -> Any:
    """`json.loads` with every failure as one `InputError` line: syntax, NaN/Infinity,
    integers too long to convert, nesting too deep for the parser. With `lines`, a syntax
    error names its line (``where:line:``), for a whole file."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        at = f"{where}:{exc.lineno}" if lines else where
        raise InputError(f"{at}: invalid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, or an integer of more than 4,300 digits
        raise InputError(f"{where}: invalid JSON value ({_reason(exc)})") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_json(path: Path) -> Any:
    """The whole file as one JSON value."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_json(text.removeprefix(BOM), str(path), lines=True)


def _reason(exc: ValueError) -> str:
    text = str(exc)
    return "an integer of more than 4,300 digits" if "integer string conversion" in text else text
