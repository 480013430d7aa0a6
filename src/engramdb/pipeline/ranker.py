"""Learned fusion: a small logistic model over per-candidate features, explainable term by term.

Fixed channel weights are right for the queries they were chosen on and wrong elsewhere: a
focused question wants BM25, a chatty dialogue context wants the embedding, a question that
names a time wants the entries in its window. The ``learned`` fusion method keeps the
weighted z-score mean of the fixed weights as one feature and adds what the query and the
channels say about themselves: each channel's normalised score, rank and presence, the raw
cosine, how peaked each channel's score distribution is, how far the channels agree, how
long and chatty the query is — and products of the channel scores with those query traits,
which is how the model moves weight between channels query by query.

The score is ``p = 1 / (1 + exp(-(b + Σ wᵢ xᵢ)))``, fitted as the probability that the
candidate is relevant (pointwise logistic regression, each training set weighing the same),
so it stays calibrated. Each term ``wᵢ xᵢ`` is that feature's contribution, recorded in the
trace with ``explain``. The model file is JSON written by ``benchmarks/train_ranker.py``
from the development sets; the shipped one is ``models/ranker.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..model import Candidate
from ..plan.model import QueryPlan
from ..text.dialogue import utterances
from .fuse import candidates_from, channel_values, ordered

Rows = list[tuple[int, float]]

#: channels with per-channel features, in feature order
CHANNELS = ("semantic", "lexical", "symbolic", "temporal", "dated", "substring", "feedback")
MODELS_DIR = Path(__file__).parent / "models"


def feature_names() -> list[str]:
    """Every feature, in the column order of `features`."""
    names = ["base"]
    for ch in CHANNELS:
        names += [f"{ch}.z", f"{ch}.found", f"{ch}.rank"]
    names += ["semantic.cosine", "semantic.gap", "lexical.share", "channels_found"]
    query = ["query.terms", "query.dialogue", "query.window", "query.names", "query.when",
             "semantic.peak", "lexical.peak", "agreement"]
    names += query
    for q in ("query.terms", "query.dialogue", "semantic.peak", "lexical.peak", "agreement"):
        names += [f"semantic.z*{q}", f"lexical.z*{q}"]
    return names


FEATURES = tuple(feature_names())


@dataclass(frozen=True)
class QueryTraits:
    """What a query says about itself, independent of any candidate."""

    terms: int
    dialogue: bool
    window: bool
    names: bool
    when: bool


def query_traits(query: str, plan: QueryPlan, terms: int) -> QueryTraits:
    return QueryTraits(terms=terms, dialogue=len(utterances(query)) >= 2, window=plan.has_window,
                       names=bool(plan.names()), when=plan.intent == "temporal")


def _peak(raw: list[float]) -> float:
    """How far the best score stands above the rest, in standard deviations (0: flat)."""
    if len(raw) < 2:
        return 0.0
    arr = np.asarray(raw, dtype=np.float64)
    std = float(arr.std())
    return float((arr[0] - arr.mean()) / std) if std > 0 else 0.0


def features(results: dict[str, Rows], weights: dict[str, float], traits: QueryTraits,
             ) -> tuple[list[int], np.ndarray]:
    """Row ids of the union of `results` and their feature matrix (one row each, `FEATURES` columns)."""
    rowids = sorted({rowid for rows in results.values() for rowid, _ in rows})
    index = {rowid: i for i, rowid in enumerate(rowids)}
    n = len(rowids)
    cols: dict[str, np.ndarray] = {}
    base = np.zeros(n)
    active = [ch for ch, rows in results.items() if rows]
    total = sum(weights.get(ch, 1.0) for ch in active) or 1.0
    found = np.zeros(n)
    for ch in CHANNELS:
        z, present, rank = np.zeros(n), np.zeros(n), np.zeros(n)
        rows = results.get(ch) or []
        if rows:
            values, floor = channel_values([s for _, s in rows], "zscore")
            z[:] = floor
            for r, ((rowid, _), v) in enumerate(zip(rows, values), start=1):
                i = index[rowid]
                z[i], present[i], rank[i] = v, 1.0, 1.0 / (1.0 + math.log2(r))
            base += weights.get(ch, 1.0) * z
        cols[f"{ch}.z"], cols[f"{ch}.found"], cols[f"{ch}.rank"] = z, present, rank
        found += present
    cols["base"] = base / total
    cosine, gap, share = np.zeros(n), np.zeros(n), np.zeros(n)
    sem = results.get("semantic") or []
    if sem:
        top = sem[0][1]
        floor_cos = sem[-1][1]
        cosine[:], gap[:] = floor_cos, floor_cos - top
        for rowid, s in sem:
            cosine[index[rowid]], gap[index[rowid]] = s, s - top
    lex = results.get("lexical") or []
    if lex and lex[0][1] > 0:
        for rowid, s in lex:
            share[index[rowid]] = s / lex[0][1]
    cols["semantic.cosine"], cols["semantic.gap"], cols["lexical.share"] = cosine, gap, share
    cols["channels_found"] = found
    sem_top = {r for r, _ in sem[:10]}
    lex_top = {r for r, _ in lex[:10]}
    query = {
        "query.terms": math.log1p(traits.terms), "query.dialogue": float(traits.dialogue),
        "query.window": float(traits.window), "query.names": float(traits.names), "query.when": float(traits.when),
        "semantic.peak": _peak([s for _, s in sem]), "lexical.peak": _peak([s for _, s in lex]),
        "agreement": len(sem_top & lex_top) / 10.0 if sem_top and lex_top else 0.0,
    }
    for name, value in query.items():
        cols[name] = np.full(n, value)
    for q in ("query.terms", "query.dialogue", "semantic.peak", "lexical.peak", "agreement"):
        cols[f"semantic.z*{q}"] = cols["semantic.z"] * query[q]
        cols[f"lexical.z*{q}"] = cols["lexical.z"] * query[q]
    matrix = np.column_stack([cols[name] for name in FEATURES]) if n else np.zeros((0, len(FEATURES)))
    return rowids, matrix


@dataclass(frozen=True)
class RankerModel:
    """A fitted logistic model: standardisation, coefficients and intercept over `features`."""

    name: str
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    info: dict[str, Any]

    def logits(self, matrix: np.ndarray) -> np.ndarray:
        return self.intercept + ((matrix - self.mean) / self.scale) @ self.coef

    def contributions(self, row: np.ndarray, top: int = 6) -> dict[str, float]:
        """The `top` largest terms ``wᵢ · xᵢ`` (standardised) of one candidate's logit."""
        terms = ((row - self.mean) / self.scale) * self.coef
        order = np.argsort(-np.abs(terms))[:top]
        return {self.features[i]: round(float(terms[i]), 4) for i in order if terms[i] != 0}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "features": list(self.features), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "coef": self.coef.tolist(), "intercept": self.intercept, **self.info}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RankerModel":
        names = tuple(data["features"])
        if names != FEATURES:
            missing = set(FEATURES) ^ set(names)
            raise ValueError(f"ranker model {data.get('name')!r} was fitted on other features "
                             f"({', '.join(sorted(missing)) or 'another order'}); retrain it with benchmarks/train_ranker.py")
        arrays = [np.asarray(data[key], dtype=np.float64) for key in ("mean", "scale", "coef")]
        if any(a.shape != (len(names),) or not np.all(np.isfinite(a)) for a in arrays) or not np.all(arrays[1] > 0):
            raise ValueError(f"ranker model {data.get('name')!r}: mean, scale and coef must be finite, one per feature")
        info = {k: v for k, v in data.items() if k not in {"name", "features", "mean", "scale", "coef", "intercept"}}
        return cls(name=str(data.get("name", "ranker")), features=names, mean=arrays[0], scale=arrays[1],
                   coef=arrays[2], intercept=float(data["intercept"]), info=info)


