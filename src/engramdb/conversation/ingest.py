"""Writing conversations: turns plus extracted facts, one transaction per session.

A session is the unit of atomicity and of idempotence. Re-importing a session whose turns
are all stored unchanged does nothing (no extraction, no LLM call). A session that changed
is replaced as a whole: its new turns and facts are written and the ones it no longer
produces are deleted, in the same transaction, so a crash leaves the previous version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ..errors import InputError
from ..model import Entry
from ..store.base import Filters
from .extract import ExtractionResult, Extractor
from ..validation import aware_timestamp
from .model import Conversation, Turn, as_utc, default_session_id

if TYPE_CHECKING:  # pragma: no cover
    from ..writer import Writer

ProgressCallback = Callable[[int, int], None]


@dataclass(slots=True)
class ConversationReport:
    """What an import did. ``failures`` lists what extraction could not do (never silent)."""

    sessions: int = 0
    sessions_unchanged: int = 0
    turns: int = 0
    facts: int = 0
    written: int = 0
    removed: int = 0
    extractor: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)
    llm: dict[str, int] | None = None
    #: `Memory.add_turn` only: the turn's id in its session (give it as ``turn_id`` to correct
    #: the turn) and its entry id (for `get`, `history`), whether written now or found stored
    turn_id: str | None = None
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
        for one_turn in ("turn_id", "id"):  # an import of many turns has no one turn to name
            if out[one_turn] is None:
                del out[one_turn]
        return out


def build_turns(
    items: Iterable[Turn | dict[str, Any] | tuple[str, str]],
    session_id: str | None,
    session_time: str | datetime | None,
    first_index: int = 1,
) -> tuple[str, list[Turn], datetime]:
    """Validate user-given turns (``Turn``, ``{"speaker"|"role", "text"|"content", ...}`` or
    ``(speaker, text)``) into `Turn` objects with absolute times. Raises `InputError` naming the item."""
    try:
        start = aware_timestamp(session_time) or datetime.now().astimezone().replace(microsecond=0)
    except ValueError as exc:
        raise InputError(f"session_time: {exc}") from exc
    raw: list[tuple[str, str, Any, Any, Any]] = []
    named: dict[str, int] = {}  # the sessions `Turn` items name, and the first item naming each
    for index, item in enumerate(items):
        if isinstance(item, Turn):
            if item.session_id:
                named.setdefault(item.session_id, index)
            raw.append((item.speaker, item.text, item.timestamp, item.turn_id or None, item.role))
            continue
        if isinstance(item, tuple) and len(item) == 2:
            item = {"speaker": item[0], "text": item[1]}
        if not isinstance(item, dict):
            raise InputError(f"turn {index}: expected a dict, a Turn or a (speaker, text) pair")
        text = item.get("text", item.get("content"))
        try:
            speaker = speaker_of(item)
        except ValueError as exc:
            raise InputError(f"turn {index}: {exc}") from None
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"turn {index}: missing or empty 'text' (or 'content')")
        unknown = set(item) - {"speaker", "role", "text", "content", "timestamp", "turn_id", "metadata"}
        if unknown:
            raise InputError(f"turn {index}: unknown field(s) {', '.join(sorted(unknown))}")
        raw.append((speaker.strip(), text.strip(), item.get("timestamp"), item.get("turn_id"),
                    item.get("role") if "speaker" in item else None))
    if not raw:
        raise InputError("a conversation needs at least one turn")
    # A Turn's own session_id is the session (it was silently replaced by the call's): turns of
    # two sessions, or of another session than the one the call names, are refused.
    expected = session_id if session_id is not None else next(iter(named), None)
    other = next(((n, i) for n, i in named.items() if n != expected), None)
    if other is not None:
        said = "the call's" if session_id is not None else f"turn {named[expected]}'s"  # type: ignore[index]
        raise InputError(f"turn {other[1]}: its session_id {other[0]!r:.80} is not {said} ({expected!r:.80}); "
                         "write one session per call")
    sid = session_id or next(iter(named), None) or default_session_id([Turn(s, t) for s, t, *_ in raw])
    turns: list[Turn] = []
    for index, (speaker, text, when, turn_id, role) in enumerate(raw):
        try:
            stamp = aware_timestamp(when) if when is not None else start
        except ValueError as exc:  # why: not ISO 8601, a date that does not exist, a year out of range
            raise InputError(f"turn {index}: {exc}") from exc
        turns.append(Turn(speaker=speaker, text=text, turn_id=str(turn_id or f"{sid}:{first_index + index}"),
                          session_id=sid, timestamp=stamp, role=role))
    return sid, unique_turns(turns, lambda index: f"turn {index}"), start


def speaker_of(item: dict[str, Any]) -> str:
    """A turn's speaker: its ``speaker``, else its ``role``, stripped. Raises ValueError saying
    which is wrong: neither given, not a string (``"speaker": 5``) or blank."""
    key = next((k for k in ("speaker", "role") if item.get(k) not in (None, "")), None)
    if key is None:
        raise ValueError("missing 'speaker' (or 'role')")
    value = item[key]
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"'{key}' is blank")
    return value.strip()


def unique_turns(turns: list[Turn], name: Callable[[int], str],
                 earlier_name: Callable[[int], str] | None = None) -> list[Turn]:
    """`turns` of one session with a turn id given twice for the same turn (speaker, words and
    time) kept once; a turn id given to another turn raises `InputError` naming the id and
    both places (``name(index)``, the first one by ``earlier_name(index)`` when given): a turn
    id names one turn of its session, as an entry id in a JSONL file names one entry."""
    first: dict[str, int] = {}
    kept: list[Turn] = []
    for index, turn in enumerate(turns):
        earlier = first.setdefault(turn.turn_id, index)
        if earlier == index:
            kept.append(turn)
            continue
        was = turns[earlier]
        if (was.speaker, was.text) != (turn.speaker, turn.text):
            how = "with other words"
        elif was.timestamp != turn.timestamp:
            how = "at another time"
        else:
            continue  # the same turn again: stored once
        where = (earlier_name or name)(earlier)
        raise InputError(f"{name(index)}: turn id {turn.turn_id!r} is also that of {where}, {how}; "
                         "a turn id names one turn of its session")
    return kept


def unique_sessions(conversations: Sequence[Conversation]) -> list[Conversation]:
    """`conversations` with a session given twice the same kept once; a session id given to
    other turns raises `InputError` (the second would replace the first as it is written)."""
    seen: dict[str, Conversation] = {}
    kept: list[Conversation] = []
    for conversation in conversations:
        sid = conversation.session_id
        conversation.turns = unique_turns(conversation.turns, lambda i: f"session {sid!r:.80}, turn {i + 1}")
        earlier = seen.setdefault(sid, conversation)
        if earlier is conversation:
            kept.append(conversation)
        elif _said(earlier) != _said(conversation):
            raise InputError(f"session {sid!r:.80} is given twice, with other turns; a session id names one "
                             "conversation (give each its own id, or join their turns)")
    return kept


def _said(conversation: Conversation) -> list[tuple[str, str, str, datetime | None]]:
    return [(t.turn_id, t.speaker, t.text, t.timestamp) for t in conversation.turns]


def check_turn(speaker: Any, text: Any, session_id: Any, timestamp: Any = None, turn_id: Any = None) -> None:
    """Raise `InputError` for one turn `add_turn` cannot store, naming the field as its caller
    does (``timestamp``, ``speaker``…), before anything is read or written."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise InputError("session_id must be a non-empty string")
    try:
        aware_timestamp(timestamp, "timestamp")
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if turn_id is not None and not isinstance(turn_id, str):
        raise InputError(f"turn_id must be a string, not {type(turn_id).__name__}")
    try:
        build_turns([{"speaker": speaker, "text": text, "turn_id": turn_id}], session_id, timestamp)
    except InputError as exc:
        raise InputError(str(exc).removeprefix("turn 0: ")) from None


