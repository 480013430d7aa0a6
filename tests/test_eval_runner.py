"""End-to-end evaluation on the hand-made fixtures with a real store and the real fast model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engramdb.eval.cli import eval_cmd, split_presets
from engramdb.eval.datasets import load_beir, load_locomo
from engramdb.eval.metrics import mean, ndcg_at_k, recall_at_k
from engramdb.eval.report import markdown_table, plot_result
from engramdb.eval.runner import _memory_entries, dedupe_turn_ranking, hits_to_turns, run_beir, run_locomo
from engramdb.model import ChannelScore, Entry, Hit, Source

FIXTURES = Path(__file__).parent / "fixtures" / "eval"
BEIR = FIXTURES / "emberroot"
LOCOMO = FIXTURES / "locomo_tiny.json"
STABLE_KEYS = {"preset", "ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@10", "latency_ms", "index_s", "by_category"}


@pytest.fixture(scope="module")
def beir_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cache = tmp_path_factory.mktemp("vectors")
    return run_beir(BEIR, presets=["default", "lexical"], embedder="minilm", progress=False,
                    cache_dir=cache, details=True)


@pytest.fixture(scope="module")
def locomo_result() -> dict[str, Any]:
    return run_locomo(LOCOMO, presets=["default", "lexical"], embedder="minilm", progress=False,
                      cache_dir=None, details=True)


def _row(result: dict[str, Any], preset: str) -> dict[str, Any]:
    return next(r for r in result["results"] if r["preset"] == preset)


def test_beir_schema(beir_result: dict[str, Any]) -> None:
    assert beir_result["dataset"] == "emberroot"
    assert beir_result["n_queries"] == 8  # q9 (grade 0 only) and q10 (unjudged) are left out
    assert beir_result["n_docs"] == 20
    assert beir_result["embedder"] == "minilm"
    assert [r["preset"] for r in beir_result["results"]] == ["default", "lexical"]
    for row in beir_result["results"]:
        assert STABLE_KEYS <= set(row)
        assert row["by_category"] is None
        assert 0.0 <= row["ndcg@10"] <= 1.0
        assert row["latency_ms"]["p50"] <= row["latency_ms"]["p95"]
        assert row["index_s"] == beir_result["index_s"]  # one shared index for every preset
        assert len(row["per_query"]) == 8
    json.dumps(beir_result)  # JSON-able as is
    assert beir_result["peak_rss_mb"] > 0


def test_beir_metrics_follow_from_the_rankings(beir_result: dict[str, Any]) -> None:
    ds = load_beir(BEIR)
    for row in beir_result["results"]:
        for q in row["per_query"]:
            assert len(q["top"]) == len(set(q["top"]))  # one position per document
            assert set(q["top"]) <= set(ds.corpus)
            assert q["ndcg@10"] == pytest.approx(ndcg_at_k(q["top"], ds.relevant(q["id"]), 10))
            assert q["recall@10"] == pytest.approx(recall_at_k(q["top"], ds.relevant(q["id"]), 10))
        assert row["ndcg@10"] == pytest.approx(mean(q["ndcg@10"] for q in row["per_query"]), abs=1e-4)
        assert row["mrr@10"] == pytest.approx(mean(q["mrr@10"] for q in row["per_query"]), abs=1e-4)


def test_details_say_how_the_planner_read_each_query(beir_result: dict[str, Any],
                                                     locomo_result: dict[str, Any]) -> None:
    default = _row(beir_result, "default")["per_query"]
    assert all(set(q["plan"]) == {"intent", "window", "present", "former"} for q in default)
    assert all(q["plan"]["present"] is False for q in default)  # no question there asks about now
    assert all(q["recalled"]["semantic"] > 0 and "temporal" not in q["recalled"] for q in default)
    assert all(q["plan"]["intent"] == "lookup" for q in _row(beir_result, "lexical")["per_query"])  # no planner
    locomo = [q for row in locomo_result["results"] if row["preset"] == "default" for q in row["per_query"]]
    assert any(q["plan"]["intent"] == "temporal" for q in locomo)


def test_beir_lexical_finds_the_planted_terms(beir_result: dict[str, Any]) -> None:
    # every query shares its rarest words with its best document only
    lexical = _row(beir_result, "lexical")
    assert lexical["mrr@10"] == 1.0
    assert lexical["hit@10"] == 1.0
    q1 = next(q for q in lexical["per_query"] if q["id"] == "q1")
    assert q1["top"][:2] == ["d04", "d17"]  # grades 2 then 1: a perfect ranking
    assert q1["ndcg@10"] == pytest.approx(1.0)
    assert _row(beir_result, "default")["recall@100"] == 1.0


def test_beir_caches_document_vectors(tmp_path: Path) -> None:
    run_beir(BEIR, presets=["semantic"], embedder="minilm", progress=False, cache_dir=tmp_path, limit_queries=1)
    assert any(p.is_file() and p.stat().st_size > 0 for p in tmp_path.iterdir())


def test_locomo_counts_and_categories(locomo_result: dict[str, Any]) -> None:
    r = locomo_result
    assert r["n_queries"] == 8  # 6 usable in fx-1 (one has no readable evidence) + 2 in fx-2
    assert r["n_queries_category_5"] == 1
    assert r["n_conversations"] == 2 and r["n_turns"] == 15
    ev = r["evidence"]
    assert (ev["normalised"], ev["malformed"], ev["unknown"], ev["questions_without_evidence"]) == (4, 1, 1, 1)
    for row in r["results"]:
        assert STABLE_KEYS | {"recall@5", "category_5"} <= set(row)
        assert {c: v["n"] for c, v in row["by_category"].items()} == {"1": 1, "2": 1, "3": 1, "4": 5}
        assert row["category_5"]["n"] == 1
        main = [q for q in row["per_query"] if q["category"] != 5]
        assert len(main) == 8
        assert row["recall@10"] == pytest.approx(mean(q["recall@10"] for q in main), abs=1e-4)
        assert row["by_category"]["4"]["hit@10"] == pytest.approx(
            mean(q["hit@10"] for q in main if q["category"] == 4), abs=1e-4
        )


def test_locomo_namespaces_are_separate(locomo_result: dict[str, Any]) -> None:
    for row in locomo_result["results"]:
        for q in row["per_query"]:
            if q["sample_id"] == "fx-2":
                assert {i for pos in q["top"] for i in pos} <= {"D1:1", "D1:2", "D1:3"}
                assert all(pos for pos in q["top"])  # no hit from the other conversation


def test_locomo_lexical_single_hop(locomo_result: dict[str, Any]) -> None:
    lexical = {(q["sample_id"], q["qa_index"]): q for q in _row(locomo_result, "lexical")["per_query"]}
    assert lexical[("fx-1", 0)]["top"][0] == ["D1:1"]  # "name ... greyhound"
    assert lexical[("fx-2", 0)]["mrr@10"] == 1.0
    assert lexical[("fx-2", 1)]["top"][0] == ["D1:2"]  # "greyhound-shaped kite"


def test_turn_entries_carry_time_speaker_and_dia_id() -> None:
    sample = load_locomo(LOCOMO)[0]
    entries, id_to_turn = _memory_entries(sample, "locomo_fx-1", "turns", None)
    assert len(entries) == 12
    first, seventh = entries[0], entries[6]
    assert first.text.startswith("Tamsin: Morning! I finally adopted")
    assert first.kind == "turn" and first.namespace == "locomo_fx-1"
    assert first.timestamp == "2024-03-03T09:15:00+00:00"
    assert id_to_turn[first.id] == "D1:1"
    assert first.persons == ["Tamsin"]
    assert (first.source.session_id, first.source.turn_id, first.source.speaker) == ("session_1", "D1:1", "Tamsin")
    assert seventh.timestamp == "2024-04-17T16:40:00+00:00" and seventh.source.turn_id == "D2:1"


def test_fact_entries_map_back_to_their_turns() -> None:
    from engramdb.conversation import OfflineExtractor

    sample = load_locomo(LOCOMO)[0]
    facts, id_to_turn = _memory_entries(sample, "ns", "facts", OfflineExtractor())
    assert facts and all(f.kind == "fact" for f in facts)
    first = facts[0]
    assert "Tamsin" in first.text and " I " not in f" {first.text} "
    # Facts alone: no turns stored to link to, so the turns they came from are kept aside.
    assert first.derived_from == [] and [id_to_turn[d] for d in first.metadata["eval_source_turns"]] == ["D1:1"]
    # A fact hit counts as its source turn (not as a turn of its own).
    assert hits_to_turns([_hit(first)], id_to_turn, "ns") == [("D1:1",)]
    both, _ = _memory_entries(sample, "ns", "both", OfflineExtractor())
    assert len(both) == 12 + len(facts)
    linked = [e for e in both if e.kind == "fact"][0]
    assert [id_to_turn[d] for d in linked.derived_from] == ["D1:1"] and "eval_source_turns" not in linked.metadata
    assert hits_to_turns([_hit(linked)], id_to_turn, "ns") == [("D1:1",)]


def test_ranking_drops_positions_that_only_repeat_ranked_turns() -> None:
    ranking = [("D1:1",), ("D1:1",), (), ("D1:2", "D1:1"), ("D1:2",), ("D1:3",)]
    assert dedupe_turn_ranking(ranking) == [("D1:1",), (), ("D1:2", "D1:1"), ("D1:3",)]


def _hit(entry: Entry) -> Hit:
    return Hit(id=entry.id or "x", text=entry.text, score=1.0, entry=entry, channels={"lexical": ChannelScore(1, 1.0)})


def test_hits_to_turns_maps_derived_entries() -> None:
    turn = Entry(text="A: hi", kind="turn", namespace="ns", id="t1", source=Source(turn_id="D1:1"))
    fact = Entry(text="A likes tea", kind="fact", namespace="ns", id="f1", derived_from=["t2", "t3", "t2", "zz"])
    orphan = Entry(text="no source", kind="fact", namespace="ns", id="f2")
    foreign = Entry(text="B: hi", kind="turn", namespace="other", id="t9", source=Source(turn_id="D1:2"))
    id_to_turn = {"t1": "D1:1", "t2": "D1:2", "t3": "D2:5"}
    hits = [_hit(turn), _hit(fact), _hit(orphan), _hit(foreign)]
    assert hits_to_turns(hits, id_to_turn, "ns") == [("D1:1",), ("D1:2", "D2:5"), (), ()]
    assert hits_to_turns(hits, id_to_turn)[3] == ("D1:2",)
    ranking = hits_to_turns(hits, id_to_turn, "ns")
    # evidence D2:5 only: covered by the fact at rank 2
    assert recall_at_k(ranking, {"D2:5"}, 2) == 1.0
    assert recall_at_k(ranking, {"D2:5"}, 1) == 0.0


def test_split_presets() -> None:
    assert split_presets(("default",)) == ["default"]
    assert split_presets(("default,lexical", "semantic", "lexical")) == ["default", "lexical", "semantic"]
    assert split_presets(("all",))[0] == "default"
    assert set(split_presets(("all",))) >= {"default", "semantic", "lexical", "symbolic"}


def test_cli_beir_writes_json_markdown_and_png(tmp_path: Path) -> None:
    out, md, png = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.png"
    res = CliRunner().invoke(
        eval_cmd,
        ["beir", str(BEIR), "--preset", "default,lexical", "--embedder", "minilm", "--k", "5", "--limit", "3",
         "--json", str(out), "--md", str(md), "--plot", str(png), "--quiet", "--no-cache"],
    )
    assert res.exit_code == 0, res.output
    assert "| lexical |" in res.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["n_queries"] == 3 and data["k"] == 5
    assert [r["preset"] for r in data["results"]] == ["default", "lexical"]
    assert {"ndcg@5", "recall@5", "mrr@5", "ndcg@10", "recall@100"} <= set(data["results"][0])
    assert md.read_text(encoding="utf-8").startswith("**emberroot** · 3 queries")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_locomo_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(eval_cmd, ["locomo", str(LOCOMO), "--preset", "lexical", "--embedder", "minilm",
                                   "--limit", "2", "--quiet", "--no-cache"])
    assert res.exit_code == 0, res.output
    assert "| lexical | 1 multi-hop |" not in res.stdout  # the first two questions are categories 4 and 2
    assert "| lexical | 4 single-hop |" in res.stdout
    bad = runner.invoke(eval_cmd, ["beir", str(BEIR), "--preset", "nope", "--quiet", "--no-cache"])
    assert bad.exit_code != 0 and "unknown preset(s) nope" in bad.output
    broken = tmp_path / "broken.json"
    broken.write_text("[{]", encoding="utf-8")
    bad = runner.invoke(eval_cmd, ["locomo", str(broken), "--quiet", "--no-cache"])
    assert bad.exit_code == 1 and bad.output.startswith(f"error: {broken}:1: invalid JSON")


def test_a_plot_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(eval_cmd, ["beir", str(BEIR), "--preset", "lexical", "--plot", str(tmp_path / "out.txt"),
                                        "--quiet", "--no-cache"])
    assert res.exit_code == 1 and res.output.startswith("error: --plot ") and "not .txt" in res.output
    assert "|" not in res.output and not (tmp_path / "out.txt").exists()  # nothing ran


def test_a_missing_matplotlib_or_an_unusable_cache_folder_is_refused_before_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both were found only after the whole evaluation had run (an outside check): --plot without
    matplotlib failed at the end, and a --cache-dir that cannot be made printed "[Errno 2] …"."""
    import sys

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    res = CliRunner().invoke(eval_cmd, ["beir", str(BEIR), "--preset", "lexical", "--cache-dir", str(blocked / "sub"),
                                        "--quiet"])
    assert res.exit_code == 1 and res.output.startswith(f"error: --cache-dir {blocked / 'sub'}: cannot be used"), res.output
    assert "|" not in res.output and "--no-cache" in res.output
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    res = CliRunner().invoke(eval_cmd, ["beir", str(BEIR), "--preset", "lexical", "--plot", str(tmp_path / "out.png"),
                                        "--quiet", "--no-cache"])
    assert res.exit_code == 1 and "plotting needs matplotlib" in res.output and "|" not in res.output, res.output


