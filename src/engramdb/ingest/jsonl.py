"""JSONL of entries: one JSON object per line with the fields of `Entry` (only ``text`` required)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError
from ..jsonfile import jsonl_objects
from ..model import Entry

if TYPE_CHECKING:  # pragma: no cover
    from ..writer import Writer


def read_jsonl_entries(path: Path, namespace: str) -> list[Entry]:
    """Parse and validate every line first; the first bad line raises `InputError` naming it.

    Every entry goes to `namespace`: a line naming another namespace is refused.
    """
    return [entry for _, entry in _numbered_entries(path, namespace)]


def _numbered_entries(path: Path, namespace: str) -> list[tuple[int, Entry]]:
    """(line number, entry) for every line; two lines naming one id with different texts are
    refused (the first would be lost without a word)."""
    entries: list[tuple[int, Entry]] = []
    seen: dict[str, tuple[int, str]] = {}
    for number, data in jsonl_objects(path):
        try:
            entry = Entry.from_dict(data).normalized(namespace)
        except (ValueError, TypeError, RecursionError) as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
        earlier = seen.setdefault(entry.id or "", (number, entry.text))
        if earlier[1] != entry.text:
            raise InputError(f"{path}:{number}: id {entry.id} is also line {earlier[0]}'s, with another text; "
                             "an id names one entry")
        entries.append((number, entry))
    return entries


def import_jsonl(writer: "Writer", path: Path, *, namespace: str, batch_size: int = 256,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    from ..lifecycle import check_derived_from, new_links

    numbered = _numbered_entries(path, namespace)
    entries = [entry for _, entry in numbered]
    check_derived_from(writer.store, namespace, entries, lambda index: f"{path}:{numbered[index][0]}")
    if new_links(writer.store, namespace, entries, lambda index: f"{path}:{numbered[index][0]}"):
        raise InputError(f"{path}: an entry's supersedes names entries it does not supersede yet; link them with "
                         "`engram add --supersedes` / Memory.add(..., supersedes=[...]), or import an `engram "
                         "export` dump, which keeps both sides")
    written = unchanged = 0
    with writer.store.bulk_load(len(entries)):  # a large import: indexes built once at the end
        for start in range(0, len(entries), batch_size):
            w, u, _ = writer.write(entries[start : start + batch_size], namespace=namespace, keep_stored_fields=True)
            written += w
            unchanged += u
            if progress is not None:
                progress(min(start + batch_size, len(entries)), len(entries))
    return {"path": str(path), "entries": len(entries), "written": written, "unchanged": unchanged, "removed": 0}
