"""Search results and channel scores of a fixture store, recorded once and compared later.

A storage refactor must not move a single score: the default preset's calibration was
fitted on exactly these distributions. This script builds a small bilingual store (the
shipped notes, a conversation, entries with names, periods, literals and metadata), runs
searches with several presets and filters plus every store channel directly, and writes
ids and scores as JSON (``record``), or compares them with a recording (``check``,
tolerance 1e-9; exit status 1 on any difference)::

    PYTHONPATH=src python benchmarks/score_identity.py record /tmp/scores.json
    PYTHONPATH=src python benchmarks/score_identity.py check /tmp/scores.json

``--db`` chooses the store (a path or URL; default a fresh file in a temp directory), so a
second backend can be compared with the recording of the first.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from engramdb import Memory
from engramdb.store.base import Filters

REPO = Path(__file__).resolve().parents[1]
NOW = "2024-06-01T12:00:00+00:00"

EXTRA = [
    {"id": "x1", "text": "Alice moved to Berlin in May 2023 and joined Acme Robotics.", "persons": ["Alice"],
     "entities": ["Acme Robotics"], "location": "Berlin", "timestamp": "2023-05-10T09:00:00",
     "metadata": {"project": "atlas", "priority": 2}},
    {"id": "x2", "text": "Bob and Alice reviewed the Atlas launch plan on Friday.", "persons": ["Bob", "Alice"],
     "entities": ["Atlas"], "timestamp": "2023-05-12T15:00:00", "metadata": {"project": "atlas", "priority": 1}},
    {"id": "x3", "text": "Release v2.3.1 fixed ERR_CONN_RESET on reconnect; staging listens on port 5433.",
     "keywords": ["release"], "timestamp": "2023-06-02T10:00:00", "metadata": {"project": "infra", "urgent": True}},
    {"id": "x4", "text": "The conference ran from 3 to 7 July 2023 in Lisbon.", "location": "Lisbon",
     "timestamp": "2023-07-03T00:00:00", "timestamp_end": "2023-07-07T23:59:00", "kind": "fact"},
    {"id": "x5", "text": "王伟在上海的阿尔法公司负责项目代号 XYZ 的后端。", "persons": ["王伟"], "entities": ["阿尔法公司"],
     "location": "上海", "timestamp": "2023-08-01T08:00:00", "metadata": {"project": "xyz"}},
    {"id": "x6", "text": "《三体》是刘慈欣写的科幻小说，王伟很喜欢。", "persons": ["王伟", "刘慈欣"], "topic": "books",
     "timestamp": "2023-08-15T20:00:00"},
    {"id": "x7", "text": "Carol spent the whole of 2022 travelling in Japan.", "persons": ["Carol"], "location": "Japan",
     "timestamp": "2022-01-01T00:00:00", "timestamp_end": "2022-12-31T23:59:59", "kind": "fact"},
    {"id": "x8", "text": "Bob fixed the Atlas deploy script after ticket ENG-1234.", "persons": ["Bob"],
     "entities": ["Atlas"], "keywords": ["deploy"], "timestamp": "2023-09-01T11:00:00",
     "metadata": {"project": "atlas", "priority": 3}},
]

SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("where does Alice live?", {}),
    ("Alice Bob Atlas", {}),
    ("what fixed ERR_CONN_RESET in v2.3.1?", {}),
    ("staging port 5433", {"preset": "ping"}),
    ("王伟在哪里工作", {}),
    ("《三体》的作者是谁", {}),
    ("项目代号", {"preset": "lexical"}),
    ("what happened in July 2023?", {}),
    ("what did Carol do in 2022?", {}),
    ("when is the trip to Lisbon?", {}),
    ("flights booked", {"filters": {"person": "Priya"}}),
    ("Atlas plan", {"filters": {"metadata.project": "atlas"}}),
    ("Atlas", {"filters": {"since": "2023-05-11", "until": "2023-12-31"}}),
    ("deploy", {"filters": {"kind": "fact"}}),
    ("meeting notes", {"filters": {"metadata.priority": 2}}),
    ("release", {"filters": {"metadata.urgent": True}}),
]
PRESETS = ["default", "lexical", "semantic", "symbolic", "rrf", "unplanned", "ping", "lychee", "simplemem", "learned"]


def build(mem: Memory) -> None:
    mem.import_path(REPO / "examples" / "notes")
    mem.import_path(REPO / "examples" / "conversations" / "trip-planning.jsonl")
    mem.add(EXTRA)


def hits(mem: Memory, query: str, **kwargs: Any) -> list[list[Any]]:
    res = mem.search(query, k=8, now=NOW, **kwargs)
    return [[h.id, h.score, sorted((name, c.score) for name, c in h.channels.items())] for h in res.hits]


def channel_rows(mem: Memory, rows: list[tuple[int, float]]) -> list[list[Any]]:
    entries = mem.store.fetch([r for r, _ in rows])
    return [[entries[r].id, s] for r, s in rows]


def run(mem: Memory) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for query, kwargs in SEARCHES:
        out[f"search {query} {json.dumps(kwargs, sort_keys=True)}"] = hits(mem, query, **kwargs)
    for preset in PRESETS:
        for query in ("Alice Berlin", "王伟 上海", "what happened in July 2023?"):
            out[f"preset {preset} {query}"] = hits(mem, query, preset=preset)
    store, ns = mem.store, mem.namespace
    filters = [Filters(), Filters.parse({"person": "alice"}), Filters.parse({"metadata.project": "atlas"}),
               Filters.parse({"since": "2023-01-01"}), Filters(kinds=["fact"])]
    for i, f in enumerate(filters):
        out[f"lexical {i}"] = channel_rows(mem, store.lexical(["alic", "berlin", "atlas", "王伟"], 20, ns, f))
        out[f"symbolic {i}"] = channel_rows(mem, store.symbolic("Alice and Bob on Atlas", ["atlas", "plan"], 20, ns, f))
        out[f"symbolic-zh {i}"] = channel_rows(mem, store.symbolic("王伟和刘慈欣", ["王伟"], 20, ns, f))
        out[f"temporal {i}"] = channel_rows(mem, store.temporal(1.6e9, 1.7e9, ["atlas"], 20, ns, f))
        out[f"temporal-2022 {i}"] = channel_rows(mem, store.temporal(1656633600.0, 1688169600.0, [], 20, ns, f))
        out[f"dated {i}"] = channel_rows(mem, store.dated(["conference", "japan"], 20, ns, f))
        out[f"substring {i}"] = channel_rows(mem, store.substring(["v2.3.1", "atlas", "三体", "28"], 20, ns, f))
        out[f"semantic {i}"] = channel_rows(mem, store.semantic(mem.embedder.embed_query("Alice in Berlin"), 10, ns, f))
    rows = [r for r, _ in store.lexical(["alic", "atlas", "bob"], 50, ns, Filters())]
    coverage = store.term_coverage(["alic", "atlas", "bob"], rows)
    entries = store.fetch(rows)
    out["term_coverage"] = sorted([entries[r].id, n] for r, n in coverage.items())
    out["match_names"] = sorted(map(list, store.match_names(ns, "Alice met 王伟 and Bob in 上海 about Acme Robotics")))
    out["newest"] = store.newest_timestamp(ns)
    return out


def compare(expected: Any, actual: Any, where: str, problems: list[str]) -> None:
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        if not math.isclose(expected, actual, rel_tol=0.0, abs_tol=1e-9):
            problems.append(f"{where}: {expected!r} != {actual!r}")
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            problems.append(f"{where}: {len(expected)} items, now {len(actual)}: {expected!r} vs {actual!r}")
        for i, (a, b) in enumerate(zip(expected, actual)):
            compare(a, b, f"{where}[{i}]", problems)
    elif expected != actual:
        problems.append(f"{where}: {expected!r} != {actual!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["record", "check"])
    parser.add_argument("file", type=Path)
    parser.add_argument("--db", default=None, help="store to build (default: a temp file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(args.db or str(Path(tmp) / "identity.db")) as mem:
            build(mem)
            result = json.loads(json.dumps(run(mem)))  # tuples as lists, as recorded
    if args.mode == "record":
        args.file.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"recorded {len(result)} result lists in {args.file}")
        return 0
    expected = json.loads(args.file.read_text(encoding="utf-8"))
    problems: list[str] = []
    compare(sorted(expected), sorted(result), "keys", problems)
    for key in expected:
        compare(expected[key], result.get(key), key, problems)
    for line in problems[:40]:
        print(line)
    print(f"{len(expected)} result lists compared: {'identical' if not problems else f'{len(problems)} differences'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
