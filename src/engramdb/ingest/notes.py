"""A folder of ``.md``/``.txt`` notes: each file is chunked, keeping its path and heading path.

A file is known by its absolute path (``doc_id``); ``path`` is the path under the folder
imported, for reading and filtering. So two folders that each hold ``notes.md`` are two
documents, and importing a subfolder of one already imported replaces its files' chunks
rather than adding them again. Re-importing is incremental: unchanged chunks are skipped;
chunks of a changed file that no longer exist are removed in the same transaction as the new
ones are written, and the chunks of a file deleted from the folder since are removed too.

A chunk keeps its id while its text stays in the file: a section added above it moves it down
(its ``chunk_index`` changes, an update) but does not make it a new entry, so ids an agent
cited stay valid. A file the folder holds under the same relative path as a stored file that
no longer exists (the folder was moved or renamed) takes that file's place, its unchanged
chunks keeping their ids, instead of the store holding both; so does a file new to the folder
for the one file of its name gone from under it (a renamed subfolder, a note moved).

A file that is not text (not UTF-8 or UTF-16 with a byte-order mark, or holding NUL bytes)
fails the import before anything is written, naming the file; with ``skip_bad_files`` a
folder's other files are imported and the skipped ones reported (``skipped_files``), their
chunks from an earlier import kept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..errors import InputError
from ..model import Entry, Source, stable_id
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


def read_note(file: Path) -> str:
    """A note's text: UTF-8 (a byte-order mark dropped: it hid the first heading), or UTF-16
    with its byte-order mark, as Windows editors save "Unicode" text; `InputError` otherwise."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"{file}: {exc.strerror}") from None
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16")
        else:
            text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if "\x00" in text:
        raise InputError(f"{file}: holds NUL bytes at character {text.index(chr(0))}: not a text file")
    return text


def note_entries(file: Path, rel_path: str, namespace: str, doc_id: str | None = None,
                 stored: Sequence[Entry] = ()) -> list[Entry]:
    """The chunks of one note file; `doc_id` (the file's identity) defaults to `rel_path`.

    A chunk's id is that of a `stored` chunk with the same text (the file's earlier import),
    else derived from the file and the text (and which occurrence of that text it is), not from
    its place: a section added above it does not change it."""
    text = read_note(file)
    ids: dict[str, list[str]] = {}
    for entry in stored:
        ids.setdefault(entry.text, []).append(entry.id or "")
    seen: dict[str, int] = {}
    entries = []
    try:
        for index, chunk in enumerate(chunk_markdown(text)):
            heading = " > ".join(chunk.heading_path)
            body = (f"{heading}\n{chunk.text}" if heading else chunk.text).strip()
            occurrence = seen[body] = seen.get(body, -1) + 1
            reused = ids.get(body, [])
            entry_id = reused[occurrence] if occurrence < len(reused) else stable_id(
                namespace, "chunk", Source(doc_id=doc_id or rel_path, chunk_index=occurrence), body)
            entries.append(
                Entry(
                    id=entry_id,
                    text=body,
                    kind="chunk",
                    namespace=namespace,
                    topic=chunk.heading_path[0] if chunk.heading_path else None,
                    source=Source(doc_id=doc_id or rel_path, path=rel_path, chunk_index=index,
                                  heading_path=chunk.heading_path),
                ).normalized(namespace)
            )
    except (ValueError, TypeError) as exc:  # a lone surrogate: name the file
        raise InputError(f"{file}: {exc}") from None
    return entries


