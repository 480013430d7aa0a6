"""Fusion methods against rankings computed by hand."""

from __future__ import annotations

import pytest

from engramdb import Memory
from engramdb.pipeline.fuse import rrf, weighted


def test_rrf_union_weights_and_evidence():
    results = {"semantic": [(1, 0.9), (2, 0.8)], "lexical": [(3, 7.0), (1, 5.0)]}
    fused = rrf(results, {"semantic": 1.0, "lexical": 0.5}, k=60)
    scores = {c.rowid: c.score for c in fused}
    assert scores[1] == pytest.approx(1 / 61 + 0.5 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(0.5 / 61)  # found by one channel only: it survives
    assert [c.rowid for c in fused] == [1, 2, 3]
    one = next(c for c in fused if c.rowid == 1)
    assert (one.channels["semantic"].rank, one.channels["lexical"].rank) == (1, 2)
    assert one.channels["lexical"].score == 5.0


def test_rrf_ties_break_on_best_rank_then_rowid():
    fused = rrf({"a": [(7, 1.0), (8, 0.5)], "b": [(8, 3.0), (7, 1.0)]}, {}, k=60)
    assert [c.rowid for c in fused] == [7, 8]  # equal scores, equal best rank -> rowid


def test_weighted_zscore_by_hand():
    # semantic raw [0.9, 0.6, 0.3] -> z = [1.2247, 0, -1.2247]; lexical raw [4, 2] -> z = [1, -1]
    results = {"semantic": [(1, 0.9), (2, 0.6), (3, 0.3)], "lexical": [(3, 4.0), (4, 2.0)]}
    fused = weighted(results, {"semantic": 0.4, "lexical": 0.6}, "zscore")
    z = 1.5 ** 0.5
    expected = {
        1: 0.4 * z + 0.6 * -1.0,      # missing from lexical: its floor (-1)
        2: 0.4 * 0.0 + 0.6 * -1.0,
        3: 0.4 * -z + 0.6 * 1.0,
        4: 0.4 * -z + 0.6 * -1.0,     # missing from semantic: its floor (-z)
    }
    assert {c.rowid: c.score for c in fused} == pytest.approx(expected)
    assert [c.rowid for c in fused] == [3, 1, 2, 4]


def test_weighted_dbsf_by_hand():
    # DBSF: [mean - 3 sd, mean + 3 sd] -> [0, 1]. semantic: mean 0.6, sd 0.2449 -> z / 6 + 0.5;
    # lexical: mean 3, sd 1 -> [0.6667, 0.3333].
    results = {"semantic": [(1, 0.9), (2, 0.6), (3, 0.3)], "lexical": [(3, 4.0), (4, 2.0)]}
    fused = weighted(results, {"semantic": 1.0, "lexical": 1.0}, "dbsf")
    z = 1.5 ** 0.5
    expected = {1: (0.5 + z / 6) + 1 / 3, 2: 0.5 + 1 / 3, 3: (0.5 - z / 6) + 2 / 3, 4: (0.5 - z / 6) + 1 / 3}
    assert {c.rowid: c.score for c in fused} == pytest.approx(expected)
    assert [c.rowid for c in fused] == [1, 3, 2, 4]


def test_weighted_minmax_and_constant_lists():
    results = {"semantic": [(1, 0.5), (2, 0.25)], "lexical": [(2, 3.0)]}
    fused = weighted(results, {"semantic": 1.0, "lexical": 1.0}, "minmax")
    # lexical found only row 2: its single score cannot be spread, so members count 1 and
    # row 1, which lexical did not return, counts 0 (not the members' value).
    assert {c.rowid: c.score for c in fused} == pytest.approx({1: 1.0 + 0.0, 2: 0.0 + 1.0})
    fused = weighted({"lexical": [(5, 2.0), (6, 2.0)], "semantic": [(7, 0.9), (5, 0.5)]},
                     {"lexical": 0.5, "semantic": 1.0}, "zscore")
    # lexical is constant: 5 and 6 get 0.5 * 1; 7 gets lexical's 0. semantic z: 7 -> 1, 5 -> -1.
    assert {c.rowid: c.score for c in fused} == pytest.approx({5: 0.5 - 1.0, 6: 0.5 - 1.0, 7: 1.0})


def test_scores_do_not_depend_on_k(mem):
    mem.add([f"note {i} about {w}" for i, w in enumerate(["tea", "coffee", "tea and coffee", "water", "juice"] * 4)])
    for preset in ("default", "semantic", "lexical", "rrf", "unplanned", "simplemem", "ping", "molore"):
        small = mem.search("tea or coffee", k=3, preset=preset)
        large = mem.search("tea or coffee", k=15, preset=preset)
        assert [(h.id, h.score) for h in small] == [(h.id, h.score) for h in large][:3]
    # lychee's route slots and MMR choose *which* entries fill the k places, so its order may
    # depend on k; an entry's score never does.
    small = {h.id: h.score for h in mem.search("tea or coffee", k=3, preset="lychee")}
    large = {h.id: h.score for h in mem.search("tea or coffee", k=15, preset="lychee")}
    assert small and all(large[i] == score for i, score in small.items() if i in large)


def test_union_keeps_channel_order_and_first_occurrence():
    from engramdb.pipeline.fuse import union

    results = {"lexical": [(3, 9.0), (1, 2.0)], "semantic": [(1, 0.9), (2, 0.8), (4, 0.1)], "symbolic": [(5, 1.0)]}
    fused = union(results, ["semantic", "lexical", "symbolic"])
    # semantic first: 1, 2, 4; then lexical's new row 3; then symbolic's 5.
    assert [c.rowid for c in fused] == [1, 2, 4, 3, 5]
    assert [round(c.score, 6) for c in fused] == [1.0, 0.5, round(1 / 3, 6), 0.25, 0.2]
    assert fused[0].channels["lexical"].rank == 2  # evidence of every channel is kept


def test_max_score_puts_keyword_hits_at_one():
    from engramdb.pipeline.fuse import max_score

    results = {"semantic": [(1, 0.95), (2, 0.6), (3, 0.4)], "lexical": [(3, 7.5), (4, 0.2)]}
    fused = max_score(results)
    # 3 and 4 are keyword hits (1.0); ties break on the best rank: 3 is lexical #1, 4 lexical #2.
    assert [(c.rowid, round(c.score, 6)) for c in fused] == [(3, 1.0), (4, 1.0), (1, 0.95), (2, 0.6)]


def test_route_fusion_by_hand():
    from engramdb.pipeline.fuse import route

    results = {"semantic": [(1, 0.9), (2, 0.7), (3, 0.5)], "lexical": [(2, 8.0), (4, 4.0)]}
    fused = route(results, k=60)
    # min-max: semantic 1 -> 1, 2 -> 0.5, 3 -> 0; lexical 2 -> 1, 4 -> 0.
    # RRF sums: 1: 1/61; 2: 1/62 + 1/61 (the max); 3: 1/63; 4: 1/62.
    top = 1 / 62 + 1 / 61
    expected = {
        1: 0.82 * 1.0 + 0.18 * (1 / 61) / top,
        2: 0.82 * 1.0 + 0.18 * 1.0,
        3: 0.82 * 0.0 + 0.18 * (1 / 63) / top,
        4: 0.82 * 0.0 + 0.18 * (1 / 62) / top,
    }
    assert {c.rowid: c.score for c in fused} == pytest.approx(expected)
    assert [c.rowid for c in fused] == [2, 1, 4, 3]


@pytest.mark.parametrize("method", ["union", "max", "route"])
def test_new_fusion_methods_run_end_to_end(mem, tmp_path, method):
    mem.add(["tea with lemon", "green tea in Kyoto", "coffee beans", "a tea ceremony"])
    preset = tmp_path / f"{method}.toml"
    preset.write_text(f'[channels.semantic]\nk = 5\n[channels.lexical]\nk = 5\n[fusion]\nmethod = "{method}"\n')
    res = mem.search("tea", k=3, preset=str(preset))
    assert len(res.hits) == 3 and all("tea" in h.text for h in res.hits)
    assert res.trace["stages"][2]["method"] == method


def test_route_slots_reserve_places_for_every_route():
    from engramdb.pipeline.fuse import route, route_slots

    results = {"a": [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)], "b": [(9, 0.5), (8, 0.1)]}
    fused = route(results, k=60)
    # min-max per route: a -> 1, 2/3, 1/3, 0; b -> 1, 0. 0.82 x best + 0.18 x RRF / (1/61):
    # 1 and 9 -> 1.0 (tie, rowid), 2 -> 0.724, 3 -> 0.448, 8 -> 0.177, 4 -> 0.172.
    by_score = [c.rowid for c in fused]
    assert by_score == [1, 9, 2, 3, 8, 4]
    # k = 2, two routes -> quota 1 each: a's best (1) and b's best (9) fill the top 2.
    slotted, promoted = route_slots(fused, 2)
    assert [c.rowid for c in slotted] == by_score and promoted == {}
    assert sorted(c.rowid for c in slotted) == sorted(by_score)  # nothing lost, nothing added
    # k = 4 -> quota 2 each: rows 1, 2 (a) and 9, 8 (b); 8 would not make the top 4 by score.
    slotted, promoted = route_slots(fused, 4)
    assert {c.rowid for c in slotted[:4]} == {1, 2, 9, 8} and promoted == {"b": 1}
    top = slotted[:4]
    assert [c.score for c in top] == sorted((c.score for c in top), reverse=True)  # ordered by score within k


