"""`Memory`: the facade users hold. It wires the store, the embedder and the search pipeline."""

from __future__ import annotations

import builtins
import json
import math
import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence, Unpack

from .conversation import Conversation, ConversationReport, Extractor, Turn, build_turns, get_extractor, write_session
from .conversation.ingest import check_turn, is_retry, no_llm_calls, turn_from_entry
from .embed import DEFAULT_EMBEDDER, Embedder, check_spec, get_embedder, model_name
from .errors import EngramError, InputError, ModelMismatchError
from .model import Entry, Page, SearchResult
from .llm.client import EnvLLM
from . import lifecycle
from .lifecycle import EntryChanges, HistoryEvent, view
from .pagination import decode_cursor, encode_cursor
from .validation import aware_timestamp, check_name, check_unicode, checked, env_int, normalize_timestamp, shown
from .pipeline.presets import GROUP_KEYS, Preset, load_preset
from .plan.base import Planner
from .pipeline.search import SearchPipeline
from .store.base import Filters, Store
from .store.open import open_store, redact
from .tagging import tag_known_people
from .writer import Writer

if TYPE_CHECKING:  # pragma: no cover
    from .rerank import Reranker
    from .llm import LLMClient

DEFAULT_DB = "engram.db"
MAX_QUERY_CHARS = 20_000  # default cap on a query's length (Memory(max_query_chars=...))
MAX_K = 1_000  # most results one search returns
MAX_CONTEXT = 10  # neighbouring turns per side a search may return as context
TIMELINE_FIELDS = ("created", "event")
TIMELINE_BUCKETS = ("day", "week", "month", "year")
ProgressCallback = Callable[[int, int], None]


def default_db_path() -> str:
    """``$ENGRAM_DB`` if set, else ``./engram.db``."""
    return os.environ.get("ENGRAM_DB") or DEFAULT_DB


