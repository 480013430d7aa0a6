"""Learned fusion (pipeline/ranker.py): features, the model file, the preset, the trace."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from engramdb import Memory
from engramdb.errors import InputError
from engramdb.pipeline.presets import load_preset, preset_from_table
from engramdb.pipeline.ranker import FEATURES, QueryTraits, RankerModel, features, learned, load_model

TRAITS = QueryTraits(terms=3, dialogue=False, window=False, names=False, when=False)


def test_features_follow_the_channels() -> None:
    results = {"semantic": [(1, 0.9), (2, 0.8), (3, 0.7)], "lexical": [(2, 12.0), (4, 3.0)]}
    rowids, x = features(results, {"semantic": 0.4, "lexical": 0.6}, TRAITS)
    assert rowids == [1, 2, 3, 4] and x.shape == (4, len(FEATURES))
    col = {name: x[:, i] for i, name in enumerate(FEATURES)}
    assert list(col["semantic.found"]) == [1, 1, 1, 0] and list(col["lexical.found"]) == [0, 1, 0, 1]
    assert col["semantic.rank"][0] == 1.0 and col["semantic.rank"][1] == pytest.approx(1 / (1 + math.log2(2)))
    assert col["semantic.cosine"][3] == pytest.approx(0.7)  # not found: the channel's floor
    assert col["lexical.share"][1] == 1.0 and col["lexical.share"][3] == pytest.approx(0.25)
    assert list(col["channels_found"]) == [1, 2, 1, 1]
    # base is default's weighted mean of z-scores: row 2, found by both, leads it
    assert int(np.argmax(col["base"])) == 1
    assert col["agreement"][0] == pytest.approx(0.1)  # one row in both top-10s
    assert np.allclose(col["lexical.z*query.terms"], col["lexical.z"] * math.log1p(3))


def _model(weights: dict[str, float], intercept: float = 0.0) -> RankerModel:
    coef = np.array([weights.get(name, 0.0) for name in FEATURES])
    return RankerModel(name="t", features=FEATURES, mean=np.zeros(len(FEATURES)), scale=np.ones(len(FEATURES)),
                       coef=coef, intercept=intercept, info={})


def test_scores_are_probabilities_and_contributions_add_up() -> None:
    results = {"semantic": [(1, 0.9), (2, 0.5)], "lexical": [(2, 8.0), (3, 1.0)]}
    model = _model({"lexical.found": 2.0, "semantic.cosine": 3.0}, intercept=-1.0)
    ranked, why = learned(results, {"semantic": 0.4, "lexical": 0.6}, TRAITS, model, explain_top=3)
    assert [c.rowid for c in ranked] == [2, 3, 1]  # row 3: lexical hit, cosine at the floor (0.5)
    top = ranked[0]
    assert top.score == pytest.approx(1 / (1 + math.exp(-(-1.0 + 2.0 + 3.0 * 0.5))))
    assert why[2] == {"semantic.cosine": 1.5, "lexical.found": 2.0}
    assert sum(why[2].values()) + model.intercept == pytest.approx(math.log(top.score / (1 - top.score)))
    assert set(top.channels) == {"semantic", "lexical"}  # the evidence is kept


def test_model_files_are_checked(tmp_path: Path) -> None:
    shipped = load_model("ranker")
    assert shipped.features == FEATURES and np.all(shipped.scale > 0)
    bad = shipped.to_dict() | {"features": list(FEATURES[:-1])}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="other features"):
        load_model(str(path))
    nan = shipped.to_dict()
    nan["coef"] = [float("nan")] * len(FEATURES)
    (tmp_path / "nan.json").write_text(json.dumps(nan))
    with pytest.raises(ValueError, match="finite"):
        load_model(str(tmp_path / "nan.json"))


def test_preset_validation(tmp_path: Path) -> None:
    assert load_preset("learned").fusion == "learned"
    with pytest.raises(InputError, match="fusion.model needs"):
        preset_from_table({"extends": "semantic", "fusion": {"method": "rrf", "model": "ranker"}})
    with pytest.raises(InputError, match="no ranker model"):
        preset_from_table({"extends": "semantic", "fusion": {"method": "learned", "model": "nope"}})
    with pytest.raises(InputError, match="switched off"):
        preset_from_table({"extends": "semantic", "fusion": {"method": "learned", "model": str(tmp_path / "m.json")}},
                          allow_files=False)


def test_learned_search_explains_each_hit(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder="minilm") as mem:
        mem.add(["Alice adopted a puppy named Biscuit.", "Bob repainted his kitchen blue.",
                 "The quarterly report is due on Friday.", "Alice's puppy loves the beach."])
        res = mem.search("Alice puppy", k=3, preset="learned", explain=True)
    assert res.hits and "puppy" in res.hits[0].text and 0 < res.hits[0].score < 1
    fuse = next(s for s in res.trace["stages"] if s["stage"] == "fuse")
    assert fuse["method"] == "learned" and fuse["model"] == "ranker"
    top = fuse["candidates"][0]
    assert top["id"] == res.hits[0].id and top["contributions"]
    assert set(top["contributions"]) <= set(FEATURES)
