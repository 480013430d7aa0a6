"""A folder of ``.md``/``.txt`` notes: each file is chunked, keeping its path and heading path.

A file is known by its absolute path (``doc_id``); ``path`` is the path under the folder
imported, for reading and filtering. So two folders that each hold ``notes.md`` are two
documents, and importing a subfolder of one already imported replaces its files' chunks
rather than adding them again. Re-importing is incremental: unchanged chunks are skipped;
chunks of a changed file that no longer exist are removed in the same transaction as the new
ones are written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError
from ..model import Entry, Source
from ..store.base import Filters
from ..text.chunk import chunk_markdown

if TYPE_CHECKING:  # pragma: no cover
    from ..writer import Writer

NOTE_SUFFIXES = (".md", ".markdown", ".txt")


def note_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix.lower() in NOTE_SUFFIXES and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def note_entries(file: Path, rel_path: str, namespace: str, doc_id: str | None = None) -> list[Entry]:
    """The chunks of one note file; `doc_id` (the file's identity) defaults to `rel_path`."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    entries = []
    for index, chunk in enumerate(chunk_markdown(text)):
        heading = " > ".join(chunk.heading_path)
        body = f"{heading}\n{chunk.text}" if heading else chunk.text
        entries.append(
            Entry(
                text=body,
                kind="chunk",
                namespace=namespace,
                topic=chunk.heading_path[0] if chunk.heading_path else None,
                source=Source(doc_id=doc_id or rel_path, path=rel_path, chunk_index=index,
                              heading_path=chunk.heading_path),
            ).normalized(namespace)
        )
    return entries


def import_notes(writer: "Writer", root: Path, *, namespace: str,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    files = note_files(root)
    base = root if root.is_dir() else root.parent
    written = unchanged = removed = chunks = 0
    for done, file in enumerate(files, start=1):
        rel = file.relative_to(base).as_posix()
        doc_id = file.resolve().as_posix()
        entries = note_entries(file, rel, namespace, doc_id)
        # Before 2026-12-02 a file was known by its path under the folder imported: its chunks
        # give way to the file's, as that version's own re-import would have replaced them.
        legacy = writer.store.ids(namespace, Filters(doc_id=rel, path=rel, kinds=["chunk"]))
        w, u, r = writer.write(entries, namespace=namespace, replaces=Filters(doc_id=doc_id), removes=legacy,
                               keep_stored_fields=True)
        written, unchanged, removed, chunks = written + w, unchanged + u, removed + r, chunks + len(entries)
        if progress is not None:
            progress(done, len(files))
    return {"path": str(root), "files": len(files), "entries": chunks, "written": written,
            "unchanged": unchanged, "removed": removed}
