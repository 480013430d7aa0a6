"""How memory changes over time: update in place, supersede, expiry, and the history log.

The three ways a fact changes (docs/LIFECYCLE.md):

* **update** rewrites an entry under the same id ("the address is 12 Rua Augusta", fixing a
  typo, new metadata); the old version lives on only in the history log;
* **supersede** stores a new entry and marks the old ones superseded: they stay, linked both
  ways (``supersedes`` / ``superseded_by``), out of search, list and count unless asked for
  ("Alice moved from Berlin to Lisbon": the Berlin fact is still there to explain the past);
* **expiry** (``expires_at``) takes an entry out of view at a wall-clock time;
  `purge_expired` deletes such entries for good.

Every write goes through `Memory.write_batch`, so each is one transaction with its history
events. Functions here take the `Writer` (or the store) of the `Memory` that exposes them as
methods.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypedDict

from .errors import InputError, NotFoundError, WriteConflictError
from .model import Entry
from .writer import with_stored_fields
from .store.base import Filters

if TYPE_CHECKING:  # pragma: no cover
    from .store.base import Store
    from .writer import Writer

# Fields `update` may change; the rest (id, kind, namespace, source, provenance, created_at,
# supersede links) belong to how the entry came to be.
UPDATABLE = ("text", "metadata", "persons", "entities", "keywords", "location", "topic", "timestamp",
             "timestamp_end", "expires_at")


class EntryChanges(TypedDict, total=False):
    """What `Memory.update` may change (``**changes``), typed, so a checker catches a misspelt
    field (``txt=``) or a wrong type (``timestamp=12345``) before it runs."""

    text: str
    metadata: dict[str, Any]
    persons: list[str]
    entities: list[str]
    keywords: list[str]
    location: str | None
    topic: str | None
    timestamp: str | datetime | None
    timestamp_end: str | datetime | None
    expires_at: str | datetime | None


@dataclass(slots=True)
class HistoryEvent:
    """One logged change: ``ADD``, ``UPDATE`` or ``DELETE``, with the entry before and after."""

    id: str
    seq: int
    event: str
    at: str
    actor: str | None
    old: Entry | None
    new: Entry | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "seq": self.seq, "event": self.event, "at": self.at, "actor": self.actor,
                "old": self.old.to_dict() if self.old else None, "new": self.new.to_dict() if self.new else None}


def _one(store: "Store", namespace: str, entry_id: str) -> Entry:
    found = store.get(namespace, [entry_id])
    if not found:
        raise NotFoundError(f"not found in namespace {namespace!r}: {entry_id}")
    return found[0]


def new_links(store: "Store", namespace: str, entries: Sequence[Entry], where: Callable[[int], str]) -> bool:
    """Check the supersede links entries to be added carry, before anything is written.

    The store owns them: a `superseded_by` an entry does not have stored already would hide it
    behind any id (another namespace's too) and raises `InputError` (``where(index)`` names the
    item); `supersedes` it has stored already is kept as stored. Returns whether an entry names
    entries it does not supersede yet, which only `Memory.add(..., supersedes=)` may link (both
    sides, checked)."""
    linked = [e for e in entries if e.superseded_by is not None or e.supersedes]
    if not linked:
        return False
    stored = {e.id: e for e in store.get(namespace, [e.id for e in linked if e.id])}
    fresh = False
    for index, entry in enumerate(entries):
        known = stored.get(entry.id) if entry.id else None
        if entry.superseded_by is not None and (known is None or known.superseded_by != entry.superseded_by):
            raise InputError(f"{where(index)}: superseded_by is set by the store when a newer entry supersedes "
                             "this one; add the newer entry with supersedes=[this id]")
        if known is not None and set(entry.supersedes) <= set(known.supersedes):
            entry.supersedes = list(known.supersedes)  # nothing new to link
        elif entry.supersedes:
            fresh = True
    return fresh


def check_derived_from(store: "Store", namespace: str, entries: Sequence[Entry], where: Callable[[int], str]) -> None:
    """Check the provenance links entries to be added carry, before anything is written: each
    `derived_from` id names an entry of `namespace` — stored, or among `entries` (a fact may
    come with its turns, in any order). Another namespace's id is not one: scope is a hard
    boundary. Links an entry has stored already stay (its source may have been deleted since).
    Raises `InputError` naming the item (``where(index)``) and the ids."""
    linked = [(index, entry) for index, entry in enumerate(entries) if entry.derived_from]
    if not linked:
        return
    given = {e.id for e in entries}
    wanted = sorted({d for _, e in linked for d in e.derived_from} - given)
    known = given | {e.id for e in store.get(namespace, wanted)} if wanted else given
    for index, entry in linked:
        if entry.id in entry.derived_from:
            raise InputError(f"{where(index)}: an entry cannot be derived from itself ({entry.id})")
        missing = [d for d in dict.fromkeys(entry.derived_from) if d not in known]
        if missing and entry.id:
            stored = store.get(namespace, [entry.id])
            missing = [d for d in missing if not stored or d not in stored[0].derived_from]
        if missing:
            raise InputError(f"{where(index)}: derived_from names {', '.join(missing)}, not an entry of namespace "
                             f"{namespace!r}; add the entries it came from first (or in the same call), or drop "
                             "derived_from")


_UPDATE_ATTEMPTS = 20  # each retry loses only to an update committed in between


def update(writer: "Writer", entry_id: str, changes: dict[str, Any], namespace: str,
           actor: str | None) -> Entry:
    """The entry with `changes` applied, stored under the same id in one transaction."""
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown:
        raise InputError(f"update cannot change {', '.join(unknown)} (it changes {', '.join(UPDATABLE)})")
    if not changes:
        raise InputError("update needs at least one field to change")
    # Read, change, and write only if the entry is still as read (a compare-and-swap inside the
    # write transaction): two updates of different fields at once both land, one after the
    # other, instead of the later one writing back the earlier one's field as it was.
    for attempt in range(_UPDATE_ATTEMPTS):
        current = _one(writer.store, namespace, entry_id)
        data = current.to_dict()
        data.update(changes)
        try:
            entry = Entry.from_dict(data).normalized(namespace)
        except (ValueError, TypeError, RecursionError) as exc:
            raise InputError(f"update {entry_id}: {exc}") from None
        entry.created_at = current.created_at
        try:
            writer.write([entry], namespace=namespace, actor=actor, expect={entry_id: current})
        except WriteConflictError:
            if attempt == _UPDATE_ATTEMPTS - 1:
                raise
            continue
        break
    return _one(writer.store, namespace, entry_id)


def supersede(writer: "Writer", entry: Entry, old_ids: Sequence[str], namespace: str,
              actor: str | None) -> str:
    """Store `entry` (normalised) and mark `old_ids` superseded by it, in one transaction.

    An entry stored already (the same text: an old truth that holds again, "Alice lives in
    Berlin" after Lisbon, or after Lisbon and Porto) is reinstated: it keeps what the new one
    does not say, as `add` does, and is no longer superseded (no cycle in which each hides
    the other)."""
    olds = writer.store.get(namespace, list(dict.fromkeys(old_ids)))
    missing = sorted(set(old_ids) - {e.id for e in olds})
    if missing:
        raise NotFoundError(f"supersedes: not found in namespace {namespace!r}: {', '.join(missing)}")
    if entry.id in old_ids:
        raise InputError("an entry cannot supersede itself")
    olds = _not_chained(writer.store, namespace, olds, entry.id, set(old_ids))
    stored = writer.store.get(namespace, [entry.id]) if entry.id else []
    reinstated: list[str] = []
    if stored:  # the caller names it the truth now, whatever superseded it on the way
        entry = with_stored_fields(entry, stored[0])
        if stored[0].superseded_by is not None:
            reinstated.append(entry.id or "")
    new = dataclasses.replace(entry, supersedes=list(dict.fromkeys([*entry.supersedes, *(o.id for o in olds if o.id)])))
    marked = [dataclasses.replace(old, superseded_by=new.id) for old in olds]
    if reinstated and stored[0].superseded_by is not None:
        # The entry that superseded it no longer does: its `supersedes` drops the link, which
        # stays stored on both sides (else Lisbon still lists Berlin, which lists Lisbon: a cycle).
        marked = _unlinked(writer.store, namespace, marked, stored[0].superseded_by, new.id)
    writer.write([new, *marked], namespace=namespace, actor=actor, reinstates=reinstated)
    return new.id  # type: ignore[return-value]


def _unlinked(store: "Store", namespace: str, marked: list[Entry], superseder: str, reinstated: str | None) -> list[Entry]:
    """`marked` with `superseder` (one of them, or read from the store) no longer listing
    `reinstated` among the entries it supersedes."""
    def unlink(e: Entry) -> Entry:
        return dataclasses.replace(e, supersedes=[i for i in e.supersedes if i != reinstated])
    if any(m.id == superseder for m in marked):
        return [unlink(m) if m.id == superseder else m for m in marked]
    return [*marked, *(unlink(e) for e in store.get(namespace, [superseder]) if reinstated in e.supersedes)]


def _not_chained(store: "Store", namespace: str, olds: list[Entry], new_id: str | None,
                 named: set[str]) -> list[Entry]:
    """The old entries the new one links to itself: every one named, but one already superseded
    by another entry named with it stays in that chain (A -> B -> new: A's own link is to B, as
    B's `supersedes` says). One superseded by an entry still stored and not named is refused:
    marking it again would leave that entry's `supersedes` pointing at an entry that points
    elsewhere (after a deletion of its superseder, an entry may be superseded again)."""
    previous = {o.superseded_by for o in olds} - {None, new_id} - named
    live = {e.id for e in store.get(namespace, sorted(p for p in previous if p))} if previous else set()
    for old in olds:
        if old.superseded_by in live:
            raise InputError(f"supersedes: {old.id} is already superseded by {old.superseded_by}; supersede "
                             f"{old.superseded_by} (the newer entry) instead, or name both")
    return [o for o in olds if o.superseded_by is None or o.superseded_by not in named]


def history(store: "Store", entry_id: str, namespace: str) -> list[HistoryEvent]:
    rows = store.history(namespace, entry_id)
    if not rows and not store.get(namespace, [entry_id]):
        raise NotFoundError(f"no entry and no history in namespace {namespace!r}: {entry_id}")
    return [HistoryEvent(id=r["id"], seq=r["seq"], event=r["event"], at=r["at"], actor=r["actor"],
                         old=_entry(r["old"]), new=_entry(r["new"])) for r in rows]


def _entry(data: dict[str, Any] | None) -> Entry | None:
    return None if data is None else Entry.from_dict(data)  # a field added later takes its default


def purge_expired(store: "Store", namespace: str | None, actor: str | None) -> int:
    """Delete every entry expired by now (in `namespace`, or everywhere for None)."""
    removed = 0
    by_namespace: dict[str, list[str]] = {}
    for ns, entry_id in store.expired_ids(namespace, time.time()):
        by_namespace.setdefault(ns, []).append(entry_id)
    for ns, ids in by_namespace.items():
        removed += store.delete(ns, ids=ids, filters=Filters(), actor=actor, missing_ok=True)
    return removed


def view(filters: Filters, include_superseded: bool, show_expired: bool) -> Filters:
    """`filters` as search, list and count see the store: without superseded entries and
    without the ones expired by now, unless asked."""
    return dataclasses.replace(filters, include_superseded=include_superseded,
                               visible_at=None if show_expired else time.time())
