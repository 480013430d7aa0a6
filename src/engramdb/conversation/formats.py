"""Readers for conversation files, recognised by their fields.

* ``locomo`` — the LoCoMo JSON layout (a list of samples with ``conversation.session_N``).
* ``turns`` — JSONL, one turn per line: ``{session_id, speaker | role, text | content,
  timestamp?, turn_id?, session_time?}``.
* ``openai`` — OpenAI-style chat messages: a JSON list of ``{role, content}``, an object with
  ``messages``, a list of such objects, or JSONL with one ``{"messages": [...]}`` per line.
  ``system``, ``developer`` and ``tool`` messages are instructions, not memory, and are skipped,
  as are messages with no text (an assistant message that only calls a tool, empty content);
  each session counts what it skipped, by role or ``"no text"`` (`Conversation.skipped`), and
  the import report sums them (``skipped``).

Every reader validates the whole file before anything is written; a problem raises
`InputError` naming the file and line (JSONL) or item (JSON).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import InputError
from ..jsonfile import jsonl_objects, read_json
from ..validation import aware_timestamp
from .ingest import speaker_of, unique_turns
from .model import Conversation, Turn, default_session_id

if TYPE_CHECKING:  # pragma: no cover
    from .locomo import LocomoSample

FORMATS = ("locomo", "turns", "openai")
_SKIPPED_ROLES = {"system", "developer", "tool", "function"}
#: the `Conversation.skipped` key of messages with no text to store (tool calls only, or empty)
_NO_TEXT = "no text"


def _time(value: Any) -> datetime | None:
    """ISO text, or epoch seconds (OpenAI exports use ``create_time``/``created`` numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"timestamp {value!r:.30} is out of range as epoch seconds") from None
    if value is not None and not isinstance(value, str):
        raise ValueError(f"timestamp must be ISO 8601 text or epoch seconds, got {type(value).__name__}")
    return aware_timestamp(value)  # its error says why: not ISO 8601, no such date, a year out of range


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    return jsonl_objects(path)


def _json(path: Path) -> Any:
    return read_json(path)


def _first_jsonl(path: Path) -> Any:
    for _, obj in _jsonl(path):
        return obj
    return None


def detect_format(path: Path) -> str:
    """``locomo``, ``turns``, ``openai`` or ``entries`` (a JSONL of `Entry` objects), from the fields."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        first = _first_jsonl(path)
        if isinstance(first, dict):
            if "messages" in first:
                return "openai"
            if ("speaker" in first or "role" in first) and ("text" in first or "content" in first) \
                    and "kind" not in first:
                return "turns"
        return "entries"
    data = _json(path)
    items = data if isinstance(data, list) else [data]
    first = items[0] if items else None
    if isinstance(first, dict):
        if "conversation" in first and isinstance(first["conversation"], dict):
            return "locomo"
        if "messages" in first or ("role" in first and "content" in first):
            return "openai"
    raise InputError(
        f"{path}: not a recognised conversation file (LoCoMo JSON, OpenAI messages, or JSONL of turns); "
        "pass --format to say which"
    )


def read_conversations(path: Path, fmt: str | None = None) -> list[Conversation]:
    """All sessions in `path`, in file order. `fmt` overrides detection (see `FORMATS`)."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = fmt or detect_format(path)
    if fmt == "locomo":
        return _read_locomo(path)
    if fmt == "turns":
        return _read_turns(path)
    if fmt == "openai":
        return _read_openai(path)
    raise InputError(f"{path}: unknown conversation format {fmt!r} (choose from {', '.join(FORMATS)})")


def _read_locomo(path: Path) -> list[Conversation]:
    from .locomo import DataFileError, load_locomo  # the one LoCoMo parser, shared with eval

    try:
        samples = load_locomo(path)
    except DataFileError as exc:
        raise InputError(str(exc)) from exc
    # Session ids carry the sample id: one file holds several unrelated conversations.
    return [c for sample in samples for c in locomo_conversations(sample, f"{sample.sample_id}/")]


def locomo_conversations(sample: "LocomoSample", session_prefix: str = "") -> list[Conversation]:
    """One LoCoMo sample as conversations, one per session (``<prefix>session_<n>``)."""
    out: list[Conversation] = []
    for session in sample.sessions:
        when = session.datetime.replace(tzinfo=timezone.utc) if session.datetime else None
        sid = f"{session_prefix}session_{session.index}"
        turns = [
            Turn(speaker=t.speaker, text=t.text, turn_id=t.dia_id, session_id=sid, timestamp=when,
                 metadata={"image_caption": t.blip_caption} if t.blip_caption else {})
            for t in session.turns
        ]
        out.append(Conversation(session_id=sid, turns=turns, session_time=when, conversation_id=sample.sample_id))
    return out


#: content-part types that hold text: Chat Completions' ``text``, the Responses API's
#: ``input_text``/``output_text`` (a part without a type is read as text too)
_TEXT_PARTS = ("text", "input_text", "output_text", None)


def _text_of(value: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list (other
    parts, images and files, are left out). A part's ``text`` is a string, or the Assistants
    API's ``{"value": …}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for index, part in enumerate(value, start=1):
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, dict) or part.get("type") not in _TEXT_PARTS:
                continue
            text = part.get("text", "")
            if isinstance(text, dict):
                text = text.get("value", "")
            if not isinstance(text, str):
                raise ValueError(f"content part {index}: text must be a string, not {type(text).__name__}")
            texts.append(text)
        return "\n".join(t for t in texts if t.strip())
    if value is None:
        return ""
    raise ValueError(f"content must be text or a list of parts, got {type(value).__name__}")


