"""A folder of ``.md``/``.txt`` notes: each file is chunked, keeping its path and heading path.

A file is known by its absolute path (``doc_id``); ``path`` is the path under the folder
imported, for reading and filtering. So two folders that each hold ``notes.md`` are two
documents, and importing a subfolder of one already imported replaces its files' chunks
rather than adding them again. Re-importing is incremental: unchanged chunks are skipped;
chunks of a changed file that no longer exist are removed in the same transaction as the new
ones are written, and the chunks of a file deleted from the folder since are removed too.
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
        text = file.read_text(encoding="utf-8").removeprefix("\ufeff")  # a byte-order mark hid the first heading
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    entries = []
    try:
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
    except (ValueError, TypeError) as exc:  # a NUL character, a lone surrogate: name the file
        raise InputError(f"{file}: {exc}") from None
    return entries


def import_notes(writer: "Writer", root: Path, *, namespace: str,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    base = root if root.is_dir() else root.parent
    # Every file is read and checked before the first is written: a bad file anywhere in the
    # folder writes nothing. A file reached twice (a symlink beside its target) is one file:
    # both are known by the file they resolve to, and each would replace the other's chunks.
    notes: list[tuple[str, str, list[Entry]]] = []
    seen: set[str] = set()
    for file in note_files(root):
        doc_id = file.resolve().as_posix()
        if doc_id in seen:
            continue
        seen.add(doc_id)
        rel = file.relative_to(base).as_posix()
        notes.append((rel, doc_id, note_entries(file, rel, namespace, doc_id)))
    written = unchanged = removed = chunks = 0
    for done, (rel, doc_id, entries) in enumerate(notes, start=1):
        # Before 2026-12-02 a file was known by its path under the folder imported: its chunks
        # give way to the file's, as that version's own re-import would have replaced them.
        legacy = writer.store.ids(namespace, Filters(doc_id=rel, path=rel, kinds=["chunk"]))
        w, u, r = writer.write(entries, namespace=namespace, replaces=Filters(doc_id=doc_id), removes=legacy,
                               keep_stored_fields=True)
        written, unchanged, removed, chunks = written + w, unchanged + u, removed + r, chunks + len(entries)
        if progress is not None:
            progress(done, len(notes))
    # A file deleted from the folder since it was imported: its chunks go too, as an emptied
    # file's do (each file's own transaction); only files under this folder, other imports kept.
    for doc_id in _files_gone(writer, root, namespace, seen) if root.is_dir() else ():
        removed += writer.write([], namespace=namespace, replaces=Filters(doc_id=doc_id), keep_stored_fields=True)[2]
    return {"path": str(root), "files": len(notes), "entries": chunks, "written": written,
            "unchanged": unchanged, "removed": removed}


def _files_gone(writer: "Writer", root: Path, namespace: str, present: set[str]) -> list[str]:
    """The files under `root` whose chunks the namespace holds but the folder no longer does."""
    prefix = root.resolve().as_posix().rstrip("/") + "/"
    gone: dict[str, None] = {}
    after: int | None = None
    while True:  # one pass over the namespace's chunks, a page at a time
        page, after = writer.store.page(namespace, Filters(kinds=["chunk"], include_superseded=True),
                                        newest_first=False, limit=1000, after=after)
        for entry in page:
            doc_id = entry.source.doc_id
            if doc_id and doc_id.startswith(prefix) and doc_id not in present:
                gone[doc_id] = None
        if after is None:
            return list(gone)