def test_judgements_the_data_cannot_match_are_reported(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "emberroot"
    shutil.copytree(BEIR, copy)
    with (copy / "qrels" / "test.tsv").open("a", encoding="utf-8") as qrels:
        qrels.write("q_unknown\td01\t1\n")
        first_query = json.loads((copy / "queries.jsonl").read_text(encoding="utf-8").splitlines()[0])["_id"]
        qrels.write(f"{first_query}\tdoc_unknown\t1\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(eval_cmd, ["beir", str(copy), "--preset", "lexical", "--embedder", "minilm",
                                        "--json", str(out), "--quiet", "--no-cache"])
    assert res.exit_code == 0, res.output
    assert "warning: 1 judgements name documents the corpus does not hold" in res.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["qrels_unmatched"] == {"docs": 1, "queries": 1}


def test_report_from_a_handmade_result(tmp_path: Path) -> None:
    result = {
        "dataset": "toy", "n_queries": 2, "embedder": "minilm",
        "results": [
            {"preset": "default", "ndcg@10": 0.5, "recall@10": 0.75, "recall@100": 1.0, "mrr@10": 0.5,
             "hit@10": None, "latency_ms": {"p50": 1.25, "p95": 3.0}, "index_s": 2.0, "by_category": None},
        ],
    }
    table = markdown_table(result)
    assert "| preset | nDCG@10 | R@10 | R@100 | MRR@10 | p50 ms | p95 ms | index s |" in table
    assert "| default | 0.500 | 0.750 | 1.000 | 0.500 | 1.2 | 3.0 | 2.0 |" in table
    assert plot_result(result, tmp_path / "c.png").stat().st_size > 1000


