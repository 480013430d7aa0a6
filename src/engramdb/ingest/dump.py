"""Export and import of a whole store (or namespace), lossless: `engram export > dump.jsonl`
and `engram import dump.jsonl`.

A dump is JSONL: a header line ``{"engram_export": 1, "schema": …, "embedder": …,
"namespaces": […], "exported_at": …}``, then ``{"entry": {…}, "place": n}`` lines (every field:
ids, ``created_at``, provenance, supersede links, expiry), in the store's rowid order — `list`'s,
and the tie-break of equal scores — with ``place``, the entry's place in its session's order
(`Store.iter_entries`; optional: a dump without it restores each entry where it is written), then ``{"history": {…}}`` lines (every
logged event, also of deleted entries), and last an ``{"end": {"entries": n, "history": m}}``
line, so a dump cut short (a full disk, a dropped HTTP stream, a partial copy) is refused,
not restored in part as if it were whole; a version-1 dump, written before the end line,
is read without one. Vectors are not written: the importing store embeds
the texts again with the model the header names (or its own), so a dump stays small and
portable. Export streams from one read snapshot; import validates the whole file first, then
writes the history (so what the restore logs comes after it) and batches of 256 entries (one
transaction each), skipping what is already there, so a re-run after a crash completes and a
second import adds nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import InputError
from ..jsonfile import jsonl_objects
from ..model import Entry
from ..validation import check_name, normalize_timestamp
from ..store.base import SCHEMA_VERSION

if TYPE_CHECKING:  # pragma: no cover
    from ..store.base import Store
    from ..writer import Writer

DUMP_VERSION = 2
#: versions `read_dump` reads: 1 has no end line
READABLE_VERSIONS = (1, 2)
EVENTS = ("ADD", "UPDATE", "DELETE")


def export_lines(store: "Store", namespace: str | None) -> Iterator[dict[str, Any]]:
    """The dump of `namespace` (None: every namespace) as JSON objects, streamed."""
    namespaces = [namespace] if namespace is not None else list(store.namespaces())
    yield {"engram_export": DUMP_VERSION, "schema": int(SCHEMA_VERSION), "embedder": store.recorded_embedder(),
           "namespaces": namespaces, "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    entries = history = 0
    for entry, place in store.iter_entries(namespace):
        entries += 1
        yield {"entry": entry.to_dict(), "place": place}
    for event in store.iter_history(namespace):
        history += 1
        yield {"history": event}
    yield {"end": {"entries": entries, "history": history}}


def is_dump(first: Any) -> bool:
    return isinstance(first, dict) and "engram_export" in first


def read_dump(path: Path, namespace: str | None
              ) -> tuple[dict[str, Any], list[Entry], list[dict[str, Any]], dict[tuple[str, str], int]]:
    """Header, entries, events and the entries' session places (by namespace and id) of a
    dump, all validated. With `namespace`, a dump of one namespace is imported into that one
    instead (a dump of several is refused)."""
    header: dict[str, Any] | None = None
    entries: list[Entry] = []
    places: dict[tuple[str, str], int] = {}
    events: list[dict[str, Any]] = []
    end: dict[str, Any] | None = None
    for number, obj in jsonl_objects(path):
        where = f"{path}:{number}"
        if header is None:
            if not is_dump(obj) or obj["engram_export"] not in READABLE_VERSIONS:
                raise InputError(f"{where}: not an Engram export of version "
                                 f"{' or '.join(map(str, READABLE_VERSIONS))}")
            header = obj
            recorded = obj.get("namespaces")
            if not isinstance(recorded, list) or not all(isinstance(n, str) for n in recorded):
                raise InputError(f"{where}: the header must list its namespaces")
            if namespace is not None and len(recorded) > 1:
                raise InputError(f"{path} holds {len(recorded)} namespaces; import it without a namespace "
                                 "to restore each, or export one namespace")
            continue
        if end is not None:
            raise InputError(f"{where}: a line after the dump's end line")
        if isinstance(obj, dict) and set(obj) == {"end"} and header["engram_export"] >= 2:
            end = _end(obj["end"], where)
            continue
        if not isinstance(obj, dict) or set(obj) not in ({"entry"}, {"entry", "place"}, {"history"}):
            raise InputError(f"{where}: expected {{\"entry\": …, \"place\": n}} or {{\"history\": …}}")
        try:
            data = obj["entry"] if "entry" in obj else obj["history"]
            if not isinstance(data, dict):
                raise ValueError(f"{'an entry' if 'entry' in obj else 'a history event'} must be a JSON object")
            source = data.get("namespace")
            if "entry" in obj:
                place = obj.get("place")
                if place is not None and (isinstance(place, bool) or not isinstance(place, int)
                                          or not -2**63 <= place < 2**63):
                    raise ValueError("place must be a 64-bit integer")
                target = namespace or source
                entry = Entry.from_dict({**data, "namespace": target}).normalized(target)
                entries.append(entry)
                if place is not None:
                    places[(entry.namespace, entry.id)] = place  # type: ignore[index]
            else:
                events.append(_event(data, namespace))
        except (ValueError, TypeError, RecursionError) as exc:
            raise InputError(f"{where}: {exc}") from None
    if header is None:
        raise InputError(f"{path}: empty file, not an Engram export")
    if header["engram_export"] >= 2:
        read = {"entries": len(entries), "history": len(events)}
        if end is None:
            raise InputError(f"{path}: the dump was cut short (no end line after {read['entries']} entries and "
                             f"{read['history']} history events); nothing was imported — export it again")
        if end != read:
            raise InputError(f"{path}: the end line counts {end['entries']} entries and {end['history']} history "
                             f"events, the dump holds {read['entries']} and {read['history']}; nothing was imported")
    return header, entries, events, places


def _end(data: Any, where: str) -> dict[str, int]:
    """The end line's counts, checked."""
    if (not isinstance(data, dict) or set(data) != {"entries", "history"}
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in data.values())):
        raise InputError(f"{where}: the end line must be {{\"end\": {{\"entries\": n, \"history\": m}}}}")
    return {"entries": data["entries"], "history": data["history"]}


