"""Loaders for the public evaluation layouts: BEIR (corpus/queries/qrels) and LoCoMo.

Both loaders are strict about structure (a malformed file raises :class:`EvalDataError`
naming the file, the line or JSON path, and the reason) and tolerant about the known
blemishes of real data: LoCoMo evidence ids such as ``D:11:26``, ``D30:05`` or
``"D9:1 D4:4"`` are normalised, and what cannot be repaired is counted, never silently lost.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..conversation.locomo import (  # the one LoCoMo parser, shared with `engram import`
    LOCOMO_CATEGORIES, EvidenceIssue, LocomoQuestion, LocomoSample, LocomoSession, LocomoTurn, load_locomo,
    normalize_evidence, parse_locomo_datetime,
)
from ..errors import DataFileError as EvalDataError
from ..jsonfile import text_lines
from ..validation import aware_timestamp, check_unicode

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



# --------------------------------------------------------------------------- BEIR


@dataclass(slots=True)
class BeirDoc:
    """One corpus document."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    #: when the document was written or said (optional ``timestamp`` field, ISO 8601): stored
    #: as the entry's timestamp, for sets whose questions are about time
    timestamp: str | None = None


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
    #: the reference time a query is asked at (optional ``now`` field of a query line)
    query_now: dict[str, str] = field(default_factory=dict)

    def relevant(self, query_id: str) -> dict[str, int]:
        """The judgements of one query with a grade > 0 (the relevant documents)."""
        return {d: g for d, g in self.qrels.get(query_id, {}).items() if g > 0}


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, decoded one by one so bad UTF-8 names its line; a
    UTF-8 byte-order mark at the start is skipped (as `engram import` does)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise EvalDataError(path, "file not found") from None
    except OSError as exc:
        raise EvalDataError(path, f"cannot be read ({exc.strerror or exc})") from None
    with handle:
        yield from text_lines(handle, lambda lineno, why: EvalDataError(path, why, line=lineno))


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; raise EvalDataError on bad JSON."""
    for lineno, raw in _lines(path):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EvalDataError(path, f"invalid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})",
                                line=lineno) from None
        except (ValueError, RecursionError) as exc:  # a 5,000-digit integer; nesting too deep
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:120]
            raise EvalDataError(path, f"invalid JSON ({reason})", line=lineno) from None
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
    try:
        return check_unicode(value, f"field '{name}'")  # as the store would refuse it, but naming the line
    except ValueError as exc:
        raise EvalDataError(path, str(exc), line=lineno) from None


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
        timestamp = _optional_time(obj, "timestamp", path, lineno)
        corpus[doc_id] = BeirDoc(id=doc_id, title=title, text=text, metadata=metadata, timestamp=timestamp)
    if not corpus:
        raise EvalDataError(path, "corpus is empty")
    return corpus


def _optional_time(obj: dict[str, Any], name: str, path: Path, lineno: int) -> str | None:
    """An optional ISO 8601 time field, checked here by the store's own rule so a bad one names
    its line rather than failing the whole import."""
    value = _optional_str(obj, name, path, lineno)
    if not value:
        return None
    try:
        aware_timestamp(value, name)
    except ValueError as exc:
        raise EvalDataError(path, f"field '{name}' must be an ISO 8601 time ({exc})", line=lineno) from None
    return value


def _load_queries(path: Path, now: dict[str, str] | None = None) -> dict[str, str]:
    """The queries file's texts by id; each query's optional ``now`` goes into `now`."""
    queries: dict[str, str] = {}
    for lineno, obj in _iter_jsonl(path):
        qid = _required_id(obj, path, lineno)
        if qid in queries:
            raise EvalDataError(path, f"duplicate query id {qid!r}", line=lineno)
        text = _optional_str(obj, "text", path, lineno, required=True)
        if not text.strip():
            raise EvalDataError(path, f"query {qid!r} has empty text", line=lineno)
        queries[qid] = text
        asked_at = _optional_time(obj, "now", path, lineno)
        if asked_at and now is not None:
            now[qid] = asked_at
    if not queries:
        raise EvalDataError(path, "no queries (the file holds no JSON lines)")
    return queries


def _load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV (``query-id<TAB>corpus-id<TAB>score``; header optional)."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in _lines(path):
        for row in csv.reader([line], delimiter="\t"):
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
            if not math.isfinite(score_f):
                raise EvalDataError(path, f"score {score_text!r} is not a finite number", line=lineno)
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
    query_now: dict[str, str] = {}
    queries = _load_queries(root / "queries.jsonl", query_now)
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
        query_now=query_now,
    )
