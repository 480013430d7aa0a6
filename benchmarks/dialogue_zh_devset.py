"""Write the Chinese dialogue-context development set (benchmarks/data/dialogue_zh/, BEIR layout).

Written for Engram by hand (one writer; no public data set copied or translated; licence: the
project's), as a stand-in in Chinese for the task of MADial-Bench: an agent retrieves the
memories relevant to *the conversation as it stands*. One user's archive, 小雨 (a UI designer
in 杭州 from 长沙), 2019-2024: 120 short event memories (`benchmarks/dialogue_zh/memories.py`),
12 of them in the third person naming 小雨; no `timestamp` field (dates are in the text only).

A query is the last three utterances (user, assistant, user) before the assistant's turn that
recalls a memory, in four formats: ``<小雨>：“…” <助手>：“…” …``, ``用户：…`` / ``助手：…`` per
line, ``【小雨】…`` per line, and ``小雨: …`` / ``AI: …`` per line. Graded qrels: 2 = the memory
the recall turn is mainly about, 1 = also relevant.

Splits (``qrels/<split>.tsv``): ``v1`` (q01-q80, the first batch; lexically easy, since the
last user turn often restates the memory), ``hard`` (h01-h40, written after v1 by a rule fixed
before any result on it: the user never restates the memory's specifics; the cue is a similar
situation, person or emotion), ``test`` (both).

Run: ``python benchmarks/dialogue_zh_devset.py [OUT_DIR]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dialogue_zh.memories import MEMORIES  # noqa: E402
from dialogue_zh.queries import QUERIES  # noqa: E402
from dialogue_zh.queries_hard import HARD  # noqa: E402


def dialogue(kind: str, user: str, assistant: str, turns: list[str]) -> str:
    """The three utterances in one of the four transcript formats."""
    said, answer, last = turns
    if kind == "A":
        return f"<{user}>：“{said}” <{assistant}>：“{answer}” <{user}>：“{last}”"
    if kind == "B":
        return f"{user}：{said}\n{assistant}：{answer}\n{user}：{last}"
    if kind == "C":
        return f"【{user}】{said}\n【{assistant}】{answer}\n【{user}】{last}"
    if kind == "D":
        return f"{user}: {said}\n{assistant}: {answer}\n{user}: {last}"
    raise ValueError(kind)


def write(out: Path) -> None:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    ids = [m[0] for m in MEMORIES]
    assert len(set(ids)) == len(ids)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for memory_id, date, emotion, title, text in MEMORIES:
            f.write(json.dumps({"_id": memory_id, "title": title, "text": text,
                                "metadata": {"date": date, "emotion": emotion, "user": "小雨"}},
                               ensure_ascii=False) + "\n")
    splits = {"test": QUERIES + HARD, "v1": QUERIES, "hard": HARD}
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for qid, kind, user, assistant, turns, qrels, _tag in QUERIES + HARD:
            assert set(qrels) <= set(ids) and 2 in qrels.values(), qid
            f.write(json.dumps({"_id": qid, "text": dialogue(kind, user, assistant, turns)}, ensure_ascii=False) + "\n")
    for name, queries in splits.items():
        with (out / "qrels" / f"{name}.tsv").open("w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for qid, _kind, _user, _assistant, _turns, qrels, _tag in queries:
                for doc, grade in qrels.items():
                    f.write(f"{qid}\t{doc}\t{grade}\n")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "data" / "dialogue_zh"
    write(target)
    print(f"wrote {len(MEMORIES)} memories and {len(QUERIES) + len(HARD)} queries to {target}")
