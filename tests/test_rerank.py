"""The rerank stage on a real (tiny, built here) ONNX cross-encoder, and stage order as data."""

from __future__ import annotations

from pathlib import Path

import pytest

import tiny_cross_encoder
from engramdb import Memory
from engramdb.errors import InputError
from engramdb.rerank import OnnxCrossEncoder

DOCS = [
    "apple pie recipe with butter",                      # 2 of the query words (apple, pie)
    "apple banana pie tart for the summer party",        # 3: apple, banana, pie
    "banana bread",                                       # 1
    "cherry jam on toast",                                # 0
]
WORDS = " ".join(DOCS).split() + ["recipes", "summer"]

BASE = '[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[fusion]\nmethod = "weighted"\n'


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder.build(tmp_path_factory.mktemp("xenc") / "tiny", WORDS)


def test_the_cross_encoder_scores_pairs(model_dir: Path) -> None:
    model = OnnxCrossEncoder(model_dir)
    assert model.score("apple banana pie", DOCS) == [2.0, 3.0, 1.0, 0.0]
    assert model.score("apple", []) == []
    many = model.score("pie", DOCS * 10)  # more than one batch
    assert many == [1.0, 1.0, 0.0, 0.0] * 10


def test_rerank_stage_reorders_by_the_cross_encoder(mem: Memory, model_dir: Path, tmp_path: Path) -> None:
    mem.add(DOCS)
    query = "apple banana pie"
    plain = tmp_path / "plain.toml"
    plain.write_text(BASE)
    reranked = tmp_path / "reranked.toml"
    reranked.write_text(BASE + f'[rerank]\nmodel = "{model_dir}"\npool = 10\n')
    before = [h.text for h in mem.search(query, k=4, preset=str(plain)).hits]
    res = mem.search(query, k=4, preset=str(reranked))
    after = [h.text for h in res.hits]
    assert after == [DOCS[1], DOCS[0], DOCS[2], DOCS[3]]  # word overlap 3 > 2 > 1 > 0
    assert sorted(before) == sorted(after)
    assert [h.channels["rerank"].score for h in res.hits] == [3.0, 2.0, 1.0, 0.0]
    assert [h.score for h in res.hits] == [1.0, pytest.approx(2 / 3), pytest.approx(1 / 3), 0.0]
    stage = next(s for s in res.trace["stages"] if s["stage"] == "rerank")
    assert stage["model"] == "onnx/tiny" and stage["pool"] == 4 and "skipped" not in stage


def test_a_relative_model_path_is_relative_to_the_preset(mem: Memory, model_dir: Path) -> None:
    preset = model_dir.parent / "presets" / "rel.toml"
    preset.parent.mkdir(exist_ok=True)
    preset.write_text(BASE + '[rerank]\nmodel = "../tiny"\n')
    mem.add(DOCS)
    assert mem.search("apple banana pie", k=1, preset=str(preset)).hits[0].text == DOCS[1]


def test_rerank_weight_blends_with_the_fused_score(mem: Memory, model_dir: Path, tmp_path: Path) -> None:
    mem.add(DOCS)
    fused_only = tmp_path / "w0.toml"
    fused_only.write_text(BASE + f'[rerank]\nmodel = "{model_dir}"\nweight = 0.0\n')
    plain = tmp_path / "plain.toml"
    plain.write_text(BASE)
    query = "banana"
    assert ([h.text for h in mem.search(query, k=4, preset=str(fused_only)).hits]
            == [h.text for h in mem.search(query, k=4, preset=str(plain)).hits])


