"""A BEIR set's questions against its corpus plus LoCoMo's conversations as distractors.

    python benchmarks/distractors.py $DATA/madial_en $DATA/locomo/locomo10.json \
        --preset default nofeedback.toml
    python benchmarks/distractors.py $DATA/madial_en $DATA/locomo/locomo10.json --distractors facts

A small corpus (MADial-en has 160 memories) sits whole inside every channel's first pass, so
it cannot tell apart recall that searches the store again from recall that re-scores what it
found. ~5,900 chatty turns make the store a realistic size for that. Each distractor is one
entry (`Speaker: text`) judged irrelevant. Prints nDCG@10 per preset (k = 10, grouped by
document, as `engram eval` searches) and the paired randomization test against the first.
To time an older checkout, put its `src` first: `PYTHONPATH=/path/to/checkout/src python …`.
Vectors come from the evaluation cache (`--cache-dir`), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
from pathlib import Path

from engramdb import Entry, Memory
from engramdb.conversation import get_extractor
from engramdb.conversation.formats import locomo_conversations
from engramdb.conversation.locomo import load_locomo
from engramdb.embed import get_embedder
from engramdb.eval.datasets import load_beir
from engramdb.eval.metrics import ndcg_at_k
from engramdb.eval.runner import _doc_ranking, default_cache_dir
from engramdb.eval.significance import paired_randomization_test
from engramdb.model import Source


def locomo_turns(path: Path) -> list[Entry]:
    """Every turn of every LoCoMo conversation as one distractor entry."""
    entries: list[Entry] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                entries += [Entry(text=f'{t["speaker"]}: {t["text"]}', kind="chunk",
                                  source=Source(doc_id=f"distractor-{len(entries) + i}"))
                            for i, t in enumerate(turns)]
    return entries


def locomo_facts(path: Path) -> list[Entry]:
    """The facts the offline extractor distils from every LoCoMo conversation."""
    extractor = get_extractor("offline")
    assert extractor is not None
    facts: list[Entry] = []
    for sample in load_locomo(path):
        for conversation in locomo_conversations(sample):
            ids = {t.turn_id: t.to_entry("default").id for t in conversation.turns}
            # Their turns are not stored, so they name none (a derived_from link must name a stored entry).
            facts += [dataclasses.replace(f, derived_from=[])
                      for f in extractor.extract(conversation, ids, "default").facts]  # type: ignore[arg-type]
    return facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("beir", type=Path, help="a BEIR-layout folder (corpus, queries, qrels)")
    parser.add_argument("locomo", type=Path, help="locomo10.json, whose turns are the distractors")
    parser.add_argument("--preset", nargs="+", default=["default"], help="presets (names or .toml files)")
    parser.add_argument("--distractors", choices=("turns", "facts"), default="turns",
                        help="LoCoMo's turns, or the facts the offline extractor distils from them")
    parser.add_argument("--embedder", default="e5-small")
    parser.add_argument("--cache-dir", default=str(default_cache_dir()))
    args = parser.parse_args()

    ds = load_beir(args.beir, "test")
    entries = [Entry(text=f"{d.title}\n{d.text}".strip() if d.title else d.text, kind="chunk",
                     source=Source(doc_id=d.id)) for d in ds.corpus.values()]
    distractors = locomo_turns(args.locomo) if args.distractors == "turns" else locomo_facts(args.locomo)
    scores: dict[str, list[float]] = {}
    with Memory(Path(tempfile.mkdtemp()) / "distractors.db",
                embedder=get_embedder(args.embedder, cache_dir=args.cache_dir)) as mem:
        mem.add(entries + distractors, batch_size=256)
        for preset in args.preset:
            scores[preset] = [ndcg_at_k(_doc_ranking(mem.search(ds.queries[q], k=10, preset=preset,
                                                                group_by="doc").hits), ds.relevant(q), 10)
                              for q in ds.query_ids]
    first = args.preset[0]
    print(f"{ds.name}: {len(ds.query_ids)} questions, {len(entries)} memories + {len(distractors)} distractor {args.distractors}")
    for preset, values in scores.items():
        line = f"  {preset}: nDCG@10 {statistics.fmean(values):.4f}"
        if preset != first:
            delta, p = paired_randomization_test(scores[first], values)
            line += f" ({delta:+.4f} against {first}, p = {p:.2f})"
        print(line)


if __name__ == "__main__":
    main()
