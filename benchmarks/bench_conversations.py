"""Conversation import throughput: reading, offline fact extraction, embedding and writing.

    python benchmarks/bench_conversations.py path/to/locomo10.json --embedder minilm
    python benchmarks/bench_conversations.py chat.jsonl --embedder e5-small --json

Times each step of `engram import` for a conversation file into a fresh temporary store:
parsing, the offline extractor alone (rules, no model), then the full import (turns and
facts embedded and written, one transaction per session). A second import of the same file
measures the idempotent no-op path. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from engramdb import Memory
from engramdb.conversation import OfflineExtractor, read_conversations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()

    start = time.perf_counter()
    conversations = read_conversations(args.path)
    read_s = time.perf_counter() - start
    turns = sum(len(c.turns) for c in conversations)

    extractor = OfflineExtractor()
    start = time.perf_counter()
    facts = sum(len(extractor.extract(c, {}, "bench").facts) for c in conversations)
    extract_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "bench.db", embedder=args.embedder) as mem:
        mem.embedder.embed_query("warm up")  # model load is not import work
        start = time.perf_counter()
        report = mem.import_path(args.path)
        import_s = time.perf_counter() - start
        start = time.perf_counter()
        again = mem.import_path(args.path)
        reimport_s = time.perf_counter() - start
    out = {
        "path": str(args.path), "embedder": args.embedder, "sessions": len(conversations), "turns": turns,
        "facts": facts, "read_s": round(read_s, 3), "extract_s": round(extract_s, 3),
        "extract_ms_per_turn": round(extract_s / max(turns, 1) * 1000, 3),
        "import_s": round(import_s, 2), "entries_per_s": round((turns + facts) / import_s, 1),
        "turns_per_s": round(turns / import_s, 1), "reimport_s": round(reimport_s, 3),
        "reimport_written": again["written"], "written": report["written"],
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{turns} turns in {len(conversations)} sessions -> {facts} facts")
        print(f"read {read_s:.2f} s; offline extraction {extract_s:.2f} s ({out['extract_ms_per_turn']} ms/turn)")
        print(f"full import with {args.embedder}: {import_s:.1f} s ({out['turns_per_s']} turns/s, "
              f"{out['entries_per_s']} entries/s); re-import (no-op) {reimport_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