def write_session(writer: "Writer", conversation: Conversation, namespace: str, extractor: Extractor | None,
                  report: ConversationReport, *, replace: bool = True,
                  context: Sequence[tuple[Turn, str]] = (), removes: Sequence[str] = (),
                  actor: str | None = None) -> None:
    """Store one session's turns and facts in one transaction (see the module docstring).

    ``replace=False`` appends instead (earlier turns and facts stay); ``context`` gives stored
    turns (with their entry ids) the extractor may read but that are not written again;
    ``removes`` names entries the new ones take the place of (a corrected turn and its facts);
    ``actor`` is recorded in the history log.
    """
    turn_entries = turn_entries_of(conversation, namespace)
    if report.llm is None:
        report.llm = no_llm_calls(extractor)
    # Each turn records which extractor read it, so re-importing with another extractor, or
    # after a failed LLM window, counts as a change and extracts again (instead of a no-op).
    done_by = extractor.name if extractor else None
    if done_by:
        for entry in turn_entries:
            entry.metadata["extracted_by"] = done_by
    new, unchanged, changed = writer.store.classify(turn_entries)
    report.sessions += 1
    report.turns += len(turn_entries)
    legacy = legacy_session(writer, conversation, namespace) if replace else []
    # A file that lost turns changed too: its stored turns the file no longer has must go.
    shorter = replace and not new and not changed and bool(
        set(writer.store.ids(namespace, Filters(session_id=conversation.session_id, kinds=["turn"])))
        - {e.id for e in turn_entries})
    if not new and not changed and not legacy and not shorter:
        report.sessions_unchanged += 1
        return
    ids = {t.turn_id: e.id for t, e in zip(conversation.turns, turn_entries) if e.id is not None}
    seen = conversation
    if context:
        ids.update({t.turn_id: entry_id for t, entry_id in context})
        seen = replace_turns(conversation, [t for t, _ in context] + conversation.turns)
    before = llm_usage(extractor)
    result = extractor.extract(seen, ids, namespace) if extractor else ExtractionResult()
    after = llm_usage(extractor)
    if before is not None and after is not None:  # this session's calls (the client may have made others)
        report.llm = {k: (report.llm or {}).get(k, 0) + v - before.get(k, 0) for k, v in after.items()}
    if not replace:  # appending turns: keep facts only for the turns being added
        wanted = {e.id for e in new + changed}
        result.facts = [f for f in result.facts if set(f.derived_from) & wanted]
    failed = {t for failure in result.failures for t in failure.get("turn_ids", [])}
    for turn, entry in zip(conversation.turns, turn_entries):
        if turn.turn_id in failed:
            entry.metadata["extracted_by"] = f"{done_by} (failed)"
    for failure in result.failures:
        report.failures.append({"session_id": conversation.session_id,
                                **{k: v for k, v in failure.items() if k != "turn_ids"}})
    entries: list[Entry] = turn_entries + result.facts
    scope = Filters(session_id=conversation.session_id) if replace else None
    # A turn id names one turn of its session: checked in the write's transaction, after its
    # deletes (a re-import's scope, a correction's removes), against what other writers stored.
    written, _, removed = writer.write(entries, namespace=namespace, replaces=scope, removes=[*legacy, *removes],
                                       unique_turns=True, actor=actor)
    if not written and not removed:
        # Another writer stored this very session between the check above and this write (two
        # imports of one file at once): nothing was written here, and the report says so.
        report.sessions_unchanged += 1
        return
    report.facts += len(result.facts)
    report.written += written
    report.removed += removed