def test_calibrated_weighted_score_is_monotone_bounded_and_channel_count_free():
    import math

    from engramdb.pipeline.fuse import weighted

    results = {"semantic": [(1, 0.9), (2, 0.6), (3, 0.3)], "lexical": [(3, 4.0), (4, 2.0)]}
    weights = {"semantic": 0.4, "lexical": 0.6}
    raw = {c.rowid: c.score for c in weighted(results, weights)}
    calibrated = weighted(results, weights, calibration=(2.0, -1.0))
    assert [c.rowid for c in calibrated] == [c.rowid for c in weighted(results, weights)]
    for c in calibrated:  # p = sigmoid(a * raw / total weight + b), total weight = 0.4 + 0.6
        assert c.score == pytest.approx(1 / (1 + math.exp(-(2.0 * raw[c.rowid] / 1.0 - 1.0))))
        assert 0.0 < c.score < 1.0
    # One channel at weight 0.4: the weighted mean is its z-score, not 0.4 x it, so the same
    # evidence gets the same calibrated score whatever else ran.
    alone = weighted({"semantic": results["semantic"]}, weights, calibration=(1.0, 0.0))
    assert alone[0].score == pytest.approx(1 / (1 + math.exp(-1.224744871)))


def test_a_base_channel_that_found_nothing_counts_against_every_candidate() -> None:
    """BM25 ran and no entry shares a word with the query: the embedding's best guess is not
    the same evidence as one BM25 agrees with, so the mean counts the empty channel's weight.
    A cue channel (a time, a name) that found nothing does not count: it was asked less."""
    import math

    from engramdb.pipeline.fuse import weighted

    semantic = [(1, 0.9), (2, 0.6), (3, 0.3)]
    weights = {"semantic": 0.4, "lexical": 0.6, "temporal": 3.0}
    z_best = 1.224744871
    alone = weighted({"semantic": semantic}, weights, calibration=(1.0, 0.0))
    missed = weighted({"semantic": semantic, "lexical": []}, weights, calibration=(1.0, 0.0))
    cue = weighted({"semantic": semantic, "temporal": []}, weights, calibration=(1.0, 0.0))
    assert alone[0].score == pytest.approx(1 / (1 + math.exp(-z_best))) == cue[0].score
    assert missed[0].score == pytest.approx(1 / (1 + math.exp(-0.4 * z_best)))
    assert [c.rowid for c in missed] == [c.rowid for c in alone]  # the order is the same


