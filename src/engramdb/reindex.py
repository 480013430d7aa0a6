"""Re-analyse a store's text in place: every entry's index terms written again by the current
analysis, its vector, fields, history and place in its session kept.

The terms an entry is found by are computed when it is written (`writer.entry_terms`). When
Engram learns to read more of a text — the pinyin keys of Chinese names (`text/romanize.py`)
— entries written before have none of it until they are written again. `reindex` writes each
one again with the stored vector (nothing is embedded), without a history event (nothing the
user wrote changed), as a compare-and-swap per batch: an entry another process changed in the
meantime was written with the current analysis already and is left as it is.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .errors import InputError, WriteConflictError
from .model import Entry
from .store.base import Store
from .writer import entry_terms

Progress = Callable[[int, int], None]


def reindex(store: Store, namespace: str | None, *, batch_size: int = 256,
            progress: Progress | None = None) -> dict[str, Any]:
    """Write the index terms of every entry of `namespace` (None: every namespace) again.

    Returns ``{"entries", "reindexed", "skipped", "namespaces"}``: `skipped` counts entries
    another writer changed during the run (already current) or without a stored vector."""
    if batch_size < 1:
        raise InputError("batch_size must be at least 1")
    total = store.count(namespace)
    report: dict[str, Any] = {"entries": total, "reindexed": 0, "skipped": 0, "namespaces": []}
    done = 0
    if progress is not None:
        progress(0, total)

    def flush(batch: list[Entry], places: dict[str, int]) -> None:
        nonlocal done
        name = str(batch[0].namespace)
        if name not in report["namespaces"]:
            report["namespaces"].append(name)
        vectors = store.stored_vectors(name, {_id(e): e.text for e in batch})
        kept = [e for e in batch if _id(e) in vectors]
        report["skipped"] += len(batch) - len(kept)
        if _write(store, name, kept, vectors, places):
            report["reindexed"] += len(kept)
        else:  # one of them changed meanwhile: the others one by one
            for entry in kept:
                report["reindexed" if _write(store, name, [entry], vectors, places) else "skipped"] += 1
        done += len(batch)
        if progress is not None:
            progress(done, total)

    batch: list[Entry] = []
    places: dict[str, int] = {}
    for entry, place in store.iter_entries(namespace):
        if batch and (entry.namespace != batch[0].namespace or len(batch) >= batch_size):
            flush(batch, places)
            batch, places = [], {}
        batch.append(entry)
        places[_id(entry)] = place
    if batch:
        flush(batch, places)
    return report


def _id(entry: Entry) -> str:
    """A stored entry's id (every stored entry has one)."""
    return str(entry.id)


def _write(store: Store, namespace: str, entries: Sequence[Entry], vectors: dict[str, np.ndarray],
           places: dict[str, int]) -> bool:
    """Write `entries` again as they were read (False: another writer changed one meanwhile)."""
    if not entries:
        return True
    matrix = np.stack([vectors[_id(e)] for e in entries]).astype(np.float32)
    try:
        store.upsert(namespace, entries, matrix, [entry_terms(e) for e in entries], replace=[_id(e) for e in entries],
                     log=False, expect={_id(e): e for e in entries}, places=places)
    except WriteConflictError:
        return False
    return True
