"""Loaders: the hand-made fixtures load as expected and malformed files fail clearly."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from engramdb.eval.datasets import (
    EvalDataError,
    load_beir,
    load_locomo,
    normalize_evidence,
    parse_locomo_datetime,
)

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
BEIR = FIXTURES / "emberroot"
LOCOMO = FIXTURES / "locomo_tiny.json"


# --------------------------------------------------------------------------- BEIR


def test_load_beir_fixture() -> None:
    ds = load_beir(BEIR)
    assert ds.name == "emberroot"
    assert len(ds.corpus) == 20
    assert len(ds.queries) == 10
    # q9 has only a grade-0 judgement, q10 has none: both are left out
    assert ds.query_ids == [f"q{i}" for i in range(1, 9)]
    assert ds.relevant("q1") == {"d04": 2, "d17": 1}
    assert ds.relevant("q9") == {}
    doc = ds.corpus["d18"]
    assert doc.title == "Why it glows"
    assert doc.text.startswith("The glow comes from luminous fungi")
    assert doc.metadata == {"topic": "emberroot"}
    assert ds.qrels_missing_docs == 0 and ds.qrels_missing_queries == 0


def _beir_copy(tmp_path: Path) -> Path:
    target = tmp_path / "set"
    shutil.copytree(BEIR, target)
    return target


def _replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "lineno", "content", "reason"),
    [
        ("corpus.jsonl", 3, '{"_id": "d03", "title": "x", "text": ', "invalid JSON"),
        ("corpus.jsonl", 4, '{"title": "no id", "text": "t"}', "missing required field '_id'"),
        ("corpus.jsonl", 5, '{"_id": "d01", "text": "again"}', "duplicate document id 'd01'"),
        ("corpus.jsonl", 6, '{"_id": "d06", "text": 42}', "field 'text' must be a string"),
        ("corpus.jsonl", 7, '["not", "an", "object"]', "expected a JSON object"),
        ("queries.jsonl", 2, '{"_id": "q2"}', "missing required field 'text'"),
        ("queries.jsonl", 3, '{"_id": "q3", "text": "   "}', "empty text"),
        ("corpus.jsonl", 3, '{"_id": "d03", "text": "t", "timestamp": "last May"}', "field 'timestamp' must be an ISO 8601"),
        ("queries.jsonl", 2, '{"_id": "q2", "text": "t", "now": 5}', "field 'now' must be a string"),
        ("qrels/test.tsv", 2, "q1\td04", "expected 3 columns"),
        ("qrels/test.tsv", 4, "q2\td07\tvery", "is not a number"),
        ("qrels/test.tsv", 5, "q3\td08\t1.5", "not an integer grade"),
        ("qrels/test.tsv", 5, "q3\td08\tnan", "not a finite number"),  # was a raw ValueError
        # text the store cannot hold names its line, not "item 10" of the indexing (an outside check)
        ("corpus.jsonl", 3, '{"_id": "d03", "text": "a \\u0000 b"}', "contains a NUL character"),
        ("queries.jsonl", 2, '{"_id": "q2", "text": "a \\ud800 b"}', "lone surrogate"),
    ],
)
def test_load_beir_errors_name_file_line_and_reason(
    tmp_path: Path, file: str, lineno: int, content: str, reason: str
) -> None:
    root = _beir_copy(tmp_path)
    _replace_line(root / file, lineno, content)
    with pytest.raises(EvalDataError) as info:
        load_beir(root)
    message = str(info.value)
    assert message.startswith(f"{root / file}:{lineno}: ")
    assert reason in message
    assert info.value.line == lineno


def test_bad_encodings_name_their_file_and_line_and_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    """A Latin-1 byte in corpus.jsonl gave "'utf-8' codec can't decode byte 0xe9 in position
    912", with no file or line; a UTF-8 byte-order mark was "invalid JSON" (engram import skips it)."""
    root = _beir_copy(tmp_path)
    corpus = root / "corpus.jsonl"
    lines = corpus.read_bytes().splitlines(keepends=True)
    corpus.write_bytes(b"\xef\xbb\xbf" + b"".join(lines))  # as Windows Notepad saves it
    (root / "qrels" / "test.tsv").write_bytes(b"\xef\xbb\xbf" + (root / "qrels" / "test.tsv").read_bytes())
    assert len(load_beir(root).corpus) == len(lines)
    corpus.write_bytes(b"".join(lines[:3]) + b'{"_id": "x", "text": "Caf\xe9"}\n' + b"".join(lines[3:]))
    with pytest.raises(EvalDataError, match=rf"^{re.escape(str(corpus))}:4: not UTF-8 text"):
        load_beir(root)
    corpus.write_bytes(b"".join(lines))
    queries = root / "queries.jsonl"
    queries.write_bytes(queries.read_text(encoding="utf-8").encode("utf-16"))
    with pytest.raises(EvalDataError, match=rf"^{re.escape(str(queries))}:1: not UTF-8 text"):
        load_beir(root)
    queries.write_text("\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match=rf"^{re.escape(str(queries))}: no queries"):
        load_beir(root)


def test_documents_may_carry_a_time_and_queries_the_time_they_are_asked(tmp_path: Path) -> None:
    root = _beir_copy(tmp_path)
    _replace_line(root / "corpus.jsonl", 1, '{"_id": "d01", "text": "I work at Stripe.", "timestamp": "2025-09-01"}')
    _replace_line(root / "queries.jsonl", 1, '{"_id": "q1", "text": "Where do I work now?", "now": "2026-12-01T12:00:00"}')
    ds = load_beir(root)
    assert ds.corpus["d01"].timestamp == "2025-09-01" and ds.corpus["d02"].timestamp is None
    assert ds.query_now == {"q1": "2026-12-01T12:00:00"}


def test_the_current_state_dev_set_runs_with_its_times(tmp_path: Path) -> None:
    """The shipped development set for questions about now (benchmarks/data/current) loads, and
    its writer reproduces it byte for byte."""
    import subprocess
    import sys

    shipped = Path(__file__).parent.parent / "benchmarks" / "data" / "current"
    subprocess.run([sys.executable, str(shipped.parent.parent / "current_devset.py"), str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/current.tsv", "qrels/test.tsv"):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    ds = load_beir(shipped, "current")
    assert len(ds.query_ids) == 54 and all(ds.query_now[q] == "2026-12-01T12:00:00" for q in ds.query_ids)
    assert all(doc.timestamp for doc in ds.corpus.values())


def test_the_second_current_state_set_is_written_by_its_script(tmp_path: Path) -> None:
    """The current-state set written apart (benchmarks/data/current_apart: one store of 157 notes
    and ten of a few) loads, and its writer reproduces it byte for byte."""
    import subprocess
    import sys

    shipped = Path(__file__).parent.parent / "benchmarks" / "data" / "current_apart"
    subprocess.run([sys.executable, str(shipped.parent.parent / "current_apart_devset.py"), str(tmp_path)], check=True,
                   capture_output=True)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) > 40 and Path("big/qrels/current.tsv") in written
    for name in written:
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    sizes = {split: len(load_beir(shipped / "big", split).query_ids) for split in ("current", "past", "stable", "plain")}
    assert sizes == {"current": 45, "past": 15, "stable": 12, "plain": 10}
    tiny = sorted((shipped / "tiny").iterdir())
    assert len(tiny) == 10 and all(len(load_beir(d).corpus) <= 10 for d in tiny)


def test_the_names_dev_set_is_written_by_its_script(tmp_path: Path) -> None:
    """The names-across-scripts development set (benchmarks/data/names) loads, and its writer
    reproduces it byte for byte; every split judges questions of its own direction."""
    import subprocess
    import sys

    shipped = Path(__file__).parent.parent / "benchmarks" / "data" / "names"
    subprocess.run([sys.executable, str(shipped.parent.parent / "names_devset.py"), str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/en2zh.tsv", "qrels/zh2en.tsv", "qrels/same.tsv",
                 "qrels/test.tsv"):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    sizes = {split: len(load_beir(shipped, split).query_ids) for split in ("en2zh", "zh2en", "same", "test")}
    assert sizes == {"en2zh": 15, "zh2en": 15, "same": 8, "test": 38}


def test_load_beir_missing_files(tmp_path: Path) -> None:
    root = _beir_copy(tmp_path)
    (root / "qrels" / "test.tsv").unlink()
    with pytest.raises(EvalDataError, match=r"qrels/test\.tsv: file not found"):
        load_beir(root)
    with pytest.raises(EvalDataError, match="not a directory"):
        load_beir(tmp_path / "nowhere")


def test_load_beir_no_evaluable_query(tmp_path: Path) -> None:
    root = _beir_copy(tmp_path)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td19\t0\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match="no judged query"):
        load_beir(root)


def test_load_beir_counts_dangling_qrels(tmp_path: Path) -> None:
    root = _beir_copy(tmp_path)
    with (root / "qrels" / "test.tsv").open("a", encoding="utf-8") as f:
        f.write("q1\td99\t1\nq77\td01\t1\n")
    ds = load_beir(root)
    assert ds.qrels_missing_docs == 1
    assert ds.qrels_missing_queries == 1
    assert ds.relevant("q1") == {"d04": 2, "d17": 1, "d99": 1}


# --------------------------------------------------------------------------- LoCoMo


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("9:15 am on 3 March, 2024", datetime(2024, 3, 3, 9, 15)),
        ("12:30 am on 1 January, 2024", datetime(2024, 1, 1, 0, 30)),
        ("12:05 pm on 1 Jan, 2024", datetime(2024, 1, 1, 12, 5)),
        ("11:05 PM on 31 December 2025", datetime(2025, 12, 31, 23, 5)),
    ],
)
def test_parse_locomo_datetime(text: str, expected: datetime) -> None:
    assert parse_locomo_datetime(text) == expected


