"""Copy a whole store to another, across backends: `engram migrate SRC DST` (SQLite file →
PostgreSQL database and back, or file → file).

Everything is carried as stored: every namespace, every entry with all its fields (ids,
``created_at``, provenance, supersede links, expiry — expired and superseded entries too),
its vector as stored (nothing is embedded again: the destination records the source's
model), and the whole history (also of deleted entries). The destination's own indexes are
built by its `Store.upsert` from the same analysed terms the write path makes, so searches
give the same ids and scores on both.

Safety: the destination must be empty (no entries, no history) unless ``into_nonempty``;
then entries it already holds unchanged are skipped, entries it holds under the same
namespace and id with other content are replaced by the source's (counted as
``replaced``, and logged in the destination's history as an ``UPDATE`` by ``migrate``), and history events already logged are not added twice — so a migrate
interrupted halfway completes when run again with ``into_nonempty``. A destination built
with another embedding model is refused (`ModelMismatchError`): use ``engram export`` /
``engram import`` with ``--embedder`` to re-embed instead. The source is only read; do not
write to it while it is copied (an entry changed meanwhile is reported, not copied half).

Entries are written in batches of `batch_size` (one transaction each) in the source's rowid
order, each with its session place (`Store.iter_entries`), so both of the source's orders are
kept: the rowid order — `list`'s order, where an updated entry moved to the newest position,
and the tie-break of equal scores — and each turn's place in its session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from .errors import EngramError, InputError, ModelMismatchError
from .model import Entry
from .store.base import Store
from .store.open import backend_of, open_store, redact, store_exists
from .writer import entry_terms

Progress = Callable[[int, int], None]


def _first(items: Iterator[Any]) -> bool:
    """Whether a stream yields anything (closing it after the first item)."""
    try:
        for _ in items:
            return True
        return False
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


def _same_target(a: str, b: str) -> bool:
    if backend_of(a) == backend_of(b) == "sqlite":
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    return a == b


def migrate_stores(source: Store, destination: Store, *, into_nonempty: bool = False, batch_size: int = 256,
                   progress: Progress | None = None) -> dict[str, Any]:
    """Copy every namespace, entry, vector and history event of `source` into `destination`
    (both open; neither is closed). Returns a report (see `migrate`)."""
    if batch_size < 1:
        raise InputError("batch_size must be at least 1")
    dst_entries = destination.count(None)
    if not into_nonempty and (dst_entries or _first(destination.iter_history(None))):
        raise InputError(f"destination {destination.location} is not empty ({dst_entries} entries or history); "
                         "migrate into an empty store, or pass --into-nonempty to merge into it "
                         "(entries with the same namespace and id are replaced by the source's)")
    model = source.recorded_embedder()
    total = source.count(None)
    if total and model is None:
        raise EngramError(f"source {source.location} holds entries but records no embedding model")
    recorded = destination.recorded_embedder()
    if model is not None and recorded is not None and recorded != model:
        raise ModelMismatchError(
            f"destination {destination.location} holds vectors from {recorded!r}, the source from {model!r}; "
            "a migrate carries vectors as they are. Migrate into a new store, or re-embed with "
            "`engram export` + `engram --embedder … import`.")
    report: dict[str, Any] = {"source": source.location, "destination": destination.location, "embedder": model,
                              "entries": total, "written": 0, "unchanged": 0, "replaced": 0,
                              "history": 0, "history_restored": 0}
    done = 0
    if progress is not None:
        progress(0, total)

    places: dict[str, int] = {}  # the batch's session places, by id

    def flush(namespace: str, batch: list[Entry]) -> None:
        nonlocal done
        vectors = source.stored_vectors(namespace, {e.id: e.text for e in batch})  # type: ignore[misc]
        missing = [e.id for e in batch if e.id not in vectors]
        if missing:
            raise EngramError(f"source entry {namespace}/{missing[0]} has no stored vector matching its text "
                              "(was the source written during the migrate?); run again with --into-nonempty")
        if model is not None and destination.embedder_name is None:
            destination.bind_embedder(model, int(len(next(iter(vectors.values())))))
        new, unchanged, changed = destination.classify(batch)
        todo = new + changed
        written = 0
        if new:  # their history comes from the source's, below
            matrix = np.stack([vectors[e.id] for e in new]).astype(np.float32)  # type: ignore[index]
            written, _ = destination.upsert(namespace, new, matrix, [entry_terms(e) for e in new], log=False,
                                            places=places)
        if changed:
            # Replacing what the destination holds is a change there: logged as an UPDATE
            # (actor "migrate"), so its history ends at the version it now has.
            matrix = np.stack([vectors[e.id] for e in changed]).astype(np.float32)  # type: ignore[index]
            written += destination.upsert(namespace, changed, matrix, [entry_terms(e) for e in changed],
                                          replace=[e.id for e in changed], actor="migrate",  # type: ignore[misc]
                                          places=places)[0]
        report["written"] += written
        report["unchanged"] += len(unchanged) + len(todo) - written
        report["replaced"] += len(changed)
        done += len(batch)
        if progress is not None:
            progress(done, total)

    with destination.bulk_load(total):
        batch: list[Entry] = []
        for entry, place in source.iter_entries(None):
            if batch and (entry.namespace != batch[0].namespace or len(batch) >= batch_size):
                flush(batch[0].namespace, batch)  # type: ignore[arg-type]
                batch = []
                places.clear()
            batch.append(entry)
            places[entry.id] = place  # type: ignore[index]
        if batch:
            flush(batch[0].namespace, batch)  # type: ignore[arg-type]

    events: list[dict[str, Any]] = []
    for event in source.iter_history(None):
        events.append(event)
        if len(events) >= 1000:
            report["history_restored"] += destination.restore_history(events)
            report["history"] += len(events)
            events = []
    if events:
        report["history_restored"] += destination.restore_history(events)
        report["history"] += len(events)

    # Verify by counts: every namespace and kind of the source is in the destination, as many
    # (at least as many when merged into a store that held entries already).
    src_ns, dst_ns = source.namespaces(), destination.namespaces()
    mismatches = []
    for ns, kinds in src_ns.items():
        for kind, n in kinds.items():
            got = dst_ns.get(ns, {}).get(kind, 0)
            if got < n or (not dst_entries and got != n):
                mismatches.append(f"{ns}/{kind}: {n} in the source, {got} in the destination")
    if not dst_entries and set(dst_ns) - set(src_ns):
        mismatches.append(f"namespaces only in the destination: {sorted(set(dst_ns) - set(src_ns))}")
    if mismatches:
        raise EngramError("migrate verification failed: " + "; ".join(mismatches))
    report["namespaces"] = {ns: sum(kinds.values()) for ns, kinds in sorted(src_ns.items())}
    report["verified"] = True
    return report


def migrate(source: str | Path, destination: str | Path, *, into_nonempty: bool = False, batch_size: int = 256,
            progress: Progress | None = None) -> dict[str, Any]:
    """Copy the store `source` names (a SQLite path or a ``postgresql://`` URL) into the one
    `destination` names (created if needed): every namespace, entry, vector and history
    event, verified by counts. Returns a report: ``source``, ``destination`` (URLs without
    passwords), ``embedder``, ``entries`` (in the source), ``written``, ``unchanged``,
    ``replaced``, ``history``, ``history_restored``, ``namespaces`` ({namespace: entries}),
    ``verified``. See the module documentation for what a non-empty destination does."""
    src, dst = str(source), str(destination)
    if _same_target(src, dst):
        raise InputError("source and destination are the same store")
    if not store_exists(src):
        raise InputError(f"no store at {redact(src)}")
    src_store = open_store(src, read_only=True)
    try:
        dst_store = open_store(dst)
        try:
            return migrate_stores(src_store, dst_store, into_nonempty=into_nonempty, batch_size=batch_size,
                                  progress=progress)
        finally:
            dst_store.close()
    finally:
        src_store.close()