def _event(data: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    if data.get("event") not in EVENTS:
        raise ValueError(f"history event must be one of {', '.join(EVENTS)}")
    target = namespace or data.get("namespace")
    for side in ("old", "new"):
        if data.get(side) is not None:
            if not isinstance(data[side], dict):
                raise ValueError(f"history {side} must be an entry object or null")
            data = {**data, side: {**data[side], "namespace": target}}
    at = normalize_timestamp(data.get("at"), "history at")
    if at is None:
        raise ValueError("history at is missing")
    return {"namespace": check_name(target, "namespace"), "id": check_name(data.get("id"), "history id"),
            "event": data["event"], "at": at,
            "actor": check_name(data["actor"], "history actor") if data.get("actor") is not None else None,
            "old": data.get("old"), "new": data.get("new")}


def import_dump(writer: "Writer", path: Path, *, namespace: str | None, batch_size: int = 256,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    header, entries, events, places = read_dump(path, namespace)
    if header.get("embedder"):
        writer.prefer_model(header["embedder"])  # an empty store takes the dump's model
    by_namespace: dict[str, list[Entry]] = {}
    for entry in entries:
        by_namespace.setdefault(entry.namespace, []).append(entry)  # type: ignore[arg-type]
    written = unchanged = done = 0
    # The dump's own history first; then what the restore changes in a store that has a story
    # of its own is logged on top of it, by "import": an entry that differs from the stored one
    # (an UPDATE) or that was deleted here since (an ADD). The rest is the dump's history alone.
    stream = iter(writer.store.iter_history(None))
    had_history = next(stream, None) is not None
    getattr(stream, "close", lambda: None)()  # a snapshot read: let it go now
    restored = writer.store.restore_history(events) if events else 0
    fresh = not had_history and writer.store.count() == 0
    with writer.store.bulk_load(len(entries)):  # a large restore: indexes built once at the end
        for ns, group in by_namespace.items():
            for start in range(0, len(group), batch_size):
                batch = group[start : start + batch_size]
                logged: list[Entry] = []
                if not fresh:
                    new, _, changed = writer.store.classify(batch)
                    logged = changed + [e for e in new if _deleted_here(writer, ns, e.id or "")]
                quiet = [e for e in batch if e not in logged]
                given = {e.id or "": places[(ns, e.id or "")] for e in batch if (ns, e.id) in places}
                for part, log in ((quiet, False), (logged, True)):
                    if part:
                        w, u, _ = writer.write(part, namespace=ns, log=log, actor="import" if log else None,
                                               places=given)
                        written, unchanged = written + w, unchanged + u
                done += len(batch)
                if progress is not None:
                    progress(done, len(entries))
    return {"path": str(path), "format": "export", "entries": len(entries), "written": written,
            "unchanged": unchanged, "removed": 0, "history": len(events), "history_restored": restored,
            "namespaces": sorted(by_namespace)}


def _deleted_here(writer: "Writer", namespace: str, entry_id: str) -> bool:
    """Whether the store's history of an entry it does not hold ends with its deletion (a
    restore brings it back: an ADD to log), rather than with the dump's own events."""
    events = writer.store.history(namespace, entry_id)
    return bool(events) and events[-1]["event"] == "DELETE"