def import_notes(writer: "Writer", root: Path, *, namespace: str,
                 progress: Callable[[int, int], None] | None = None, skip_bad_files: bool = False) -> dict[str, Any]:
    base = root if root.is_dir() else root.parent
    # Every file is read and checked before the first is written: a bad file writes nothing
    # (or, asked to, is skipped and reported). A file reached twice (a symlink
    # beside its target) is one file: both are known by the file they resolve to, and each
    # would replace the other's chunks.
    notes: list[tuple[str, str, list[Entry], list[str]]] = []
    seen: set[str] = set()
    skipped: list[dict[str, str]] = []
    files: list[tuple[Path, str, str]] = []
    for file in note_files(root):
        doc_id = file.resolve().as_posix()
        if doc_id not in seen:
            seen.add(doc_id)  # a skipped file is still there: its chunks stay
            files.append((file, doc_id, file.relative_to(base).as_posix()))
    # Files of this folder gone from disk since its last import, by name: a file of the same
    # name that is new here (its subfolder renamed, or it moved to another) takes their place.
    gone = _files_gone(writer, root, namespace, seen) if root.is_dir() else []
    gone_by_name: dict[str, list[str]] = {}
    for doc_id in gone:
        if not os.path.lexists(doc_id):
            gone_by_name.setdefault(doc_id.rsplit("/", 1)[-1], []).append(doc_id)
    for file, doc_id, rel in files:
        if not _is_utf8(doc_id):  # a name from an old archive or another system's copy
            shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
            reason = "its name is not UTF-8 (a store keeps names as text); rename it"
            if not skip_bad_files:
                raise InputError(f"{base / shown}: {reason}; nothing was imported (to import the other notes: "
                                 "--skip-bad-files, skip_bad_files=True)")
            skipped.append({"path": shown, "reason": reason})
            continue
        own = writer.store.ids(namespace, Filters(doc_id=doc_id, kinds=["chunk"]))
        earlier = _earlier_identities(writer, namespace, doc_id, rel)
        if not own and not earlier and len(gone_by_name.get(file.name, [])) == 1:
            earlier = writer.store.ids(namespace, Filters(doc_id=gone_by_name.pop(file.name)[0], kinds=["chunk"]))
        stored = writer.store.get(namespace, [*own, *earlier])
        try:
            entries = note_entries(file, rel, namespace, doc_id, stored)
        except InputError as exc:
            if not skip_bad_files:
                raise InputError(f"{exc}; nothing was imported (to import the other notes: --skip-bad-files, "
                                 "skip_bad_files=True)") from None
            skipped.append({"path": rel, "reason": str(exc).removeprefix(f"{file}: ")})
            continue
        kept = {e.id for e in entries}
        notes.append((rel, doc_id, entries, [i for i in earlier if i not in kept]))
    written = unchanged = removed = chunks = 0
    for done, (rel, doc_id, entries, earlier) in enumerate(notes, start=1):
        w, u, r = writer.write(entries, namespace=namespace, replaces=Filters(doc_id=doc_id), removes=earlier,
                               keep_stored_fields=True)
        written, unchanged, removed, chunks = written + w, unchanged + u, removed + r, chunks + len(entries)
        if progress is not None:
            progress(done, len(notes))
    # A file deleted from the folder since it was imported: its chunks go too, as an emptied
    # file's do (each file's own transaction); only files under this folder, other imports kept.
    # (One that a file of its name took the place of above has none left: nothing to remove.)
    for doc_id in gone:
        removed += writer.write([], namespace=namespace, replaces=Filters(doc_id=doc_id), keep_stored_fields=True)[2]
    report: dict[str, Any] = {"path": str(root), "files": len(notes), "entries": chunks, "written": written,
                              "unchanged": unchanged, "removed": removed}
    if skipped:
        report["skipped_files"] = skipped
    return report


def _is_utf8(name: str) -> bool:
    """Whether a file name decoded by the OS is text (bytes that are not UTF-8 come back as lone
    surrogates, which no store can hold)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _earlier_identities(writer: "Writer", namespace: str, doc_id: str, rel: str) -> list[str]:
    """Chunks stored for this file under another identity, which its chunks take the place of:
    those of a file at the same path under the folder that is gone from disk (the folder was
    moved or renamed since), and, from before 2026-12-02, those a file was known by its path
    under the folder imported."""
    ids = []
    for entry in writer.store.get(namespace, writer.store.ids(namespace, Filters(path=rel, kinds=["chunk"]))):
        other = entry.source.doc_id
        if other == doc_id:
            continue
        if other == rel or (other and os.path.isabs(other) and not os.path.lexists(other)):
            ids.append(entry.id or "")
    return ids


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