def test_nonsense_reads_as_unlikely_and_a_real_question_as_likely(tmp_path) -> None:
    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        mem.add(["Alice adopted a puppy named Biscuit.", "Bob bought a red bike.",
                 "Carol is visiting in July.", "Dan got promoted to team lead."])
        nonsense = [mem.search(q, k=1)[0].score for q in ("quantum chromodynamics lattice gauge", "?")]
        real = mem.search("What did Bob buy?", k=1)
    assert max(nonsense) < 0.5 < real[0].score and real[0].text == "Bob bought a red bike."


@pytest.mark.parametrize("preset", ["default", "simplemem", "ping", "unplanned"])
def test_asking_for_more_hits_never_reorders_the_first_ones(tmp_path, preset: str) -> None:
    """k=100 lengthens every channel's list past the preset's depth (50); the first 10 hits
    are still those of a k=10 search, score for score. (Not for `molore` and `lychee`: their
    gates, grouping and route slots depend on k by design; docs/EVAL.md.)"""
    import random

    from engramdb import Memory

    rng = random.Random(7)
    words = "tea garden harbour violin ledger pottery bike lantern orchard river".split()
    texts = [" ".join(rng.choice(words) for _ in range(6)) + f" note {i}" for i in range(300)]
    with Memory(tmp_path / "k.db", embedder="minilm") as mem:
        mem.add(texts)
        for query in ("tea garden by the river", "violin ledger", "pottery orchard lantern bike"):
            few = mem.search(query, k=10, preset=preset)
            many = mem.search(query, k=100, preset=preset, explain=True)
            assert len(many) == 100
            assert [h.id for h in many[:10]] == [h.id for h in few]
            assert [h.score for h in many[:10]] == pytest.approx([h.score for h in few], abs=1e-9)
            scores = [h.score for h in many]
            assert scores == sorted(scores, reverse=True)
            fuse = next(s for s in many.trace["stages"] if s["stage"] == "fuse")
            assert fuse["tail"] > 0  # the deeper lists were used, after the head


