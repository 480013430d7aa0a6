"""Write-side importers: JSONL files of entries and folders of notes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError
from .jsonl import import_jsonl, read_jsonl_entries
from .notes import NOTE_SUFFIXES, import_notes

if TYPE_CHECKING:  # pragma: no cover
    from ..memory import Memory

__all__ = ["import_path", "import_jsonl", "import_notes", "read_jsonl_entries", "NOTE_SUFFIXES"]


def import_path(memory: "Memory", path: Path, *, namespace: str,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Dispatch on what `path` is: a folder of notes, a ``.jsonl`` file or a single note."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return import_notes(memory, path, namespace=namespace, progress=progress)
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return import_jsonl(memory, path, namespace=namespace, progress=progress)
    if path.suffix.lower() in NOTE_SUFFIXES:
        return import_notes(memory, path, namespace=namespace, progress=progress)
    raise InputError(f"{path}: expected a folder, a .jsonl file or a {'/'.join(NOTE_SUFFIXES)} note")
