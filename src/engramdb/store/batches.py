"""Write-batch rules every backend applies the same way: which entries are new, unchanged or
changed against their stored form, and what a valid batch looks like."""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from ..errors import EngramError
from ..model import Entry
from .base import EntryTerms


def ids_by_namespace(entries: Sequence[Entry]) -> dict[str, list[str]]:
    """Entry ids grouped by namespace (an id of another namespace is a different entry)."""
    out: dict[str, list[str]] = {}
    for e in entries:
        out.setdefault(e.namespace, []).append(e.id)  # type: ignore[arg-type]
    return out


def split_by_stored(entries: Sequence[Entry], stored: dict[tuple[str, str], str],
                    ) -> tuple[list[Entry], list[str], list[Entry]]:
    """(new, unchanged ids, changed) given each stored entry's JSON by (namespace, id)."""
    new: list[Entry] = []
    unchanged: list[str] = []
    changed: list[Entry] = []
    for entry in entries:
        key = (entry.namespace, entry.id)
        if key not in stored:
            new.append(entry)
            continue
        old = json.loads(stored[key])  # type: ignore[index]
        old.setdefault("timestamp_end", None)  # written before schema 2
        for name, empty in (("expires_at", None), ("supersedes", []), ("superseded_by", None)):
            old.setdefault(name, empty)  # written before schema 4
        if entry.superseded_by is None and old["superseded_by"]:
            # The store sets this link; adding the old text again must not undo it.
            entry.superseded_by = old["superseded_by"]
        mine = entry.to_dict()
        mine["created_at"] = old.get("created_at")
        if old == mine:
            unchanged.append(entry.id)  # type: ignore[arg-type]
        else:
            changed.append(entry)
    return new, unchanged, changed


def check_batch(namespace: str, entries: Sequence[Entry], vectors: np.ndarray | None,
                terms: Sequence[EntryTerms]) -> None:
    """One namespace, and one vector and one analysed term set per entry."""
    if vectors is not None and len(vectors) != len(entries):
        raise EngramError(f"{len(entries)} entries but {len(vectors)} vectors")
    if len(terms) != len(entries):
        raise EngramError(f"{len(entries)} entries but {len(terms)} analysed term sets")
    if any(e.namespace != namespace for e in entries):
        raise EngramError("a write batch holds entries of one namespace")