def test_a_small_store_does_not_make_the_right_answer_look_unlikely() -> None:
    """z-scores over n scores stay under sqrt(n - 1): in a 12-entry store the mean of the one
    clear answer is small, and with the calibration fitted on 50-deep lists its p read ~0.1.
    Scaled to that depth, it reads as a likely hit; the order does not change."""
    from engramdb.pipeline.fuse import size_scale

    semantic = [(1, 0.93)] + [(i, 0.80 - 0.005 * i) for i in range(2, 13)]
    lexical = [(1, 13.1), (2, 1.5), (3, 1.2)]
    results = {"semantic": semantic, "lexical": lexical}
    calibration = (1.3444, -4.4588)
    plain = weighted(results, {"semantic": 0.4, "lexical": 0.6}, "zscore", calibration)
    scaled = weighted(results, {"semantic": 0.4, "lexical": 0.6}, "zscore", calibration, full_depth=50)
    assert [c.rowid for c in scaled] == [c.rowid for c in plain]
    assert plain[0].score < 0.2 < 0.6 < scaled[0].score
    assert all(s.score <= 0.05 for s in scaled[1:])  # the rest stay unlikely
    assert size_scale(12, 50) == pytest.approx((49 / 11) ** 0.5)
    assert size_scale(50, 50) == size_scale(80, 50) == size_scale(1, 50) == 1.0
    full = {"semantic": [(i, 0.9 - 0.001 * i) for i in range(50)], "lexical": lexical}
    assert [c.score for c in weighted(full, {}, "zscore", calibration, full_depth=50)] == \
        [c.score for c in weighted(full, {}, "zscore", calibration)]  # a full list: unchanged


