"""Experiment (not shipped): a question's vector mixed with its embedding as a passage.

    python benchmarks/query_as_passage.py BETA eval beir DATA/scifact --preset default,semantic

SciFact's queries are claims, statements like the abstracts rather than questions, and e5 is
trained with ``query: `` for asymmetric retrieval and ``passage: `` for texts. The semantic
channel's vector becomes ``normalise(v("query: q") + BETA × v("passage: q"))``. The rest of the
arguments go to the ``engram`` CLI, with the e5 embedder patched in this process. Results:
docs/BENCHMARKS.md, "Tried for `default`".
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from engramdb import cli
from engramdb.embed import local


def main() -> None:
    beta = float(sys.argv.pop(1))
    embed = local.E5SmallEmbedder.embed_query

    def mixed(self: Any, text: str) -> np.ndarray:
        vector = embed(self, text)
        if beta > 0:
            vector = vector + beta * self.embed_documents([text])[0]
            vector = vector / np.linalg.norm(vector)
        return vector

    local.E5SmallEmbedder.embed_query = mixed  # type: ignore[method-assign]
    sys.argv = ["engram", *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()
