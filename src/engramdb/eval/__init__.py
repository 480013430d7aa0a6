"""Evaluation harness: data set loaders, ranking metrics, runners and reports (``engram eval``).

See docs/EVAL.md for the commands, the JSON result schema and the metric definitions.
"""

from __future__ import annotations

from .datasets import (
    BeirDataset,
    BeirDoc,
    EvalDataError,
    LocomoQuestion,
    LocomoSample,
    LocomoSession,
    LocomoTurn,
    load_beir,
    load_locomo,
)
from .metrics import hit_at_k, mrr_at_k, ndcg_at_k, percentile, recall_at_k
from .report import markdown_table, plot_result
from .runner import run_beir, run_locomo

__all__ = [
    "BeirDataset",
    "BeirDoc",
    "EvalDataError",
    "LocomoQuestion",
    "LocomoSample",
    "LocomoSession",
    "LocomoTurn",
    "load_beir",
    "load_locomo",
    "hit_at_k",
    "mrr_at_k",
    "ndcg_at_k",
    "percentile",
    "recall_at_k",
    "markdown_table",
    "plot_result",
    "run_beir",
    "run_locomo",
]