def model_path(model: str) -> Path:
    """A shipped model's file (``"ranker"``), or the path of a ``.json`` model file."""
    if model.endswith(".json"):
        return Path(model).expanduser()
    return MODELS_DIR / f"{model}.json"


@lru_cache(maxsize=8)
def load_model(model: str) -> RankerModel:
    path = model_path(model)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no ranker model {model!r} ({path})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"ranker model {path}: not JSON ({exc})") from None
    return RankerModel.from_dict(data)


def learned(results: dict[str, Rows], weights: dict[str, float], traits: QueryTraits, model: RankerModel,
            explain_top: int = 0) -> tuple[list[Candidate], dict[int, dict[str, float]]]:
    """Candidates scored by `model` (best first), and the top `explain_top` candidates'
    largest feature contributions, by row id."""
    fused = candidates_from(results)
    rowids, matrix = features(results, weights, traits)
    if not rowids:
        return [], {}
    logits = model.logits(matrix)
    for rowid, z in zip(rowids, logits):
        fused[rowid].score = float(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, float(z))))))
    out = ordered(fused)
    why: dict[int, dict[str, float]] = {}
    if explain_top:
        position = {rowid: i for i, rowid in enumerate(rowids)}
        for c in out[:explain_top]:
            why[c.rowid] = model.contributions(matrix[position[c.rowid]])
    return out, why