def turn_entries_of(conversation: Conversation, namespace: str) -> list[Entry]:
    """The session's turns as normalised entries; a turn that cannot be stored raises `InputError`."""
    entries = []
    for index, turn in enumerate(conversation.turns, start=1):
        try:
            entries.append(turn.to_entry(namespace))
        except (ValueError, TypeError) as exc:
            raise InputError(f"session {conversation.session_id!r:.80}, turn {index}: {exc}") from None
    return entries


def legacy_session(writer: "Writer", conversation: Conversation, namespace: str) -> list[str]:
    """The entries (turns and facts) of the session an earlier version stored this one as,
    when it was read without an id: found by its old id and the same first three turns."""
    old_id = conversation.legacy_session_id
    if old_id is None or old_id == conversation.session_id:
        return []
    store = writer.store
    turns = store.get(namespace, store.ids(namespace, Filters(session_id=old_id, kinds=["turn"]))[:3])
    said = [(t.speaker, t.text) for t in (turn_from_entry(e) for e in turns)]
    if not said or said != [(t.speaker, t.text) for t in conversation.turns[:len(said)]]:
        return []  # another conversation, or a session someone named so
    return store.ids(namespace, Filters(session_id=old_id))


def replace_turns(conversation: Conversation, turns: list[Turn]) -> Conversation:
    return Conversation(session_id=conversation.session_id, turns=turns, session_time=conversation.session_time,
                        conversation_id=conversation.conversation_id, participants=conversation.participants)


