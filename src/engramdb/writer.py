"""The one write path. `Memory.add`, `update`, supersede and every importer (notes, JSONL,
conversations, dumps) hand normalised entries to a `Writer`:

classify (new / unchanged / changed) → embed and analyse what needs it → upsert in one
transaction, with history events. Text analysis (jieba segmentation, stemming: `text.tokenize`)
happens here, once, and the store receives the terms as it receives the vectors, so every
backend indexes exactly the same terms. Importers get a `Writer`, not the `Memory` that owns it, so the packages do
not call back up into each other.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .embed import Embedder
from .errors import InputError, WriteConflictError
from .model import Entry, stable_id
from .store.base import EntryTerms, Filters, Store
from .text.romanize import name_keys, tag_keys
from .text.tokenize import analyze


# Passes of a merging write (`keep_stored_fields`) before a conflict reaches the caller: each
# pass loses only to a writer that committed the same entry in between.
_MERGE_ATTEMPTS = 5


def entry_terms(entry: Entry) -> EntryTerms:
    """The analysed terms an entry is indexed by: its text, and its keywords, persons,
    entities and topic as tag terms; the Chinese names of its text and tags also by their keys."""
    tag_text = " ".join(entry.keywords + entry.persons + entry.entities + ([entry.topic] if entry.topic else []))
    # A Chinese person the text names (or a person tag, the speaker of a turn) is also found by
    # the pinyin key of the name, marked with the script it is written in ("han:wangfang"),
    # which a question naming them in the other script looks up (text/romanize.py).
    body = tuple(analyze(entry.text)) + tuple(name_keys(entry.text))
    tags = tuple(analyze(tag_text)) + tuple(tag_keys([*entry.persons, entry.source.speaker or ""]))
    return EntryTerms(body=body, tags=tags)


class Writer:
    """Writes batches of entries of one namespace into `store`, embedding with the model
    `embedder()` returns (loaded on first need). `prefer_model` tells the owner which model an
    imported dump was made with, for a store that has none yet."""

    def __init__(self, store: Store, embedder: Callable[[], Embedder],
                 prefer_model: Callable[[str], None] | None = None) -> None:
        self.store = store
        self._embedder = embedder
        self._prefer_model = prefer_model

    def prefer_model(self, name: str) -> None:
        if self._prefer_model is not None:
            self._prefer_model(name)

    def write(self, entries: Sequence[Entry], *, namespace: str, replaces: Filters | None = None,
              actor: str | None = None, log: bool = True, keep_stored_fields: bool = False,
              removes: Sequence[str] = (), reinstates: Sequence[str] = (),
              expect: Mapping[str, Entry] | None = None,
              places: Mapping[str, int] | None = None, unique_turns: bool = False) -> tuple[int, int, int]:
        """Write normalised entries of `namespace` in one transaction.

        With ``keep_stored_fields`` an entry is merged with what is stored, and written only if
        that is still what is stored (compare-and-swap); an entry another writer added or
        changed in between is merged again and written in a new transaction (a few times at
        most), so concurrent adds of one text with different tags keep every tag. ``expect``
        (id -> the entry as the caller read it, each id among the written) makes the write a
        compare-and-swap for the caller, who retries (`lifecycle.update`): `WriteConflictError`.

        ``replaces`` makes the batch the whole new content of a scope (a notes file's path, a
        conversation's session): entries of that scope the batch does not hold are deleted in
        the same transaction, found *inside* it, so two processes re-importing the same file
        leave one version or the other, never a mix. Returns (written, unchanged, removed).
        Embedding happens before the transaction opens, so a slow model never holds the
        write lock; a changed entry whose text is the same keeps its stored vector.
        With ``keep_stored_fields`` (`Memory.add`, the JSONL and notes importers), an entry
        stored already keeps what the new one does not say (`with_stored_fields`): a re-add
        adds, it never clears.
        ``removes`` names further ids the batch takes the place of (deleted in its transaction,
        counted as removed): what an earlier version stored under another identity.
        ``reinstates`` names ids that stop being superseded (a stored entry is otherwise never
        un-superseded by writing it again).
        ``places`` (id -> place) are the session places of a copy (a dump: `Store.iter_entries`).
        ``unique_turns`` (conversation writes) makes the store refuse, inside the transaction, a
        turn whose session and turn id another stored turn holds: `WriteConflictError`, for
        the caller to read the session again (`Memory.add_turn` renumbers).
        """
        if any(e.namespace != namespace for e in entries):
            raise InputError(f"a write batch holds entries of one namespace ({namespace!r})")
        merging = keep_stored_fields and expect is None  # the caller's compare-and-swap: the caller retries
        attempts = _MERGE_ATTEMPTS if merging else 1
        written = 0
        for attempt in range(1, attempts + 1):
            try:
                done, removed, skipped = self._write_once(entries, namespace, replaces, actor, log,
                                                             keep_stored_fields, removes, reinstates, expect, merging,
                                                             places, unique_turns)
            except WriteConflictError:
                if attempt == attempts:
                    raise
                continue
            written += done
            if not (merging and skipped) or attempt == attempts:
                break
            # another writer stored some of these first: merge with theirs and write again
        # What this call did not write was stored as it says already (by it or by another writer).
        return written, len({e.id for e in entries}) - written, removed

    def _write_once(self, entries: Sequence[Entry], namespace: str, replaces: Filters | None, actor: str | None,
                    log: bool, keep_stored_fields: bool, removes: Sequence[str], reinstates: Sequence[str],
                    expect: Mapping[str, Entry] | None, merge_checked: bool,
                    places: Mapping[str, int] | None = None, unique_turns: bool = False) -> tuple[int, int, int]:
        """One classify-embed-upsert pass: (written, removed, skipped), skipped the new
        entries another writer stored first. With `merge_checked`, an entry merged with the
        stored one is written only if that is still what is stored."""
        by_id: dict[str | None, Entry] = {}
        for entry in entries:  # an id twice in one batch: the later one, adding to the earlier with keep_stored_fields
            earlier = by_id.get(entry.id)
            by_id[entry.id] = with_stored_fields(entry, earlier, created=False) \
                if keep_stored_fields and earlier is not None else entry
        unique = list(by_id.values())
        new, unchanged, changed = self.store.classify(unique)
        merged_from: dict[str, Entry] = {}
        if keep_stored_fields and changed:  # only entries stored with other content are read again
            stored = {e.id: e for e in self.store.get(namespace, [e.id for e in changed if e.id])}
            merged = [with_stored_fields(e, stored[e.id]) if e.id in stored else e for e in changed]
            _, same, changed = self.store.classify(merged)
            unchanged = unchanged + same
            if merge_checked:
                merged_from = {e.id: stored[e.id] for e in changed if e.id and e.id in stored}
        for entry in unique:  # classify kept each stored link; these lose theirs
            if entry.id in reinstates and entry.superseded_by is not None:
                entry.superseded_by = None
                if entry.id in unchanged:
                    unchanged.remove(entry.id)
                    changed.append(entry)
        todo = new + changed
        keep = {e.id for e in unique if e.id}
        removes = [i for i in dict.fromkeys(removes) if i not in keep]
        if not todo and not removes and (replaces is None or set(self.store.ids(namespace, replaces)) <= keep):
            return 0, 0, 0  # nothing to write or remove (checked again when writing)
        vectors = self._vectors_for(namespace, todo, changed) if todo else None
        terms = [entry_terms(e) for e in todo]
        written, removed = self.store.upsert(namespace, todo, vectors, terms,
                                             replace=[*(e.id for e in changed if e.id), *removes],
                                             scope=replaces, keep=keep, actor=actor, log=log,
                                             expect={**merged_from, **(expect or {})} or None, places=places,
                                             unique_turns=unique_turns)
        removed += len(removes)
        # An entry another writer stored between `classify` and the write was skipped there:
        # it is unchanged, not written by this call (with `merge_checked`, merged next pass).
        return written, removed, len(todo) - written

    def _vectors_for(self, namespace: str, todo: list[Entry], changed: list[Entry]) -> Any:
        kept = self.store.stored_vectors(namespace, {e.id: e.text for e in changed if e.id}) if changed else {}
        fresh = [e for e in todo if e.id not in kept]
        embedded = iter(self._embedder().embed_documents([e.text for e in fresh]) if fresh else [])
        return np.stack([kept[e.id] if e.id in kept else next(embedded) for e in todo])  # type: ignore[index]



def with_stored_fields(entry: Entry, stored: Entry, created: bool = True) -> Entry:
    """`entry` adding to `stored` (the same id): tags and links are the union of both, each
    other field it leaves empty is the stored one's, metadata keys are merged, and the stored
    ``created_at`` stays (unless not `created`). An id derived from the entry's own text means the
    stored entry was written from that same text: a different stored text is a correction
    made since (`update`), and it stays — adding or importing the source again never undoes it."""
    merged = copy.copy(entry)
    if stored.text != entry.text and entry.id == stable_id(entry.namespace or "", entry.kind, entry.source, entry.text):
        merged.text = stored.text
    for name in ("persons", "entities", "keywords"):  # one of each, whatever its case (as one add keeps)
        first: dict[str, str] = {}
        for value in [*getattr(stored, name), *getattr(entry, name)]:
            first.setdefault(value.casefold(), value)
        setattr(merged, name, list(first.values()))
    for name in ("derived_from", "supersedes"):
        setattr(merged, name, list(dict.fromkeys([*getattr(stored, name), *getattr(entry, name)])))
    for name in ("location", "topic", "expires_at"):
        if getattr(entry, name) is None:
            setattr(merged, name, getattr(stored, name))
    if entry.timestamp is None:
        merged.timestamp, merged.timestamp_end = stored.timestamp, stored.timestamp_end
    merged.metadata = {**stored.metadata, **entry.metadata}
    if created:
        merged.created_at = stored.created_at
    return merged