def _read_turns(path: Path) -> list[Conversation]:
    sessions: dict[str, Conversation] = {}
    counters: dict[str, int] = {}
    lines: dict[str, list[int]] = {}  # each session's turns' line numbers, to name a clash
    for number, obj in _jsonl(path):
        try:
            if not isinstance(obj, dict):
                raise ValueError("each line must be a JSON object")
            speaker = speaker_of(obj)
            text = obj.get("text", obj.get("content"))
            text = _text_of(text).strip()
            if not text:
                raise ValueError("missing or empty 'text' (or 'content')")
            # Lines without a session form one, named after its first turns once all are read.
            sid = str(obj.get("session_id") or _UNNAMED)
            conv = sessions.get(sid)
            if conv is None:
                conv = sessions[sid] = Conversation(session_id=sid, turns=[], session_time=_time(obj.get("session_time")),
                                                    conversation_id=obj.get("conversation_id"))
            counters[sid] = counters.get(sid, 0) + 1
            turn_id = str(obj.get("turn_id") or f"{sid}:{counters[sid]}")  # renamed below if unnamed
            when = _time(obj.get("timestamp")) or conv.session_time
            if conv.session_time is None and when is not None:
                conv.session_time = when
            role = obj.get("role") if "speaker" in obj else None
            conv.turns.append(Turn(speaker=speaker, text=text, turn_id=turn_id, session_id=sid,
                                   timestamp=when, role=role))
            lines.setdefault(sid, []).append(number)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{path}:{number}: {exc}") from exc
    for sid, conv in sessions.items():  # one turn id, one turn: the same line twice is one turn
        at = lines[sid]
        conv.turns = unique_turns(conv.turns, lambda i: f"{path}:{at[i]}", lambda i: f"line {at[i]}")
    unnamed = sessions.pop(_UNNAMED, None)
    if unnamed is not None:
        _name_session(unnamed, default_session_id(unnamed.turns, unnamed.session_time))
        unnamed.legacy_session_id = "session_1"
        sessions[unnamed.session_id] = unnamed  # a file's own "session-…" id: one session
    return list(sessions.values())


#: the placeholder id of turns that name no session while a file is read
_UNNAMED = "\x00unnamed"


def _name_session(conv: Conversation, sid: str) -> None:
    """Give a session read without an id its derived one, in every turn and default turn id."""
    old = conv.session_id
    conv.session_id = sid
    for turn in conv.turns:
        turn.session_id = sid
        if turn.turn_id.startswith(old + ":"):
            turn.turn_id = sid + turn.turn_id[len(old):]


def _openai_session(obj: Any, where: str, place: int = 1) -> Conversation:
    if isinstance(obj, dict) and "messages" in obj:
        messages, meta = obj["messages"], obj
    elif isinstance(obj, list):
        messages, meta = obj, {}
    else:
        raise InputError(f"{where}: expected a list of messages or an object with 'messages'")
    if not isinstance(messages, list):
        raise InputError(f"{where}: 'messages' must be a list")
    named = meta.get("session_id") or meta.get("id")
    sid = str(named or _UNNAMED)
    try:
        start = _time(meta.get("timestamp") or meta.get("create_time") or meta.get("created"))
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from exc
    conv = Conversation(session_id=sid, turns=[], session_time=start, conversation_id=meta.get("conversation_id"))
    for i, msg in enumerate(messages, start=1):
        try:
            if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
                raise ValueError("a message needs a string 'role'")
            if msg["role"] in _SKIPPED_ROLES:
                conv.skipped[msg["role"]] = conv.skipped.get(msg["role"], 0) + 1
                continue
            text = _text_of(msg.get("content")).strip()
            if not text:  # e.g. an assistant message that only called a tool: counted in the report
                conv.skipped[_NO_TEXT] = conv.skipped.get(_NO_TEXT, 0) + 1
                continue
            when = _time(msg.get("timestamp") or msg.get("create_time")) or start
            speaker = msg.get("name") or msg["role"]
            conv.turns.append(Turn(speaker=str(speaker), text=text, turn_id=f"{sid}:{i}", session_id=sid,
                                   timestamp=when, role=msg["role"]))
        except (ValueError, TypeError) as exc:
            raise InputError(f"{where}, message {i}: {exc}") from exc
    if not named:
        # Named after its first turns, not its place in the file: "session_1" of every file
        # would be one session, and importing a second file would replace the first's turns.
        _name_session(conv, default_session_id(conv.turns, conv.session_time))
        conv.legacy_session_id = f"session_{place}"
    return conv


def _read_openai(path: Path) -> list[Conversation]:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return _distinct([_openai_session(obj, f"{path}:{n}", n) for n, obj in _jsonl(path)])
    data = _json(path)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "messages" in data[0]:
        return _distinct([_openai_session(obj, f"{path}: item {i}", i) for i, obj in enumerate(data, start=1)])
    return [_openai_session(data, str(path))]


def _distinct(sessions: list[Conversation]) -> list[Conversation]:
    """Sessions of one file whose derived ids coincide (the same first turns, no start time)
    are told apart by their place in the file."""
    seen: dict[str, int] = {}
    for conv in sessions:
        seen[conv.session_id] = seen.get(conv.session_id, 0) + 1
        if seen[conv.session_id] > 1 and conv.session_id.startswith("session-"):
            _name_session(conv, f"{conv.session_id}-{seen[conv.session_id]}")
    return sessions