@pytest.mark.parametrize("text", ["yesterday", "13:00 pm on 1 May, 2023", "1:00 pm on 1 Mayo, 2023", "1:00 pm on 31 February, 2023"])
def test_parse_locomo_datetime_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_locomo_datetime(text)


@pytest.mark.parametrize(
    ("raw", "ids", "fragments"),
    [
        ("D1:3", ["D1:3"], []),
        ("D:11:26", ["D11:26"], []),
        ("D30:05", ["D30:5"], []),
        ("D8:6; D9:17", ["D8:6", "D9:17"], []),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], []),
        ("D2:1,D2:2", ["D2:1", "D2:2"], []),
        ("D 4 : 36", ["D4:36"], []),
        ("D10:", [], ["D10:"]),
        ("D", [], ["D"]),
        ("", [], []),
    ],
)
def test_normalize_evidence(raw: str, ids: list[str], fragments: list[str]) -> None:
    assert normalize_evidence(raw) == (ids, fragments)


def test_load_locomo_fixture() -> None:
    samples = load_locomo(LOCOMO)
    assert [s.sample_id for s in samples] == ["fx-1", "fx-2"]
    s1, s2 = samples
    assert s1.speakers == ["Tamsin", "Oluwaseun"]
    assert [s.index for s in s1.sessions] == [1, 2]
    assert s1.sessions[0].datetime == datetime(2024, 3, 3, 9, 15)
    assert s1.sessions[1].datetime == datetime(2024, 4, 17, 16, 40)
    assert s2.sessions[0].datetime == datetime(2025, 1, 1, 23, 5)
    turns = [t for _, t in s1.turns()]
    assert len(turns) == 12
    assert turns[0].dia_id == "D1:1" and turns[0].speaker == "Tamsin" and turns[0].session == 1
    assert turns[-1].blip_caption == "a photo of blue and white tiles on a wall"

    qs = s1.questions
    assert [q.category for q in qs] == [4, 2, 1, 3, 4, 5, 4, 2]
    assert qs[2].evidence == ["D1:6", "D2:1"]
    assert qs[3].evidence == ["D2:2"]
    assert qs[4].evidence == ["D2:5"]
    assert qs[6].evidence == ["D1:4"]  # D9:9 names no turn
    assert qs[7].evidence == []  # "D" is unreadable
    assert qs[5].answer is None and qs[5].adversarial_answer == "a vase"
    assert qs[0].answer == "Biscuit"

    kinds = [(i.question_index, i.kind, i.normalised) for i in s1.evidence_issues]
    assert kinds == [
        (2, "normalised", "D1:6"),
        (2, "normalised", "D2:1"),
        (3, "normalised", "D2:2"),
        (4, "normalised", "D2:5"),
        (6, "unknown", "D9:9"),
        (7, "malformed", None),
    ]
    assert s2.evidence_issues == []