def test_a_scope_of_one_entry_reads_even_odds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Nothing to compare a lone candidate with: p = 0.5, not the 0.04 of a list's mean row,
    so a threshold of 0.5 keeps it; with a second entry the scores compare again."""
    calibration = (1.3444, -4.4588)
    [lone] = weighted({"semantic": [(7, 0.91)], "lexical": [(7, 3.2)]}, {"semantic": 0.4, "lexical": 0.6},
                      "zscore", calibration, full_depth=100)
    assert lone.score == 0.5
    uncalibrated = weighted({"semantic": [(7, 0.91)]}, {"semantic": 0.4}, "zscore")
    assert uncalibrated[0].score == pytest.approx(0.4)  # only the calibrated p changes
    with Memory(tmp_path / "one.db", embedder="minilm") as mem:
        mem.add([{"text": "meta one", "metadata": {"n": 3}}])
        assert [h.score for h in mem.search("meta one", k=1, threshold=0.5)] == [0.5]
        # The trace says the 0.5 is imposed: its m and calibration would read p ~ 0.02.
        fuse = next(s for s in mem.search("quantum lattice", explain=True).trace["stages"] if s["stage"] == "fuse")
        assert fuse["lone"].startswith("one candidate") and fuse["candidates"][0]["score"] == 0.5
        mem.add("meta two is another entry")
        assert mem.search("meta one", k=1)[0].score > 0.9
        assert [h.score for h in mem.search("meta one", k=1, filters={"metadata.n": 3})] == [0.5]


def test_an_explained_search_shows_what_each_weighted_score_is_made_of(tmp_path) -> None:
    """Under the default (weighted, calibrated) fusion the trace gives each candidate's terms,
    weight x normalised score per fused channel, and the divisor: the score can be rebuilt from
    them by hand, p = 1 / (1 + exp(-(a * m + b))), m = sum(terms) / divisor."""
    import math

    with Memory(tmp_path / "why.db", embedder="minilm") as mem:
        mem.add(["Alice likes oolong tea.", "Bob plays the guitar on weekends.", "The wifi password is hunter2.",
                 "Carol moved to Lisbon in 2021.", "The staging database runs on port 5432."])
        result = mem.search("what tea does Alice like?", k=3, explain=True)
        fuse = next(s for s in result.trace["stages"] if s["stage"] == "fuse")
        a, b = fuse["calibration"]
        assert set(fuse["weights"]) == {"semantic", "lexical"}  # only the channels that were fused
        for cand in fuse["candidates"]:
            terms = {k: v for k, v in cand["contributions"].items() if k != "m"}
            assert set(terms) == {"semantic", "lexical"}
            m = sum(terms.values()) / fuse["divisor"]
            assert m == pytest.approx(cand["contributions"]["m"], abs=1e-3)
            assert 1 / (1 + math.exp(-(a * m + b))) == pytest.approx(cand["score"], abs=2e-3)
        assert fuse["candidates"][0]["id"] == result.hits[0].id and result.hits[0].text.startswith("Alice")
        assert "lone" not in fuse


def test_the_explain_tree_says_how_many_candidates_it_prints(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The tree printed ten candidates under "candidates (top 13)"."""
    from click.testing import CliRunner

    from engramdb.cli import main

    db = tmp_path / "many.db"
    with Memory(db, embedder="minilm") as mem:
        mem.add([f"note {i} about the typhoon season and the harbour" for i in range(15)])
    result = CliRunner().invoke(main, ["--db", str(db), "search", "typhoon", "-k", "15", "--explain"])
    assert result.exit_code == 0, result.output
    assert "candidates (top 10 of 15 recorded)" in result.output and "candidates (top 15)" not in result.output
    fuse = result.output.split("fuse", 1)[1]
    listed = [line for line in fuse.split("candidates (top 10 of 15 recorded)", 1)[1].splitlines()
              if " semantic #" in line and "= " not in line]
    assert len(listed) >= 10