class Memory:
    """A memory store: one SQLite file, or (later) a PostgreSQL database.

    >>> with Memory("notes.db") as mem:                       # doctest: +SKIP
    ...     mem.add(["Alice moved to Berlin in May 2023.", "项目代号是 XYZ。"])
    ...     for hit in mem.search("where does Alice live?", k=3):
    ...         print(round(hit.score, 4), hit.text)

    ``path`` is a SQLite file path or a ``postgresql://`` URL (also the Unix-socket form
    ``postgresql://user:@/db?host=/socket/dir``; default ``$ENGRAM_DB`` or ``./engram.db``);
    ``store`` is an already opened `Store` instead (the Memory then owns and closes it).
    ``namespace`` scopes every call (one user, one agent, one conversation...; default
    ``"default"``); a Memory opened with one imports an `engram export` dump into it too
    (see `import_path`).
    ``embedder`` is a name from `engramdb.embed.EMBEDDER_NAMES` or an `Embedder`; by default
    the model the store was built with, or ``e5-small`` for a new store. A store never mixes
    vectors of two models: asking for another raises `ModelMismatchError`.
    ``llm`` is an `engramdb.llm.LLMClient` for the optional LLM stages (fact extraction with
    ``extractor="llm"``); without one they read ``ENGRAM_LLM_*`` from the environment.
    ``reranker`` is the cross-encoder for presets with a rerank stage: a directory with
    ``model.onnx`` and ``tokenizer.json``, or any object with ``score(query, texts)``;
    without one it is read from ``ENGRAM_RERANKER`` (a preset's ``[rerank] model`` wins).
    ``read_only`` opens the file without ever writing to it (every write raises
    `ReadOnlyStoreError`); ``max_query_chars`` caps the length of a query (default 20,000 or
    ``$ENGRAM_MAX_QUERY_CHARS``; longer ones raise `InputError`; processing is linear in the
    length anyway, the cap bounds the cost).
    ``busy_timeout`` is how many seconds a write waits for another process's write lock
    before raising `StoreBusyError` (reads never wait for writers: WAL).
    ``create=False`` opens only a store that exists (a file, or a database holding the
    store's schema) and raises `StoreError` otherwise; by default a new one is made. Reading
    never records a model: the first vectors written do (a store without vectors takes any).
    ``allow_preset_files=False`` makes `search` refuse presets that name a file (a ``.toml``
    path, ``extends = "x.toml"``, ``[rerank] model``), so a server's clients can pass presets
    as data but never make it read a file.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        namespace: str | None = None,
        embedder: str | Embedder | None = None,
        *,
        read_only: bool = False,
        cache_dir: str | Path | None = None,
        llm: "LLMClient | None" = None,
        reranker: "str | Path | Reranker | None" = None,
        max_query_chars: int | None = None,
        busy_timeout: float = 30.0,
        allow_preset_files: bool = True,
        store: Store | None = None,
        create: bool = True,
    ) -> None:
        if store is not None and path is not None:
            raise InputError("give a store path (or URL) or an opened store, not both")
        self.namespace = checked(check_name, "default" if namespace is None else namespace, "namespace")
        # Bound to a namespace by name: an `engram export` dump is imported into it (a Memory
        # that names none restores a dump into the namespaces it records, as `engram import` does).
        self._bound = namespace is not None
        if isinstance(embedder, str):
            check_spec(embedder)  # an unknown name, a missing endpoint: fail before the file is created
        self.allow_preset_files = allow_preset_files
        self.max_query_chars = max_query_chars if max_query_chars is not None else env_int(
            "ENGRAM_MAX_QUERY_CHARS", MAX_QUERY_CHARS)
        if store is None:
            if isinstance(path, str) and not path.strip():  # an unset variable in a script: not ./engram.db
                raise InputError("the store path is an empty string; give a file path or a postgresql:// URL "
                                 "(None means $ENGRAM_DB, else ./engram.db)")
            target = str(path or default_db_path())
            store = open_store(target, read_only=read_only, busy_timeout_ms=int(busy_timeout * 1000), create=create)
            self.path = redact(target)
        else:
            self.path = store.location
        self._busy_timeout = float(busy_timeout)
        self.store = store
        self._embedder_spec = embedder
        self._cache_dir = cache_dir
        self.llm = llm
        self._env_llm = EnvLLM()  # used when ``llm`` is None
        self._reranker = reranker
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        # A turn's default id and its latest-turn check read the session first: two threads
        # appending to one session at once (a server) would both take the same next number.
        self._turn_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="engram")
        self.writer = Writer(self.store, lambda: self.embedder, self._prefer_model)
        # Fail fast on a model mismatch, before any model is loaded.
        recorded = self.store.embedder_name
        if recorded and embedder is not None:
            wanted = model_name(embedder) if isinstance(embedder, str) else embedder.name
            if wanted != recorded:
                self.store.close()
                raise ModelMismatchError(
                    f"store {self.path} holds vectors from {recorded!r}; it cannot be used with {wanted!r}. "
                    "Open it without --embedder (or with the same one), or import into a new store."
                )

    # -- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store (which finishes its own upkeep, e.g. saving a vector graph). Using the Memory
        afterwards raises `MemoryClosedError` ("this Memory is closed"); closing it again is a no-op."""
        from typing import cast

        from .store.open import ClosedStore

        self._executor.shutdown(wait=True)
        self.store.close()
        self.store = self.writer.store = cast(Store, ClosedStore(str(self.path)))

    def _scope(self, namespace: str | None) -> str:
        """The namespace a call acts in: the one it names, else this Memory's."""
        return self.namespace if namespace is None else checked(check_name, namespace, "namespace")

    # -- embedder ------------------------------------------------------------------------
    def _prefer_model(self, name: str) -> None:
        """Use `name` for a store that records no model yet, unless one was asked for (an
        imported dump names the model its vectors came from)."""
        if self._embedder_spec is None and self._embedder is None and self.store.recorded_embedder() is None:
            self._embedder_spec = name

    @property
    def embedder(self) -> Embedder:
        """The embedding model, loaded on first use."""
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    spec = self._embedder_spec
                    if spec is None:
                        spec = self.store.recorded_embedder() or os.environ.get("ENGRAM_EMBEDDER") or DEFAULT_EMBEDDER
                    embedder = spec if not isinstance(spec, str) else get_embedder(spec, cache_dir=self._cache_dir)
                    self.store.bind_embedder(embedder.name, embedder.dim)
                    self._embedder = embedder
        return self._embedder

    # -- writes --------------------------------------------------------------------------
    def add(
        self,
        items: Iterable[str | Entry | dict[str, Any]] | str | Entry,
        *,
        namespace: str | None = None,
        kind: str = "fact",
        batch_size: int = 256,
        progress: ProgressCallback | None = None,
        supersedes: Sequence[str] | None = None,
        expires_at: str | datetime | None = None,
        actor: str | None = None,
    ) -> list[str]:
        """Store texts or entries; returns their ids in input order.

        Plain strings become entries of ``kind``. Entries already stored unchanged are
        skipped (re-adding is a no-op). Adding an entry that is stored already (the same text,
        kind and source) adds what the new one says and keeps the rest: its tags join the
        stored ones, metadata keys are merged, times and expiry it leaves empty keep their
        stored values, ``created_at`` stays, and a text corrected by `update` since stays
        corrected; use `update` to replace or clear a field. All items are validated first, so a bad item raises
        `InputError` before anything is written; then each batch of ``batch_size`` is one
        transaction. Everything is written to ``namespace`` (default: this Memory's); an
        entry naming another namespace is refused. An ``id`` is the entry's name within its
        namespace: the same id in another namespace is another entry.

        ``supersedes`` (with one item) stores it as the new truth and marks those entries
        superseded, in the same transaction (see docs/LIFECYCLE.md). ``expires_at`` sets the
        expiry of every item that has none. ``actor`` is recorded in the history log.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive integer, not {batch_size!r:.20}")
        if isinstance(items, (str, Entry, dict)):
            items = [items]
        elif isinstance(items, (bytes, bytearray, memoryview)):  # iterating them gives ints
            raise InputError(f"add takes a string, an Entry, a dict or a list of them, not {type(items).__name__} "
                             "(decode it first, e.g. data.decode('utf-8'))")
        elif not hasattr(items, "__iter__"):
            raise InputError(f"add takes a string, an Entry, a dict or a list of them, not {type(items).__name__}")
        ns = self._scope(namespace)
        entries = self._normalize(items, ns, kind)
        lifecycle.check_derived_from(self.store, ns, entries, lambda index: f"item {index}")
        tag_known_people(entries, ns, self.store.match_names)  # "Alice moved to Porto." is about Alice
        # The store owns supersede links: an item's own new `superseded_by` would hide it (naming
        # any id, another namespace's too) and its own new `supersedes` would leave the old entry
        # visible. Links the stored entry has already are fine (an entry read and added back);
        # one item's new `supersedes` is read as the argument, which checks and links both.
        if lifecycle.new_links(self.store, ns, entries, lambda index: f"item {index}"):
            if len(entries) != 1 or (supersedes is not None and set(supersedes) != set(entries[0].supersedes)):
                raise InputError("an item's supersedes links entries only when it is the one item added (or "
                                 "give supersedes=[ids] for it)")
            supersedes = list(entries[0].supersedes)
            entries[0].supersedes = []
        if expires_at is not None:
            expiry = checked(normalize_timestamp, expires_at, "expires_at")
            for entry in entries:
                entry.expires_at = entry.expires_at or expiry
        actor = self._actor(actor)
        if supersedes is not None:
            if len(entries) != 1:
                raise InputError("supersedes needs exactly one new entry")
            return [lifecycle.supersede(self.writer, entries[0], self._ids(supersedes), ns, actor)]
        total = len(entries)
        for start in range(0, total, batch_size):
            self.writer.write(entries[start : start + batch_size], namespace=ns, actor=actor, keep_stored_fields=True)
            if progress is not None:
                progress(min(start + batch_size, total), total)
        return [e.id for e in entries]  # type: ignore[misc]

    def _normalize(self, items: Iterable[str | Entry | dict[str, Any]], namespace: str, kind: str) -> list[Entry]:
        entries: list[Entry] = []
        for index, item in enumerate(items):
            try:
                if isinstance(item, str):
                    entry = Entry(text=item, kind=kind, namespace=namespace)
                elif isinstance(item, dict):
                    entry = Entry.from_dict(item)
                elif isinstance(item, Entry):
                    entry = item
                else:
                    raise ValueError(f"expected a string, Entry or dict, got {type(item).__name__}")
                entries.append(entry.normalized(namespace))
            except (ValueError, TypeError, RecursionError) as exc:
                raise InputError(f"item {index}: {exc}") from exc
        return entries

    def write_batch(self, entries: Sequence[Entry], *, namespace: str | None = None,
                    replaces: Filters | None = None, actor: str | None = None,
                    log: bool = True) -> tuple[int, int, int]:
        """Write normalised entries of one namespace in one transaction; see `Writer.write`.
        Returns (written, unchanged, removed)."""
        ns = self._scope(namespace if namespace is not None else (entries[0].namespace if entries else None))
        return self.writer.write(entries, namespace=ns, replaces=replaces, actor=actor, log=log)

    @staticmethod
    def _actor(actor: str | None) -> str | None:
        return checked(check_name, actor, "actor") if actor is not None else None

    def update(self, entry_id: str, *, namespace: str | None = None, actor: str | None = None,
               **changes: Unpack[EntryChanges]) -> Entry:
        """Change an entry in place (same id) and return it: any of ``text``, ``metadata``
        (replaced whole), ``persons``, ``entities``, ``keywords``, ``location``, ``topic``,
        ``timestamp``, ``timestamp_end``, ``expires_at`` (None clears it). A new text is
        analysed and embedded again; all in one transaction, logged as an ``UPDATE`` event.
        An id the namespace does not hold raises `NotFoundError`."""
        return lifecycle.update(self.writer, self._ids(entry_id)[0], dict(changes), self._scope(namespace),
                                self._actor(actor))

    def history(self, entry_id: str, *, namespace: str | None = None) -> "list[HistoryEvent]":
        """Every ``ADD``, ``UPDATE`` and ``DELETE`` of the entry, oldest first, with the entry
        before and after each; still there after the entry was deleted."""
        return lifecycle.history(self.store, self._ids(entry_id)[0], self._scope(namespace))

    def purge_expired(self, *, namespace: str | None = None, all_namespaces: bool = False,
                      actor: str | None = None) -> int:
        """Delete the entries whose ``expires_at`` has passed (logged as ``DELETE`` events)."""
        return lifecycle.purge_expired(self.store, None if all_namespaces else self._scope(namespace), self._actor(actor))

    def reindex(self, *, namespace: str | None = None, all_namespaces: bool = False,
                progress: ProgressCallback | None = None) -> dict[str, Any]:
        """Write every entry's index terms again with the current text analysis (after an
        upgrade that reads more of a text, such as the keys of Chinese names): vectors, fields,
        history and session order are kept, nothing is embedded. Returns ``{"entries",
        "reindexed", "skipped", "namespaces"}`` (`engramdb.reindex`)."""
        from .reindex import reindex

        return reindex(self.store, None if all_namespaces else self._scope(namespace), progress=progress)

    def add_conversation(
        self,
        turns: Iterable[Turn | dict[str, Any] | tuple[str, str]],
        *,
        session_id: str | None = None,
        session_time: str | datetime | None = None,
        namespace: str | None = None,
        extractor: "str | Extractor | None" = "offline",
        actor: str | None = None,
    ) -> ConversationReport:
        """Store one session of dialogue: every turn as a ``turn`` entry, plus ``fact`` entries.

        ``turns`` are ``(speaker, text)`` pairs, `Turn` objects or dicts with ``speaker`` (or
        ``role``), ``text`` (or ``content``) and optionally ``timestamp`` and ``turn_id``. A
        turn without a timestamp takes ``session_time`` (default: now). ``extractor`` is
        ``"offline"`` (rules, no model), ``"llm"`` or ``"none"``; each fact lists the ids of
        the turns it came from in ``derived_from``. The session is written in one transaction;
        re-adding it unchanged is a no-op, and a changed session replaces the old one.
        ``actor`` is recorded in the history log.
        """
        actor = self._actor(actor)
        sid, parsed, start = build_turns(turns, session_id, session_time)
        conversation = Conversation(session_id=sid, turns=parsed, session_time=start)
        report = ConversationReport(extractor=None)
        chosen = get_extractor(extractor, self.llm, self._env_llm)
        report.extractor = chosen.name if chosen else None
        write_session(self.writer, conversation, self._scope(namespace), chosen, report, actor=actor)
        return report

    def add_turn(
        self,
        speaker: str,
        text: str,
        *,
        session_id: str,
        timestamp: str | datetime | None = None,
        turn_id: str | None = None,
        namespace: str | None = None,
        extractor: "str | Extractor | None" = "offline",
        actor: str | None = None,
    ) -> ConversationReport:
        """Append one turn to a session (as a live agent would), with facts extracted from it.

        Earlier turns of the session are kept; the session's other speakers are used to
        resolve "you". ``timestamp`` defaults to now. A retry is a no-op: the same speaker
        and text as the session's latest turn (or, when a ``timestamp`` is given, as the turn of
        the session said at that time, if no other turn shares it) is that turn again, and nothing is written
        (``report.turns == 0``, ``report.sessions_unchanged == 1``); give a ``turn_id``
        to say exactly which turn a call is. A ``turn_id`` the session holds already names
        that turn: the same speaker and text is a retry, other words correct it — the turn is
        replaced in its place (keeping its time unless one is given) and its facts with it.
        A turn without one is ``<session>:<n>``, ``n`` one past the highest number stored.
        A turn id names one turn of its session, also when other processes write to it: the
        store refuses, inside the write's transaction, a turn id another turn holds, and the
        turn is then read again against the session as it is now (renumbered, or found to be
        a retry or a correction), for as long as the busy timeout (at least eight times).
        ``report.turn_id`` and ``report.id`` name the turn written (or found stored): its id in
        the session and its entry id. ``actor`` is recorded in the history log.
        """
        import random
        import time

        from .conversation.ingest import TURN_ATTEMPTS
        from .errors import WriteConflictError

        ns = self._scope(namespace)
        check_turn(speaker, text, session_id, timestamp, turn_id)  # fields named as the caller names them
        actor = self._actor(actor)
        with self._turn_lock:  # this process's threads queue here; other processes meet the store's check
            # Each lost pass means another writer stored a turn: passes go on for the busy timeout
            # (at least TURN_ATTEMPTS), further apart each time, so no writer loses every round
            # (with 8 passes 20 ms apart, 3 processes x 25 turns lost 3-4 of them).
            deadline = time.monotonic() + self._busy_timeout
            attempt = 0
            while True:
                try:
                    return self._add_turn(speaker, text, session_id, timestamp, turn_id, ns, extractor, actor)
                except WriteConflictError:  # another writer took the turn id first: read the session again
                    attempt += 1
                    if attempt >= TURN_ATTEMPTS and time.monotonic() >= deadline:
                        raise
                    time.sleep(random.uniform(0, min(0.25, 0.01 * 2 ** min(attempt, 5))))

    def _add_turn(self, speaker: str, text: str, session_id: str, timestamp: str | datetime | None,
                  turn_id: str | None, ns: str, extractor: "str | Extractor | None",
                  actor: str | None) -> ConversationReport:
        from .conversation.ingest import next_turn_number

        earlier = self.store.get(ns, self.store.ids(ns, Filters(session_id=session_id, kinds=["turn"])))
        sid, parsed, _ = build_turns([{"speaker": speaker, "text": text, "turn_id": turn_id}], session_id,
                                     timestamp, first_index=next_turn_number(session_id, earlier))
        speakers = [e.source.speaker for e in earlier if e.source.speaker]
        conversation = Conversation(session_id=sid, turns=parsed, participants=speakers)
        chosen = get_extractor(extractor, self.llm, self._env_llm)
        report = ConversationReport(extractor=chosen.name if chosen else None, llm=no_llm_calls(chosen))
        # The previous turn is context: "Yes, yesterday." answers the question asked just before.
        # Turns of one write share their time: the last in the session's order is the latest
        # (the store's order: where each turn was first written, an edited one keeps its place).
        latest = max(enumerate(earlier), key=lambda p: (p[1].timestamp or "", p[0]),
                     default=(0, None))[1]
        holders = [i for i, e in enumerate(earlier) if turn_id is not None and e.source.turn_id == parsed[0].turn_id]
        removes: list[str] = []
        if holders:  # that turn again: a retry, or a correction of it
            again = [earlier[i] for i in holders if is_retry(turn_from_entry(earlier[i]), parsed[0], timestamp)]
            if again:
                report.sessions_unchanged = 1  # the session holds that turn: nothing written
                report.turn_id, report.id = again[0].source.turn_id, again[0].id
                return report
            if len(holders) > 1:  # left by concurrent writers before the store refused a taken turn id
                raise InputError(f"turn id {turn_id!r:.80} names {len(holders)} turns of session {sid!r:.80} "
                                 f"({', '.join(earlier[i].id or '' for i in holders)}); a correction replaces one "
                                 "turn: delete the others first")
            named = holders[0]
            stored = turn_from_entry(earlier[named])
            if timestamp is None:
                parsed[0].timestamp = stored.timestamp
            gone = earlier[named].id or ""
            facts = self.store.get(ns, self.store.ids(ns, Filters(session_id=sid, kinds=["fact"])))
            removes = [gone, *(f.id or "" for f in facts if gone in f.derived_from)]
            latest = earlier[named - 1] if named > 0 else None  # what the corrected turn answered
        elif turn_id is None:
            # Sent twice, stored once: nothing written. With its time given, the same words at a
            # time no other turn of the session has are that turn wherever it sits (a turn stamped
            # earlier than the session's latest was stored again on every retry); at a time turns
            # share (a conversation written at once) or without one, only the latest turn can be it.
            stamps = Counter(e.timestamp for e in earlier)
            looked_at = [e for e in earlier if timestamp is not None and stamps[e.timestamp] == 1 and e is not latest]
            looked_at += [latest] if latest is not None else []
            again = [e for e in looked_at if is_retry(turn_from_entry(e), parsed[0], timestamp)]
            if again:
                report.sessions_unchanged = 1
                report.turn_id, report.id = again[0].source.turn_id, again[0].id
                return report
        context = [(turn_from_entry(latest), latest.id or "")] if latest is not None else []
        write_session(self.writer, conversation, ns, chosen, report, replace=False, context=context, removes=removes,
                      actor=actor)
        report.turn_id, report.id = parsed[0].turn_id, parsed[0].to_entry(ns).id  # the entry just written
        return report

    def delete(
        self,
        ids: Sequence[str] | str | None = None,
        *,
        filters: Filters | dict[str, Any] | None = None,
        namespace: str | None = None,
        all: bool = False,
        actor: str | None = None,
    ) -> int:
        """Delete entries by id and/or filter within the namespace. Returns how many.

        Deleting with neither ids nor filters requires ``all=True``, so a slip cannot wipe a namespace.
        An id the namespace does not hold raises `NotFoundError` and nothing is deleted. Each
        deleted entry is logged as a ``DELETE`` event (its history stays readable).
        """
        parsed = Filters.parse(filters)
        if ids is None and parsed.is_empty() and not all:
            raise InputError("delete needs ids or filters (or all=True to empty the namespace)")
        ids = self._ids(ids) if ids is not None else None
        return self.store.delete(self._scope(namespace), ids=ids, filters=parsed, actor=self._actor(actor))

    @staticmethod
    def _ids(ids: Sequence[str] | str) -> list[str]:
        if isinstance(ids, str):
            ids = [ids]
        if not hasattr(ids, "__iter__"):
            raise InputError(f"ids must be an id or a list of ids, not {type(ids).__name__}")
        try:
            return [check_name(i, "id") for i in ids]
        except (ValueError, TypeError) as exc:
            raise InputError(str(exc)) from None

    # -- reads ---------------------------------------------------------------------------
    @staticmethod
    def _messages_query(messages: "Sequence[Any]") -> str:
        """Chat messages as the JSON text a dialogue-context query is read from (text.dialogue)."""
        from .text.dialogue import said_messages

        if not all(isinstance(m, Mapping) for m in messages):
            raise InputError("a query given as a list must be chat messages: objects with a role and content")
        try:
            text = json.dumps([dict(m) for m in messages], ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InputError(f"query: chat messages must be JSON ({exc})") from None
        if not said_messages(text):  # [{"role": "user"}]: never searched as the literal text
            raise InputError("query: no message in it says anything (each needs a role and a non-empty content)")
        return text

    def search(
        self,
        query: "str | Sequence[Mapping[str, Any]]",
        k: int = 10,
        *,
        filters: Filters | dict[str, Any] | None = None,
        namespace: str | None = None,
        preset: "str | os.PathLike[str] | Preset | dict[str, Any]" = "default",
        group_by: str | None = None,
        threshold: float | None = None,
        include_superseded: bool = False,
        show_expired: bool = False,
        now: str | datetime | None = None,
        planner: str | None = None,
        reflect: bool = True,
        explain: bool = False,
        context: int = 0,
    ) -> SearchResult:
        """The ``k`` most useful entries for ``query``, best first, each with per-channel evidence.

        ``query`` is a question, the last few utterances of a conversation (``"User: … Assistant:
        …"``), or a chat API's messages, ``[{"role": "user", "content": "…"}, …]`` (read as that
        dialogue context: docs/QUERIES.md).

        ``filters`` are hard constraints applied inside every channel (see `Filters`).
        ``preset`` is a shipped preset's name, a `Preset`, a table of preset sections (a dict,
        as in a preset file), or a ``.toml`` path. Each channel returns its preset depth or
        ``k`` candidates, whichever is more, so ``k`` hits come back whenever that many match.
        ``threshold`` drops hits whose final score is below it: with the calibrated ``default``
        a score reads as the chance the hit is relevant; other presets' scores are on their
        own scales (docs/PRESETS.md).
        ``group_by="doc"`` (or ``"path"``, ``"session"``) keeps only the best entry per group.
        Superseded entries and entries past their ``expires_at`` are left out, inside every
        channel, unless ``include_superseded`` / ``show_expired`` — but a question about a
        former state or a past time window searches superseded entries too (they were true then). ``now`` is the reference
        time for relative expressions in the query ("last week", "上周"): by default the
        newest entry's time in the namespace that is not after the clock (so questions about
        a past conversation are read from where it ended), else the clock. It is recorded in the trace.
        ``planner`` overrides the preset's (``none``, ``rules`` or ``llm``); ``reflect=False``
        skips the preset's LLM reflection rounds for this query; ``explain`` adds each
        stage's candidates (entry ids with per-channel scores) to ``result.trace``.
        ``context=n`` gives each conversation-turn hit the ``n`` turns before and after it
        in its session (``hit.context``, offsets -n..n), within the same scope and filters; a
        fact hit gets none (its ``derived_from`` names the turns it was restated from).
        """
        if isinstance(query, (list, tuple)) and query:
            query = self._messages_query(query)
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string or a list of chat messages")
        checked(check_unicode, query, "query")
        if len(query) > self.max_query_chars:
            raise InputError(f"query is {len(query):,} characters long; the limit is {self.max_query_chars:,} "
                             "(Memory(max_query_chars=...))")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(f"k must be an integer from 1 to {MAX_K}, not {shown(k)}")
        if group_by is not None and group_by not in GROUP_KEYS:
            raise InputError(f"group_by must be one of {', '.join(GROUP_KEYS)}, not {group_by!r:.40}")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not math.isfinite(threshold)):
            raise InputError(f"threshold must be a number, not {threshold!r:.40}")
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
            raise InputError(f"context must be an integer from 0 to {MAX_CONTEXT}, not {shown(context)}")
        parsed = view(Filters.parse(filters), include_superseded, show_expired)
        chosen = load_preset(preset, allow_files=self.allow_preset_files)
        embedder = self.embedder if "semantic" in chosen.channels else None
        plan_with, reflector = self._planning(planner or chosen.planner, chosen.reflect_rounds)
        pipeline = SearchPipeline(self.store, embedder, self._executor, planner=plan_with, reflector=reflector,
                                  reranker=self._reranking(chosen))
        ns = self._scope(namespace)
        reference, origin = self.reference_time(ns, now)
        result = pipeline.run(query, k, chosen, ns, parsed, group_by=group_by, now=reference, explain=explain,
                              reflect=reflect, context=context)
        result.trace["now"] = {"value": reference.isoformat(), "from": origin}
        if threshold is not None:
            kept = [hit for hit in result.hits if hit.score >= threshold]
            result.trace["threshold"] = {"value": threshold, "dropped": len(result.hits) - len(kept)}
            result.hits = kept
        return result

    def _reranking(self, preset: Preset) -> "Reranker | None":
        """The cross-encoder for `preset`'s rerank stage: its own model, else Memory's, else the env."""
        if "rerank" not in preset.stages:
            return None
        from .rerank import load_reranker, reranker_from_env

        if preset.rerank.model:
            return load_reranker(preset.rerank.model)
        if isinstance(self._reranker, (str, Path)):
            self._reranker = load_reranker(self._reranker)
        return self._reranker if self._reranker is not None else reranker_from_env()

    def _planning(self, name: str, reflect_rounds: int) -> tuple[Planner, Any]:
        """The planner a preset names, and a reflector when it wants reflection and an LLM is set."""
        from .plan import NoPlanner, RulePlanner

        if name not in ("none", "rules", "llm"):
            raise InputError(f"unknown planner {name!r}; choose none, rules or llm")
        rules = RulePlanner()
        planner: Planner = NoPlanner() if name == "none" else rules
        from .plan.rules import NotedPlanner

        client, problem = None, ""
        if name == "llm" or reflect_rounds:
            from .llm import LLMError

            try:  # the environment's client is kept, so a down endpoint's circuit breaker holds across searches
                client = self.llm or self._env_llm.get()
            except LLMError as exc:  # a malformed setting: the search falls back, saying why
                problem = str(exc)
        if name == "llm":
            from .plan.llm import LLMPlanner

            planner = (LLMPlanner(client, fallback=rules) if client is not None else
                       NotedPlanner(rules, f"llm planner not used ({problem}); used rules" if problem else
                                    "no LLM configured (ENGRAM_LLM_BASE_URL, ENGRAM_LLM_MODEL); used rules"))
        reflector = None
        if reflect_rounds and client is not None:
            from .plan.reflect import Reflector

            reflector = Reflector(client, max_rounds=reflect_rounds)
        elif reflect_rounds and problem and name != "llm":
            planner = NotedPlanner(planner, f"reflection skipped ({problem})")
        return planner, reflector

    def reference_time(self, namespace: str | None = None, now: str | datetime | None = None) -> tuple[datetime, str]:
        """The time relative questions are read against, and where it came from
        (``"given"``, ``"newest entry"`` — the namespace's newest turn or document not after the
        clock, facts skipped as their time is their event's; in a namespace of facts only, the
        newest fact — or ``"clock"``)."""
        if now is not None:
            # Its own offset is kept: "yesterday" asked at 23:30 in UTC−8 is that calendar's day.
            given = checked(aware_timestamp, now, "now")
            if given is None:
                raise InputError("now must be an ISO 8601 time (e.g. 2024-03-14T09:00:00), not empty")
            return given, "given"
        newest = self.store.newest_timestamp(self._scope(namespace))
        if newest:
            return datetime.fromisoformat(newest), "newest entry"
        return datetime.now(timezone.utc).replace(microsecond=0), "clock"

    def get(self, ids: Sequence[str] | str, *, namespace: str | None = None) -> list[Entry]:
        """Entries of the namespace by id, in the order asked. Ids it does not hold — missing,
        or another namespace's — are skipped: scope is a hard boundary."""
        return self.store.get(self._scope(namespace), self._ids(ids))

    def list(self, *, namespace: str | None = None, filters: Filters | dict[str, Any] | None = None,
             order: str = "newest", limit: int = 50, cursor: str | None = None,
             include_superseded: bool = False, show_expired: bool = False) -> Page:
        """A page of the namespace's entries, newest (or oldest) first, with the same filters
        as `search`. Pass the page's ``next_cursor`` to get the next one; pages never repeat or
        skip an entry while others are added or deleted meanwhile (a cursor is a position, not
        an offset). ``limit`` is 1 to 1,000. Superseded and expired entries are left out
        unless asked for, as in `search`."""
        if order not in ("newest", "oldest"):
            raise InputError(f"order must be 'newest' or 'oldest', not {order!r:.20}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_K:
            raise InputError(f"limit must be an integer from 1 to {MAX_K}, not {shown(limit)}")
        after = decode_cursor(cursor, order) if cursor is not None else None
        entries, last = self.store.page(self._scope(namespace), view(Filters.parse(filters), include_superseded,
                                                                     show_expired),
                                        newest_first=order == "newest", limit=limit, after=after)
        return Page(results=entries, next_cursor=encode_cursor(last, order) if last is not None else None)

    def namespaces(self) -> "builtins.list[dict[str, Any]]":
        """Every namespace in the store with its entry count and counts per kind, by name.
        ``count`` is every stored entry, history included; ``current`` the ones `search` and
        `count` see (not superseded, not expired)."""
        visible = view(Filters(), False, False)
        return [{"namespace": ns, "count": sum(kinds.values()), "current": self.store.count(ns, visible), "kinds": kinds}
                for ns, kinds in self.store.namespaces().items()]

    def timeline(self, *, namespace: str | None = None, filters: Filters | dict[str, Any] | None = None,
                 field: str = "created", bucket: str = "auto", include_superseded: bool = False,
                 show_expired: bool = False) -> dict[str, Any]:
        """How many entries per period: ``field`` ``"created"`` counts them by when they were
        added, ``"event"`` by their own time (``timestamp``; those without one are counted as
        ``undated``). ``bucket`` is ``day``, ``week`` (from Monday), ``month``, ``year``
        (UTC), or ``auto``: days for up to 60 days of data, weeks up to a year, months up to
        ten years, else years. Returns ``{"field", "bucket", "first", "last", "undated",
        "points": [{"start", "count"}…]}``, oldest first, empty periods left out. Same
        filters and visibility as `list` and `count`."""
        if field not in TIMELINE_FIELDS:
            raise InputError(f"field must be one of {', '.join(TIMELINE_FIELDS)}, not {field!r:.20}")
        if bucket not in ("auto", *TIMELINE_BUCKETS):
            raise InputError(f"bucket must be auto or one of {', '.join(TIMELINE_BUCKETS)}, not {bucket!r:.20}")
        ns = self._scope(namespace)
        scope = view(Filters.parse(filters), include_superseded, show_expired)
        chosen = "day" if bucket == "auto" else bucket
        points, undated, first, last = self.store.timeline(ns, scope, field, chosen)
        if bucket == "auto" and first and last:
            days = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).days
            chosen = "day" if days <= 60 else "week" if days <= 366 else "month" if days <= 3660 else "year"
            if chosen != "day":
                points, undated, first, last = self.store.timeline(ns, scope, field, chosen)
        return {"field": field, "bucket": chosen, "first": normalize_timestamp(first),
                "last": normalize_timestamp(last), "undated": undated,
                "points": [{"start": start, "count": n} for start, n in points]}

    def sessions(self, *, namespace: str | None = None, limit: int = 100, include_superseded: bool = False,
                 show_expired: bool = False) -> "builtins.list[dict[str, Any]]":
        """The namespace's conversation sessions, the most recently written first (at most
        ``limit``, 1 to 1,000): ``{"session_id", "turns", "facts", "count", "speakers",
        "start", "end"}``; ``start`` and ``end`` are the times of its first and last turn (its
        facts' times are what they are about — "yesterday", "next year" — so they count only in a
        session without turns). A session's entries are `list(filters={"session_id": …})`."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_K:
            raise InputError(f"limit must be an integer from 1 to {MAX_K}, not {shown(limit)}")
        return self.store.sessions(self._scope(namespace), view(Filters(), include_superseded, show_expired), limit)

    def count(self, *, namespace: str | None = None, filters: Filters | dict[str, Any] | None = None,
              all_namespaces: bool = False, include_superseded: bool = False, show_expired: bool = False) -> int:
        """How many entries match (in this namespace unless ``all_namespaces``); superseded
        and expired entries are not counted unless asked for, as in `search`."""
        ns = None if all_namespaces else self._scope(namespace)
        return self.store.count(ns, view(Filters.parse(filters), include_superseded, show_expired))

    def stats(self) -> dict[str, Any]:
        """Counts per namespace and kind, the embedding model and file size."""
        return self.store.stats()

    def import_path(self, path: str | Path, *, progress: ProgressCallback | None = None,
                    namespace: str | None = None, format: str | None = None,
                    extractor: "str | Extractor | None" = "offline", skip_bad_files: bool = False) -> dict[str, Any]:
        """Import a folder of ``.md``/``.txt`` notes, a JSONL file of entries, a conversation
        file (LoCoMo JSON, JSONL of turns, OpenAI messages) or an Engram export, recognised by
        its fields unless ``format`` says (``notes``, ``entries``, ``locomo``, ``turns``,
        ``openai``, ``export``). Conversations get facts from ``extractor``. An export of one
        namespace is written into ``namespace``, else into this Memory's when it was opened
        with one (``Memory(path, namespace="bob")``: a namespace is a hard boundary, and this is
        how a namespace is copied); a Memory opened without one restores each entry into the
        namespace it was exported from (a dump of several namespaces only so). A note that is
        not text (not UTF-8 or UTF-16, or holding NUL bytes) fails the whole import before
        anything is written; with ``skip_bad_files`` a folder's other notes are imported and
        the report lists the skipped ones (``skipped_files``). See `engramdb.ingest`."""
        from .ingest import import_path

        into = namespace if namespace is not None else self.namespace if self._bound else None
        return import_path(self.writer, Path(path), namespace=self._scope(namespace), progress=progress,
                           format=format, extractor=get_extractor(extractor, self.llm, self._env_llm),
                           dump_namespace=None if into is None else self._scope(into),
                           skip_bad_files=skip_bad_files)

    def export(self, *, namespace: str | None = None, all_namespaces: bool = False) -> Iterator[dict[str, Any]]:
        """The namespace (or, with ``all_namespaces``, the store) as a lossless dump: a
        header, every entry, every history event — JSON objects to write one per line
        (``engram export``); streamed from one snapshot, in constant memory. `import_path`
        reads it back."""
        from .ingest.dump import export_lines

        return export_lines(self.store, None if all_namespaces else self._scope(namespace))


__all__ = ["Memory", "default_db_path", "EngramError"]