def _locomo_copy(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    edit(data)
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "where", "reason"),
    [
        (lambda d: d[0]["qa"][1].update(category=7), "[0].qa[1]", "category 7 is not one of 1-5"),
        (lambda d: d[0]["qa"][1].update(category="x"), "[0].qa[1]", "is not an integer"),
        (lambda d: d[1]["qa"][0].pop("question"), "[1].qa[0]", "missing 'question'"),
        (lambda d: d[0]["qa"][0].update(evidence=[3]), "[0].qa[0]", "'evidence' must be a list of strings"),
        (lambda d: d[0]["conversation"].update(session_2_date_time="soon"), "[0].conversation.session_2_date_time", "unrecognised date/time 'soon'"),
        (lambda d: d[0]["conversation"].pop("speaker_b"), "[0].conversation", "missing speaker name 'speaker_b'"),
        (lambda d: d[0]["conversation"]["session_1"][2].pop("text"), "[0].conversation.session_1[2]", "turn field 'text'"),
        (lambda d: d[0]["conversation"]["session_2"][0].update(dia_id="D1:1"), "[0].conversation.session_2[0]", "duplicate dia_id 'D1:1'"),
        (lambda d: d[1].update(conversation=[]), "[1]", "'conversation'"),
    ],
)
def test_load_locomo_errors_name_location_and_reason(tmp_path: Path, edit, where: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = _locomo_copy(tmp_path, edit)
    with pytest.raises(EvalDataError) as info:
        load_locomo(path)
    message = str(info.value)
    assert message.startswith(f"{path}: at {where}: ")
    assert reason in message


def test_load_locomo_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"sample_id": "a",\n   "conversation": }\n]\n', encoding="utf-8")
    with pytest.raises(EvalDataError) as info:
        load_locomo(path)
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


def test_load_locomo_file_errors(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match="file not found"):
        load_locomo(tmp_path / "missing.json")
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    with pytest.raises(EvalDataError, match="non-empty JSON list"):
        load_locomo(tmp_path / "empty.json")
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    (tmp_path / "dupe.json").write_text(json.dumps([data[0], data[0]]), encoding="utf-8")
    with pytest.raises(EvalDataError, match="duplicate sample_id"):
        load_locomo(tmp_path / "dupe.json")


def test_json_errors_read_well_and_an_object_is_not_taken_for_a_sample(tmp_path: Path) -> None:
    from engramdb.conversation.locomo import load_locomo
    from engramdb.errors import DataFileError

    bad = tmp_path / "ctl.json"
    bad.write_text('[{"a": "x\ty"}]', encoding="utf-8")
    with pytest.raises(DataFileError, match=r"invalid JSON \(Invalid control character at column \d+\)"):
        load_locomo(bad)
    other = tmp_path / "obj.json"
    other.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DataFileError, match="expected a JSON list of samples .* not an object with keys a$"):
        load_locomo(other)
