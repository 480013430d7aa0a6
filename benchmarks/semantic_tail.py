"""Experiment (not shipped): embed only part of a long dialogue query in the semantic channel.

    python benchmarks/semantic_tail.py MODE eval beir DATA/madial_en --preset default --json out.json

MODE is ``full`` (as shipped), ``last`` (the last utterance), ``last2`` (the last two),
``user`` (the user's utterances, not the assistant's) or ``tailN`` (the last N words). Only
queries over 24 words are cut; utterances are the ``<Speaker>: "…"`` parts of the query.
The rest of the arguments go to the ``engram`` CLI, with `QueryPlan.semantic_queries`
patched in this process. Results: docs/BENCHMARKS.md, "Embedding less of the context".
"""

from __future__ import annotations

import re
import sys

from engramdb import cli
from engramdb.plan import model as plan_model

SPEAKER = re.compile(r"<[^>]{1,40}>:\s*")
LONG = 24  # words


def shorten(text: str, mode: str) -> str:
    words = text.split()
    if mode == "full" or len(words) <= LONG:
        return text
    parts = [p.strip().strip('"') for p in SPEAKER.split(text) if p.strip()]
    speakers = SPEAKER.findall(text)
    if mode == "last":
        return parts[-1] if parts else text
    if mode == "last2":
        return " ".join(parts[-2:])
    if mode == "user":
        return " ".join(p for p, s in zip(parts, speakers) if "Assistant" not in s) or text
    if mode.startswith("tail"):
        return " ".join(words[-int(mode[4:]):])
    raise SystemExit(f"unknown mode {mode!r}")


def main() -> None:
    mode = sys.argv.pop(1)
    original = plan_model.QueryPlan.semantic_queries
    plan_model.QueryPlan.semantic_queries = lambda self: [shorten(t, mode) for t in original(self)]  # type: ignore[method-assign]
    sys.argv = ["engram", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
