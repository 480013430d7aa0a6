"""JSONL of entries: one JSON object per line with the fields of `Entry` (only ``text`` required)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError
from ..model import Entry

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory


def read_jsonl_entries(path: Path, namespace: str) -> list[Entry]:
    """Parse and validate every line first; the first bad line raises `InputError` naming it."""
    entries: list[Entry] = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from exc
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
            try:
                entry = Entry.from_dict(data)
                entries.append(entry.normalized(entry.namespace if "namespace" in data else namespace))
            except (ValueError, TypeError) as exc:
                raise InputError(f"{path}:{number}: {exc}") from exc
    return entries


def import_jsonl(memory: "Memory", path: Path, *, namespace: str, batch_size: int = 256,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    entries = read_jsonl_entries(path, namespace)
    written = unchanged = 0
    for start in range(0, len(entries), batch_size):
        w, u = memory.write_batch(entries[start : start + batch_size])
        written += w
        unchanged += u
        if progress is not None:
            progress(min(start + batch_size, len(entries)), len(entries))
    return {"path": str(path), "entries": len(entries), "written": written, "unchanged": unchanged, "removed": 0}
