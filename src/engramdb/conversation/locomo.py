"""The LoCoMo conversation layout (a JSON list of samples with ``conversation.session_N``),
parsed strictly: used by `engram import` (conversation memory) and by `engram eval locomo`.

A malformed file raises `DataFileError` (``path:line: reason``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from ..errors import DataFileError

#: LoCoMo question categories, as documented with the data set.
LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_DATETIME_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_SESSION_RE = re.compile(r"^session_(\d+)$")
_EVIDENCE_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SEPARATORS_RE = re.compile(r"[\s;,]+")


def parse_locomo_datetime(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` into a naive datetime. Raises ValueError."""
    match = _DATETIME_RE.match(text)
    if not match:
        raise ValueError(f"unrecognised date/time {text!r} (expected e.g. '1:56 pm on 8 May, 2023')")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month {month_name!r} in {text!r}")
    h = int(hour)
    if not 1 <= h <= 12:
        raise ValueError(f"hour {h} out of range in 12-hour time {text!r}")
    h = h % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute))


def normalize_evidence(raw: str) -> tuple[list[str], list[str]]:
    """Split one raw evidence string into canonical dia_ids and unparseable fragments.

    ``"D:11:26"`` -> ``["D11:26"]``; ``"D30:05"`` -> ``["D30:5"]``; ``"D9:1 D4:4; D4:6"`` ->
    three ids; ``"D10:"`` -> no id, one fragment. Returns ``(ids, fragments)``.
    """
    ids = [f"D{int(s)}:{int(t)}" for s, t in _EVIDENCE_RE.findall(raw)]
    rest = _EVIDENCE_RE.sub(" ", raw)
    fragments = [f for f in _SEPARATORS_RE.split(rest) if f]
    return ids, fragments


@dataclass(slots=True)
class LocomoTurn:
    """One dialogue turn. ``dia_id`` is canonical (``D<session>:<n>``)."""

    dia_id: str
    speaker: str
    text: str
    session: int
    blip_caption: str | None = None


@dataclass(slots=True)
class LocomoSession:
    """One session of a conversation, with its start time (None if the file gives none)."""

    index: int
    date_time_raw: str | None
    datetime: datetime | None
    turns: list[LocomoTurn]


@dataclass(slots=True)
class EvidenceIssue:
    """An evidence reference that was repaired or could not be used.

    kind: ``"normalised"`` (rewritten to a canonical id that exists), ``"malformed"`` (no id
    could be read from the fragment) or ``"unknown"`` (a well-formed id that names no turn).
    """

    sample_id: str
    question_index: int
    raw: str
    kind: str
    normalised: str | None = None


@dataclass(slots=True)
class LocomoQuestion:
    """One QA item. ``evidence`` holds the canonical dia_ids that exist in the conversation."""

    index: int
    question: str
    answer: str | None
    category: int
    evidence: list[str]
    raw_evidence: list[str]
    adversarial_answer: str | None = None