def test_reranker_from_memory_or_environment(db_path: Path, model_dir: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    preset = tmp_path / "rr.toml"
    preset.write_text(BASE + "[pipeline]\nstages = [\"recall\", \"fuse\", \"rerank\"]\n")
    with Memory(db_path, embedder="minilm", reranker=model_dir) as mem:
        mem.add(DOCS)
        assert mem.search("apple banana pie", k=1, preset=str(preset)).hits[0].text == DOCS[1]
    monkeypatch.setenv("ENGRAM_RERANKER", str(model_dir))
    with Memory(db_path, embedder="minilm") as mem:
        res = mem.search("apple banana pie", k=1, preset=str(preset))
        assert res.hits[0].text == DOCS[1] and "rerank" in res.hits[0].channels
    monkeypatch.delenv("ENGRAM_RERANKER")
    with Memory(db_path, embedder="minilm") as mem:
        res = mem.search("apple banana pie", k=1, preset=str(preset))
        assert "rerank" not in res.hits[0].channels
        assert "no cross-encoder" in next(s for s in res.trace["stages"] if s["stage"] == "rerank")["skipped"]


def test_a_bad_model_directory_is_a_clear_error(mem: Memory, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="model.onnx not found"):
        OnnxCrossEncoder(tmp_path / "empty")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    (broken / "tokenizer.json").write_text("{}")
    with pytest.raises(InputError, match="could not be"):
        OnnxCrossEncoder(broken)
    preset = tmp_path / "missing.toml"
    preset.write_text(BASE + f'[rerank]\nmodel = "{tmp_path / "nowhere"}"\n')
    mem.add(DOCS)
    with pytest.raises(InputError, match="nowhere"):
        mem.search("apple", preset=str(preset))


def test_stage_order_is_data(mem: Memory, tmp_path: Path) -> None:
    """The stages that run, and their order, are the preset's list."""
    mem.add([{"text": f"Ann talked about the garden, part {i}.", "source": {"doc_id": "d1"}} for i in range(4)]
            + [{"text": "Ann's garden has tomatoes and basil.", "source": {"doc_id": "d2"}},
               {"text": "Ann's garden has tomatoes and basil.", "source": {"doc_id": "d3"}}])
    settings = "[group]\nper_group = 2\ndedupe = true\n[diversify]\nmmr_lambda = 1.0\n"
    first = tmp_path / "group_first.toml"
    first.write_text(BASE + settings + '[pipeline]\nstages = ["recall", "fuse", "group", "diversify"]\n')
    res = mem.search("Ann garden", k=5, preset=str(first))
    docs = [h.entry.source.doc_id for h in res.hits]
    assert docs.count("d1") == 2  # capped per document
    assert len({h.text for h in res.hits}) == len(res.hits)  # the repeated text kept once
    assert [s["stage"] for s in res.trace["stages"]] == ["recall", "fuse", "group", "diversify", "select"]
    no_group = tmp_path / "no_group.toml"
    no_group.write_text(BASE + "[diversify]\nmmr_lambda = 1.0\n" + '[pipeline]\nstages = ["recall", "fuse", "diversify"]\n')
    res = mem.search("Ann garden", k=5, preset=str(no_group))
    assert [h.entry.source.doc_id for h in res.hits].count("d1") > 2
    assert [h.text for h in res.hits].count("Ann's garden has tomatoes and basil.") == 2
    assert [s["stage"] for s in res.trace["stages"]] == ["recall", "fuse", "diversify", "select"]


def test_reflection_after_rerank_merges_on_fused_scores(db_path: Path, model_dir: Path, tmp_path: Path) -> None:
    """A rerank stage rescores the pool in place; before reflection merges in its gap recall,
    scores go back to fused ones, so the second rerank blends the cross-encoder with each
    entry's best *fused* score (not with the first rerank's blend)."""
    import json

    from llm_server import FakeLLMServer

    from engramdb.llm import LLMClient, LLMConfig

    preset = tmp_path / "reflecting.toml"
    preset.write_text(BASE + f'[rerank]\nmodel = "{model_dir}"\nweight = 0.5\n[plan]\nreflect_rounds = 1\n')
    gap = {"complete": False, "missing": "bread", "queries": ["banana bread"]}
    with FakeLLMServer([json.dumps(gap)]) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="m", max_retries=0), sleep=lambda _: None)
        with Memory(db_path, embedder="minilm", llm=client) as mem:
            mem.add(DOCS)
            res = mem.search("apple banana pie", k=4, preset=str(preset), explain=True)
    by_stage = {s["stage"]: s for s in res.trace["stages"]}
    assert "skipped" not in by_stage["reflect"] and "rerank (gap 1)" in by_stage
    fused: dict[str, float] = {}
    for name in ("fuse", "fuse (gap 1)"):
        for c in by_stage[name]["candidates"]:
            fused[c["id"]] = max(fused.get(c["id"], float("-inf")), c["score"])

    def minmax(values: dict[str, float]) -> dict[str, float]:
        lo, hi = min(values.values()), max(values.values())
        return {k: (v - lo) / (hi - lo) for k, v in values.items()}

    raw = minmax({h.id: h.channels["rerank"].score for h in res.hits})
    best = minmax({h.id: fused[h.id] for h in res.hits})
    assert len(res.hits) == 4
    for h in res.hits:
        assert h.score == pytest.approx(0.5 * raw[h.id] + 0.5 * best[h.id], abs=1e-5)
