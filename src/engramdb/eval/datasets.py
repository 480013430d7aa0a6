"""Loaders for the public evaluation layouts: BEIR (corpus/queries/qrels) and LoCoMo.

Both loaders are strict about structure (a malformed file raises :class:`EvalDataError`
naming the file, the line or JSON path, and the reason) and tolerant about the known
blemishes of real data: LoCoMo evidence ids such as ``D:11:26``, ``D30:05`` or
``"D9:1 D4:4"`` are normalised, and what cannot be repaired is counted, never silently lost.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

__all__ = [
    "EvalDataError",
    "BeirDoc",
    "BeirDataset",
    "load_beir",
    "LocomoTurn",
    "LocomoSession",
    "LocomoQuestion",
    "EvidenceIssue",
    "LocomoSample",
    "load_locomo",
    "parse_locomo_datetime",
    "normalize_evidence",
    "LOCOMO_CATEGORIES",
]

#: LoCoMo question categories, as documented with the data set.
LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


class EvalDataError(ValueError):
    """A data set file is missing or malformed.

    ``str(err)`` reads ``path:line: reason`` (or ``path: at <where>: reason``) so the user can
    jump straight to the offending spot.
    """

    def __init__(self, path: str | Path, reason: str, line: int | None = None, where: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.line = line
        self.where = where
        loc = self.path
        if line is not None:
            loc += f":{line}"
        if where:
            loc += f": at {where}"
        super().__init__(f"{loc}: {reason}")


# --------------------------------------------------------------------------- BEIR


@dataclass(slots=True)
class BeirDoc:
    """One corpus document."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class BeirDataset:
    """A BEIR data set split: corpus, queries and graded relevance judgements.

    ``qrels[query_id][doc_id]`` is the judged grade (may be 0 or negative = not relevant).
    ``query_ids`` lists, in queries-file order, the queries that are evaluated: those that
    have at least one judgement with a grade > 0.
    """

    name: str
    corpus: dict[str, BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    query_ids: list[str]
    #: judgements whose document is not in the corpus (they still count as relevant)
    qrels_missing_docs: int = 0
    #: judged query ids that are not in the queries file (they cannot be evaluated)
    qrels_missing_queries: int = 0

    def relevant(self, query_id: str) -> dict[str, int]:
        """The judgements of one query with a grade > 0 (the relevant documents)."""
        return {d: g for d, g in self.qrels.get(query_id, {}).items() if g > 0}


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; raise EvalDataError on bad JSON."""
    try:
        handle = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        raise EvalDataError(path, "file not found") from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise EvalDataError(path, f"invalid JSON ({exc.msg} at column {exc.colno})", line=lineno) from None
            if not isinstance(obj, dict):
                raise EvalDataError(path, f"expected a JSON object, got {type(obj).__name__}", line=lineno)
            yield lineno, obj


def _required_id(obj: dict[str, Any], path: Path, lineno: int) -> str:
    if "_id" not in obj:
        raise EvalDataError(path, "missing required field '_id'", line=lineno)
    value = obj["_id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise EvalDataError(path, f"field '_id' must be a non-empty string, got {value!r}", line=lineno)
    return str(value)


def _optional_str(obj: dict[str, Any], name: str, path: Path, lineno: int, required: bool = False) -> str:
    if name not in obj or obj[name] is None:
        if required:
            raise EvalDataError(path, f"missing required field '{name}'", line=lineno)
        return ""
    value = obj[name]
    if not isinstance(value, str):
        raise EvalDataError(path, f"field '{name}' must be a string, got {type(value).__name__}", line=lineno)
    return value


def _load_corpus(path: Path) -> dict[str, BeirDoc]:
    corpus: dict[str, BeirDoc] = {}
    for lineno, obj in _iter_jsonl(path):
        doc_id = _required_id(obj, path, lineno)
        if doc_id in corpus:
            raise EvalDataError(path, f"duplicate document id {doc_id!r}", line=lineno)
        title = _optional_str(obj, "title", path, lineno)
        text = _optional_str(obj, "text", path, lineno, required=True)
        if not (title.strip() or text.strip()):
            raise EvalDataError(path, f"document {doc_id!r} has neither title nor text", line=lineno)
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise EvalDataError(path, "field 'metadata' must be a JSON object", line=lineno)
        corpus[doc_id] = BeirDoc(id=doc_id, title=title, text=text, metadata=metadata)
    if not corpus:
        raise EvalDataError(path, "corpus is empty")
    return corpus


def _load_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for lineno, obj in _iter_jsonl(path):
        qid = _required_id(obj, path, lineno)
        if qid in queries:
            raise EvalDataError(path, f"duplicate query id {qid!r}", line=lineno)
        text = _optional_str(obj, "text", path, lineno, required=True)
        if not text.strip():
            raise EvalDataError(path, f"query {qid!r} has empty text", line=lineno)
        queries[qid] = text
    return queries


def _load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV (``query-id<TAB>corpus-id<TAB>score``; header optional)."""
    try:
        handle = path.open("r", encoding="utf-8", newline="")
    except FileNotFoundError:
        raise EvalDataError(path, "file not found") from None
    qrels: dict[str, dict[str, int]] = {}
    with handle:
        for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) == 1:  # tolerate space-separated files
                row = row[0].split()
            if lineno == 1 and row[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            if len(row) != 3:
                raise EvalDataError(path, f"expected 3 columns (query-id, corpus-id, score), got {len(row)}", line=lineno)
            qid, did, score_text = (cell.strip() for cell in row)
            if not qid or not did:
                raise EvalDataError(path, "empty query-id or corpus-id", line=lineno)
            try:
                score_f = float(score_text)
            except ValueError:
                raise EvalDataError(path, f"score {score_text!r} is not a number", line=lineno) from None
            if score_f != int(score_f):
                raise EvalDataError(path, f"score {score_text!r} is not an integer grade", line=lineno)
            qrels.setdefault(qid, {})[did] = int(score_f)
    if not qrels:
        raise EvalDataError(path, "no relevance judgements")
    return qrels


def load_beir(directory: str | Path, split: str = "test") -> BeirDataset:
    """Load a BEIR-layout directory: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

    Only queries with at least one judgement of grade > 0 are evaluated (``query_ids``).
    Raises :class:`EvalDataError` for a missing or malformed file.
    """
    root = Path(directory)
    if not root.is_dir():
        raise EvalDataError(root, "not a directory (expected corpus.jsonl, queries.jsonl, qrels/)")
    corpus = _load_corpus(root / "corpus.jsonl")
    queries = _load_queries(root / "queries.jsonl")
    qrels = _load_qrels(root / "qrels" / f"{split}.tsv")
    missing_docs = sum(1 for judged in qrels.values() for d in judged if d not in corpus)
    missing_queries = sum(1 for q in qrels if q not in queries)
    query_ids = [q for q in queries if any(g > 0 for g in qrels.get(q, {}).values())]
    if not query_ids:
        raise EvalDataError(root / "qrels" / f"{split}.tsv", "no judged query (grade > 0) appears in queries.jsonl")
    return BeirDataset(
        name=root.resolve().name,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        query_ids=query_ids,
        qrels_missing_docs=missing_docs,
        qrels_missing_queries=missing_queries,
    )


# --------------------------------------------------------------------------- LoCoMo

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
        raise EvalDataError(path, f"sample must be a JSON object, got {type(obj).__name__}", where=where)
    sample_id = str(obj.get("sample_id", f"sample_{i}"))
    conv = obj.get("conversation")
    if not isinstance(conv, dict):
        raise EvalDataError(path, "missing or non-object 'conversation'", where=where)
    speakers = []
    for key in ("speaker_a", "speaker_b"):
        value = conv.get(key)
        if not isinstance(value, str) or not value.strip():
            raise EvalDataError(path, f"missing speaker name '{key}'", where=f"{where}.conversation")
        speakers.append(value.strip())

    sessions: list[LocomoSession] = []
    seen_ids: set[str] = set()
    for key in sorted((k for k in conv if _SESSION_RE.match(k)), key=lambda k: int(k.split("_")[1])):
        n = int(key.split("_")[1])
        swhere = f"{where}.conversation.{key}"
        raw_turns = conv[key]
        if not isinstance(raw_turns, list):
            raise EvalDataError(path, "a session must be a list of turns", where=swhere)
        raw_dt = conv.get(f"{key}_date_time")
        dt: datetime | None = None
        if raw_dt not in (None, ""):
            try:
                dt = parse_locomo_datetime(str(raw_dt))
            except ValueError as exc:
                raise EvalDataError(path, str(exc), where=f"{swhere}_date_time") from None
        turns: list[LocomoTurn] = []
        for j, t in enumerate(raw_turns):
            twhere = f"{swhere}[{j}]"
            if not isinstance(t, dict):
                raise EvalDataError(path, "a turn must be a JSON object", where=twhere)
            for name in ("speaker", "dia_id", "text"):
                if not isinstance(t.get(name), str):
                    raise EvalDataError(path, f"turn field '{name}' missing or not a string", where=twhere)
            ids, _ = normalize_evidence(t["dia_id"])
            dia_id = ids[0] if len(ids) == 1 else t["dia_id"].strip()
            if dia_id in seen_ids:
                raise EvalDataError(path, f"duplicate dia_id {dia_id!r}", where=twhere)
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
        raise EvalDataError(path, "conversation has no session_N lists", where=f"{where}.conversation")

    qa = obj.get("qa", [])
    if not isinstance(qa, list):
        raise EvalDataError(path, "'qa' must be a list", where=where)
    questions: list[LocomoQuestion] = []
    issues: list[EvidenceIssue] = []
    for j, q in enumerate(qa):
        qwhere = f"{where}.qa[{j}]"
        if not isinstance(q, dict):
            raise EvalDataError(path, "a QA item must be a JSON object", where=qwhere)
        text = q.get("question")
        if not isinstance(text, str) or not text.strip():
            raise EvalDataError(path, "missing 'question' text", where=qwhere)
        try:
            category = int(q.get("category"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise EvalDataError(path, f"category {q.get('category')!r} is not an integer", where=qwhere) from None
        if category not in LOCOMO_CATEGORIES:
            raise EvalDataError(path, f"category {category} is not one of 1-5", where=qwhere)
        raw_evidence = q.get("evidence", [])
        if isinstance(raw_evidence, str):
            raw_evidence = [raw_evidence]
        if not isinstance(raw_evidence, list) or not all(isinstance(e, str) for e in raw_evidence):
            raise EvalDataError(path, "'evidence' must be a list of strings", where=qwhere)
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
    ``evidence_issues``. Raises :class:`EvalDataError` on a missing or malformed file.
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalDataError(p, "file not found") from None
    except IsADirectoryError:
        raise EvalDataError(p, "is a directory, expected a LoCoMo JSON file") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise EvalDataError(p, f"invalid JSON ({exc.msg} at column {exc.colno})", line=exc.lineno) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not data:
        raise EvalDataError(p, "expected a non-empty JSON list of samples")
    samples = [_parse_sample(obj, p, i) for i, obj in enumerate(data)]
    ids = [s.sample_id for s in samples]
    dupes = sorted({s for s in ids if ids.count(s) > 1})
    if dupes:
        raise EvalDataError(p, f"duplicate sample_id(s): {', '.join(dupes)}")
    return samples
