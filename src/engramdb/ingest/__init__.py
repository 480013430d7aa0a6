"""Write-side importers: folders of notes, JSONL files of entries, and conversation files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError
from ..conversation import FORMATS as CONVERSATION_FORMATS
from ..conversation import Extractor, detect_format, ingest_conversations, read_conversations
from ..jsonfile import jsonl_objects
from .dump import import_dump, is_dump
from .jsonl import import_jsonl, read_jsonl_entries
from .notes import NOTE_SUFFIXES, import_notes

if TYPE_CHECKING:  # pragma: no cover
    from ..writer import Writer

__all__ = ["import_path", "import_jsonl", "import_notes", "read_jsonl_entries", "NOTE_SUFFIXES"]


IMPORT_FORMATS = ("notes", "entries", "export", *CONVERSATION_FORMATS)


def import_path(writer: "Writer", path: Path, *, namespace: str,
                progress: Callable[[int, int], None] | None = None, format: str | None = None,
                extractor: "Extractor | None" = None, dump_namespace: str | None = None,
                skip_bad_files: bool = False) -> dict[str, Any]:
    """Dispatch on what `path` is (or on `format`): notes, a JSONL of entries, an Engram
    export (restored into `dump_namespace`, or the namespaces it records), or a conversation."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if format is not None and format not in IMPORT_FORMATS:
        raise InputError(f"unknown format {format!r}; choose one of {', '.join(IMPORT_FORMATS)}")
    if format is None:
        if path.is_dir() or path.suffix.lower() in NOTE_SUFFIXES:
            format = "notes"
        elif path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
            format = "export" if path.suffix.lower() != ".json" and is_dump(_first(path)) else detect_format(path)
        else:
            raise InputError(f"{path}: expected a folder, a .jsonl/.json file or a {'/'.join(NOTE_SUFFIXES)} note")
    if format == "notes":
        return import_notes(writer, path, namespace=namespace, progress=progress, skip_bad_files=skip_bad_files)
    if format == "entries":
        return import_jsonl(writer, path, namespace=namespace, progress=progress)
    if format == "export":
        return import_dump(writer, path, namespace=dump_namespace, progress=progress)
    conversations = read_conversations(path, format)
    report = ingest_conversations(writer, conversations, namespace=namespace, extractor=extractor, progress=progress)
    skipped: dict[str, int] = {}  # messages that are not turns (OpenAI system/tool messages, no text): never silent
    for conversation in conversations:
        for why, n in conversation.skipped.items():
            skipped[why] = skipped.get(why, 0) + n
    return {"path": str(path), "format": format, **report.to_dict(), "skipped": skipped}


def _first(path: Path) -> Any:
    for _, obj in jsonl_objects(path):
        return obj
    return None