def test_presets_may_follow_preset_with_spaces(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engramdb.eval.cli import eval_cmd

    out = tmp_path / "r.json"
    res = CliRunner().invoke(eval_cmd, ["beir", "--preset", "lexical", "rrf", str(BEIR), "--embedder", "minilm",
                                        "--quiet", "--no-cache", "--json", str(out)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())["results"]
    assert [row["preset"] for row in rows] == ["lexical", "rrf"]
    # The second preset is compared with the first, query by query.
    assert "vs_first" not in rows[0] and rows[1]["vs_first"]["preset"] == "lexical"
    vs = rows[1]["vs_first"]["ndcg@10"]
    assert vs["delta"] == pytest.approx(rows[1]["ndcg@10"] - rows[0]["ndcg@10"], abs=1e-3) and 0 < vs["p"] <= 1
    assert "Δ nDCG@10 vs lexical (p)" in res.output
    two_paths = CliRunner().invoke(eval_cmd, ["beir", str(BEIR), str(tmp_path), "--quiet", "--no-cache"])
    assert two_paths.exit_code == 2 and "exactly one DATASET_DIR" in two_paths.output
    not_a_file = CliRunner().invoke(eval_cmd, ["locomo", str(BEIR), "--quiet", "--no-cache"])
    assert not_a_file.exit_code == 2 and "is a directory" in not_a_file.output


def _same_rankings(pg: dict[str, Any], lite: dict[str, Any]) -> None:
    """Same metrics, rankings and scores (to float32 noise) preset by preset."""
    assert pg["backend"] == "postgres" and lite["backend"] == "sqlite"
    for pg_row, lite_row in zip(pg["results"], lite["results"], strict=True):
        assert pg_row["preset"] == lite_row["preset"]
        for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@10"):
            assert pg_row[key] == lite_row[key], (pg_row["preset"], key)
        assert pg_row["by_category"] == lite_row["by_category"]
        for pg_q, lite_q in zip(pg_row["per_query"], lite_row["per_query"], strict=True):
            assert pg_q["top"] == lite_q["top"]
            assert [s for s, _ in pg_q["scored"]] == pytest.approx([s for s, _ in lite_q["scored"]], abs=1e-5)


def test_eval_on_postgres_matches_sqlite(postgres_server: Any, beir_result: dict[str, Any],
                                         locomo_result: dict[str, Any], tmp_path: Path) -> None:
    """`--store postgresql://…` runs in a scratch database (dropped afterwards) with SQLite's numbers."""
    def databases() -> set[str]:
        out = postgres_server.run("psql", "-h", "127.0.0.1", "-p", str(postgres_server.port), "-U", "postgres",
                                  "-Atc", "SELECT datname FROM pg_database")
        return set(out.stdout.split())

    before = databases()
    url = postgres_server.url()
    pg_beir = run_beir(BEIR, presets=["default", "lexical"], embedder="minilm", progress=False,
                       cache_dir=tmp_path / "vectors", details=True, store=url)
    _same_rankings(pg_beir, beir_result)
    pg_locomo = run_locomo(LOCOMO, presets=["default", "lexical"], embedder="minilm", progress=False,
                           cache_dir=None, details=True, store=postgres_server.socket_url())
    _same_rankings(pg_locomo, locomo_result)
    assert databases() == before  # the scratch databases are gone
    bad = CliRunner().invoke(eval_cmd, ["beir", str(BEIR), "--store", str(tmp_path / "x.db"), "--quiet",
                                        "--no-cache"])
    assert bad.exit_code != 0 and "--store takes a postgresql:// URL" in bad.output
