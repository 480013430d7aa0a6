"""Experiment (not shipped): a dialogue context's query vector mixed with one of its parts.

    python benchmarks/query_mix.py MODE BETA eval beir DATA/madial_en --preset default,semantic

The semantic channel's vector for a dialogue context becomes ``normalise(v(context) + BETA ×
v(part))``, where the part is the last utterance (``last``), the last two (``last2``) or what
the last utterance asks (``asked``, `text.dialogue.asked_part`): a second, short embedding
that weighs what was said last more. The rest of the arguments go to the ``engram`` CLI, with
the e5 embedder patched in this process. Results: docs/BENCHMARKS.md, "Tried for `default`".
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from engramdb import cli
from engramdb.embed import local
from engramdb.pipeline import recall
from engramdb.text import dialogue


def main() -> None:
    mode, beta = sys.argv.pop(1), float(sys.argv.pop(1))
    parts: dict[str, str] = {}  # the plain text the embedder reads -> the part to mix in
    plain, embed = recall.plain, local.E5SmallEmbedder.embed_query

    def plain_and_part(text: str) -> str:
        read = plain(text)
        if dialogue.is_dialogue(text):
            said = dialogue.utterances(text)
            parts[read] = {"last": said[-1], "last2": " ".join(said[-2:]),
                           "asked": dialogue.asked_part(text)}[mode]
        return read

    def mixed(self: Any, text: str) -> np.ndarray:
        vector = embed(self, text)
        if text in parts and beta > 0:
            vector = vector + beta * embed(self, parts[text])
            vector = vector / np.linalg.norm(vector)
        return vector

    recall.plain = plain_and_part  # type: ignore[assignment]
    local.E5SmallEmbedder.embed_query = mixed  # type: ignore[method-assign]
    sys.argv = ["engram", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