def turn_from_entry(entry: Entry) -> Turn:
    """A stored ``turn`` entry back as a `Turn` (speaker prefix and photo caption removed)."""
    speaker = entry.source.speaker or ""
    text = entry.text.removeprefix(f"{speaker}: ")
    caption = entry.metadata.get("image_caption")
    if caption:
        text = text.removesuffix(f" [shared a photo: {caption}]")
    return Turn(speaker=speaker, text=text, turn_id=entry.source.turn_id or "", session_id=entry.source.session_id or "",
                timestamp=as_utc(entry.timestamp), role=entry.metadata.get("role"), metadata=dict(entry.metadata))


def ingest_conversations(writer: "Writer", conversations: Sequence[Conversation], *, namespace: str,
                         extractor: Extractor | None, progress: ProgressCallback | None = None) -> ConversationReport:
    """Write every session of `conversations`; see `write_session`."""
    report = ConversationReport(extractor=extractor.name if extractor else None, llm=no_llm_calls(extractor))
    conversations = unique_sessions(conversations)  # a turn id names one turn, a session id one session
    for conversation in conversations:  # the whole file is checked before the first write
        turn_entries_of(conversation, namespace)
    total = sum(len(c.turns) for c in conversations)
    done = 0
    for conversation in conversations:
        if conversation.turns:
            write_session(writer, conversation, namespace, extractor, report)
        done += len(conversation.turns)
        if progress is not None:
            progress(done, total)
    return report


def llm_usage(extractor: Extractor | None) -> dict[str, int] | None:
    """The extractor's LLM client's running totals, or None when it has no client."""
    usage = getattr(getattr(extractor, "client", None), "usage", None)
    return usage.to_dict() if usage is not None else None


def no_llm_calls(extractor: Extractor | None) -> dict[str, int] | None:
    """A report's ``llm`` before any call: zeros for an extractor with an LLM client, else None."""
    usage = llm_usage(extractor)
    return {k: 0 for k in usage} if usage is not None else None


# The fewest passes of `Memory.add_turn` before a conflict reaches the caller (it goes on for the
# busy timeout): each pass loses only to a writer that stored a turn of the same session, with
# the id this one took, in between (so W writers appending to one session at once each lose at
# most W - 1 times per round).
TURN_ATTEMPTS = 8


def next_turn_number(session_id: str, turns: Sequence[Entry]) -> int:
    """The number of a session's next ``<session>:<n>`` turn id, given its stored turns: one
    past the highest such number stored (and past their count, for a session whose turns are
    named otherwise), so a number is never given again while a turn holds it — a count would
    give a deleted turn's successor's number to the next turn."""
    prefix = f"{session_id}:"
    highest = len(turns)
    for entry in turns:
        number = (entry.source.turn_id or "").removeprefix(prefix)
        if number != entry.source.turn_id and number.isascii() and number.isdigit():
            highest = max(highest, int(number))
    return highest + 1


def is_retry(latest: Turn, turn: Turn, timestamp: object) -> bool:
    """Whether `turn` repeats the session's latest turn: the same speaker and words, and the
    same time when the caller gave one (without one, the clock differs on every call)."""
    return (latest.speaker == turn.speaker and latest.text == turn.text
            and (timestamp is None or latest.timestamp == turn.timestamp))
