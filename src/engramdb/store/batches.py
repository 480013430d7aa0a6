"""Write-batch rules every backend applies the same way: which entries are new, unchanged or
changed against their stored form, and what a valid batch looks like."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import EngramError, WriteConflictError
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


#: A row's place in its session's order: where it was first written (its rowid), kept by the
#: row that replaces it (an update, an edited turn re-imported), so a turn changed after the
#: fact does not move to the end of its conversation.
PLACE = "COALESCE(e.place, e.rowid)"

#: An entry's place as `Store.iter_entries` gives it to a copy (a migrate, a dump): its `PLACE`
#: less one more than the greatest place of the rows copied, so the copy keeps the source's
#: session order while every copied place is negative — below the rowid of any row the copy's
#: store writes later, as the source's later rows come after its earlier ones. The same source
#: gives the same places (an interrupted migrate, run again, is consistent).
def copy_place(where: str) -> str:
    """The SQL of a row's copy place among the rows of ``entries e`` that `where` admits (its
    ``WHERE …`` or ''); an uncorrelated subquery, computed once per statement."""
    return f"{PLACE} - (SELECT COALESCE(max(COALESCE(c.place, c.rowid)), 0) + 1 FROM entries c " \
           f"{where.replace('e.', 'c.')})"


#: The columns `inherited_places` reads of the rows a batch deletes (alias ``e``).
PLACE_COLUMNS = f"e.id, e.kind, e.session_id, e.turn_id, {PLACE}"


def inherited_places(entries: Sequence[Entry], deleted: Sequence[tuple[object, ...]],
                     given: Mapping[str, int] | None = None) -> list[int | None]:
    """For each entry, the place `given` names for its id (a copy keeping its source's order:
    `copy_place`), else the place of the row it replaces in the same transaction (None: a new
    row, whose place is its own rowid). ``deleted`` holds `PLACE_COLUMNS` of the rows the batch
    deletes: the same id (an update), else for a turn the same session and turn id (a turn
    whose words changed, which changes its id)."""
    by_id: dict[object, int] = {}
    by_turn: dict[tuple[object, object], int] = {}
    for entry_id, kind, session, turn, place in deleted:
        by_id[entry_id] = int(place)  # type: ignore[call-overload]
        if kind == "turn" and session is not None and turn is not None:
            by_turn[(session, turn)] = int(place)  # type: ignore[call-overload]
    places: list[int | None] = []
    for entry in entries:
        place = given.get(entry.id) if given and entry.id in given else by_id.get(entry.id)  # type: ignore[arg-type]
        if place is None and entry.kind == "turn":
            place = by_turn.get((entry.source.session_id, entry.source.turn_id))
        places.append(place)
    return places


def turn_ids_by_session(entries: Sequence[Entry]) -> dict[str, dict[str, str]]:
    """The batch's turns by session: session id -> {turn id: entry id} (what `check_turn_ids`
    checks against the store, one query per session)."""
    out: dict[str, dict[str, str]] = {}
    for entry in entries:
        src = entry.source
        if entry.kind == "turn" and src.session_id is not None and src.turn_id is not None:
            out.setdefault(src.session_id, {}).setdefault(src.turn_id, entry.id or "")
    return out


def check_turn_ids(session_id: str, batch: Mapping[str, str], stored: Iterable[Sequence[Any]]) -> None:
    """Inside a write transaction: a turn id names one turn of its session. `batch` maps the
    turn ids the write adds to their entry ids, `stored` holds the session's stored turns
    (entry id, turn id) once the write's own deletes are done; a turn id another stored entry
    holds rolls the write back with `WriteConflictError` (another writer took that id first)."""
    for entry_id, turn_id in stored:
        mine = batch.get(turn_id)
        if mine is not None and mine != entry_id:
            raise WriteConflictError(f"turn id {turn_id!r:.80} of session {session_id!r:.80} is held by entry "
                                     f"{entry_id} already (another writer stored it first); nothing was written")