@dataclass(slots=True)
class LocomoSample:
    """One LoCoMo conversation with its questions and the evidence problems found in it."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: list[LocomoSession]
    questions: list[LocomoQuestion]
    evidence_issues: list[EvidenceIssue] = field(default_factory=list)

    @property
    def speakers(self) -> list[str]:
        return [self.speaker_a, self.speaker_b]

    def turns(self) -> Iterator[tuple[LocomoSession, LocomoTurn]]:
        """All turns in conversation order, each with its session."""
        for session in self.sessions:
            for turn in session.turns:
                yield session, turn


def _answer_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _parse_sample(obj: Any, path: Path, i: int) -> LocomoSample:
    where = f"[{i}]"
    if not isinstance(obj, dict):
        raise DataFileError(path, f"sample must be a JSON object, got {type(obj).__name__}", where=where)
    sample_id = str(obj.get("sample_id", f"sample_{i}"))
    conv = obj.get("conversation")
    if not isinstance(conv, dict):
        raise DataFileError(path, "missing or non-object 'conversation'", where=where)
    speakers = []
    for key in ("speaker_a", "speaker_b"):
        value = conv.get(key)
        if not isinstance(value, str) or not value.strip():
            raise DataFileError(path, f"missing speaker name '{key}'", where=f"{where}.conversation")
        speakers.append(value.strip())

    sessions: list[LocomoSession] = []
    seen_ids: set[str] = set()
    for key in sorted((k for k in conv if _SESSION_RE.match(k)), key=lambda k: int(k.split("_")[1])):
        n = int(key.split("_")[1])
        swhere = f"{where}.conversation.{key}"
        raw_turns = conv[key]
        if not isinstance(raw_turns, list):
            raise DataFileError(path, "a session must be a list of turns", where=swhere)
        raw_dt = conv.get(f"{key}_date_time")
        dt: datetime | None = None
        if raw_dt not in (None, ""):
            try:
                dt = parse_locomo_datetime(str(raw_dt))
            except ValueError as exc:
                raise DataFileError(path, str(exc), where=f"{swhere}_date_time") from None
        turns: list[LocomoTurn] = []
        for j, t in enumerate(raw_turns):
            twhere = f"{swhere}[{j}]"
            if not isinstance(t, dict):
                raise DataFileError(path, "a turn must be a JSON object", where=twhere)
            for name in ("speaker", "dia_id", "text"):
                if not isinstance(t.get(name), str):
                    raise DataFileError(path, f"turn field '{name}' missing or not a string", where=twhere)
            ids, _ = normalize_evidence(t["dia_id"])
            dia_id = ids[0] if len(ids) == 1 else t["dia_id"].strip()
            if dia_id in seen_ids:
                raise DataFileError(path, f"duplicate dia_id {dia_id!r}", where=twhere)
            seen_ids.add(dia_id)
            caption = t.get("blip_caption")
            turns.append(
                LocomoTurn(
                    dia_id=dia_id,
                    speaker=t["speaker"].strip(),
                    text=t["text"],
                    session=n,
                    blip_caption=caption if isinstance(caption, str) else None,
                )
            )
        sessions.append(LocomoSession(index=n, date_time_raw=raw_dt, datetime=dt, turns=turns))
    if not sessions:
        raise DataFileError(path, "conversation has no session_N lists", where=f"{where}.conversation")

    qa = obj.get("qa", [])
    if not isinstance(qa, list):
        raise DataFileError(path, "'qa' must be a list", where=where)
    questions: list[LocomoQuestion] = []
    issues: list[EvidenceIssue] = []
    for j, q in enumerate(qa):
        qwhere = f"{where}.qa[{j}]"
        if not isinstance(q, dict):
            raise DataFileError(path, "a QA item must be a JSON object", where=qwhere)
        text = q.get("question")
        if not isinstance(text, str) or not text.strip():
            raise DataFileError(path, "missing 'question' text", where=qwhere)
        try:
            category = int(q.get("category"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise DataFileError(path, f"category {q.get('category')!r} is not an integer", where=qwhere) from None
        if category not in LOCOMO_CATEGORIES:
            raise DataFileError(path, f"category {category} is not one of 1-5", where=qwhere)
        raw_evidence = q.get("evidence", [])
        if isinstance(raw_evidence, str):
            raw_evidence = [raw_evidence]
        if not isinstance(raw_evidence, list) or not all(isinstance(e, str) for e in raw_evidence):
            raise DataFileError(path, "'evidence' must be a list of strings", where=qwhere)
        evidence: list[str] = []
        for raw in raw_evidence:
            ids, fragments = normalize_evidence(raw)
            for frag in fragments:
                issues.append(EvidenceIssue(sample_id, j, raw, "malformed"))
            for ev in ids:
                if ev not in seen_ids:
                    issues.append(EvidenceIssue(sample_id, j, raw, "unknown", ev))
                    continue
                if ev != raw.strip():
                    issues.append(EvidenceIssue(sample_id, j, raw, "normalised", ev))
                if ev not in evidence:
                    evidence.append(ev)
        questions.append(
            LocomoQuestion(
                index=j,
                question=text.strip(),
                answer=_answer_text(q.get("answer")),
                category=category,
                evidence=evidence,
                raw_evidence=list(raw_evidence),
                adversarial_answer=_answer_text(q.get("adversarial_answer")),
            )
        )
    return LocomoSample(
        sample_id=sample_id,
        speaker_a=speakers[0],
        speaker_b=speakers[1],
        sessions=sessions,
        questions=questions,
        evidence_issues=issues,
    )


def load_locomo(path: str | Path) -> list[LocomoSample]:
    """Load a LoCoMo file (e.g. ``locomo10.json``): a JSON list of samples (or one sample).

    Evidence ids are normalised; the ones that cannot be used are kept in each sample's
    ``evidence_issues``. Raises :class:`DataFileError` on a missing or malformed file.
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8").removeprefix("\ufeff")  # a byte-order mark is no JSON
    except FileNotFoundError:
        raise DataFileError(p, "file not found") from None
    except IsADirectoryError:
        raise DataFileError(p, "is a directory, expected a LoCoMo JSON file") from None
    except UnicodeDecodeError as exc:
        raise DataFileError(p, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataFileError(p, f"invalid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})",
                            line=exc.lineno) from None
    except RecursionError:
        raise DataFileError(p, "JSON nested too deeply") from None
    except ValueError as exc:
        raise DataFileError(p, f"invalid JSON value ({exc})") from None
    if isinstance(data, dict):
        if "conversation" not in data:
            keys = ", ".join(sorted(map(str, data))[:5]) or "none"
            raise DataFileError(p, f"expected a JSON list of samples (or one sample with 'conversation'), "
                                   f"not an object with keys {keys}")
        data = [data]
    if not isinstance(data, list) or not data:
        raise DataFileError(p, "expected a non-empty JSON list of samples")
    samples = [_parse_sample(obj, p, i) for i, obj in enumerate(data)]
    counted = Counter(s.sample_id for s in samples)
    dupes = sorted(s for s, n in counted.items() if n > 1)
    if dupes:
        raise DataFileError(p, f"duplicate sample_id(s): {', '.join(dupes)}")
    return samples
