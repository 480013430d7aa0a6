"""Conversation evidence windows: the turns next to a strong turn are lifted, within their
session and the search's scope; nothing else is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.errors import InputError
from engramdb.pipeline.presets import load_preset
from engramdb.store.base import Filters

SESSION = [
    ("Alice", "Guess where I went on Saturday morning?"),
    ("Bob", "No idea, tell me."),
    ("Alice", "The farmers market by the river, I bought a crate of quinces there."),
    ("Bob", "What will you make with them?"),
    ("Alice", "Jam, my grandmother's recipe."),
]


def build(mem: Memory, extractor: str = "offline") -> None:
    mem.add_conversation([{"speaker": s, "text": t} for s, t in SESSION], session_id="market",
                         session_time="2024-05-04T10:00:00", extractor=extractor)
    mem.add_conversation([{"speaker": "Alice", "text": "Unrelated chat about the weather."}], session_id="other",
                         session_time="2024-05-05T10:00:00")
    mem.add(["Carol went to the farmers market too."], namespace="carol")


def test_the_store_returns_the_turns_around_a_turn_in_its_session(tmp_path: Path) -> None:
    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        build(mem)
        store = mem.store
        rows = {e.text: r for r, e in store.fetch(range(1, 200)).items() if e.kind == "turn"}
        by_text = {text.split(": ", 1)[1]: rowid for text, rowid in rows.items()}
        middle = by_text[SESSION[2][1]]
        around = store.turn_neighbours([middle], 1, "default", Filters())
        assert [(o, store.fetch([r])[r].text.split(": ", 1)[1]) for o, r in around[middle]] == \
            [(-1, SESSION[1][1]), (1, SESSION[3][1])]  # facts written between the turns are skipped
        wide = store.turn_neighbours([middle], 5, "default", Filters())[middle]
        assert len(wide) == 4  # the whole session, never the other one
        first = by_text[SESSION[0][1]]
        assert len(store.turn_neighbours([first], 1, "default", Filters())[first]) == 1
        assert store.turn_neighbours([middle], 1, "carol", Filters()) == {middle: []}  # scope is a hard boundary
        mem.delete(store.fetch([by_text[SESSION[1][1]]])[by_text[SESSION[1][1]]].id)
        after = store.turn_neighbours([middle], 1, "default", Filters())[middle]
        assert [(o, store.fetch([r])[r].text.split(": ", 1)[1]) for o, r in after] == \
            [(-1, SESSION[0][1]), (1, SESSION[3][1])]


def test_a_neighbour_no_channel_found_joins_with_its_evidence(tmp_path: Path) -> None:
    shallow = {"channels": {"semantic": {"k": 1}, "lexical": {"k": 1}, "symbolic": {"k": 1}}}
    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        build(mem, extractor="none")  # turns only
        question = "What did Alice buy at the farmers market?"
        plain = mem.search(question, k=1, preset={"extends": "default", **shallow, "neighbours": {"lift": 0.0}})
        lifted = mem.search(question, k=3, preset={"extends": "default", **shallow, "neighbours": {
            "lift": 0.4, "span": 1, "combine": "max"}}, explain=True)
    [top] = plain.hits
    assert top.text.endswith(SESSION[2][1])
    stage = next(s for s in lifted.trace["stages"] if s["stage"] == "neighbours")
    assert stage["added"] >= 1 and stage["lift"] == 0.4 and stage["span"] == 1
    assert lifted.hits[0].id == top.id
    neighbours = {h.text.split(": ", 1)[1]: h for h in lifted.hits if "neighbour" in h.channels}
    assert {SESSION[1][1], SESSION[3][1]} <= set(neighbours), [(h.text, h.channels) for h in lifted.hits]
    for hit in neighbours.values():
        assert hit.score == pytest.approx(0.4 * lifted.hits[0].score, abs=1e-6)
        assert hit.channels["neighbour"].rank == 1 and hit.entry is not None and hit.entry.kind == "turn"
    assert all(h.entry is not None and h.entry.namespace == "default" for h in lifted.hits)


def test_bad_neighbours_sections_are_clear_errors() -> None:
    with pytest.raises(InputError, match="neighbours.lift must be a number from 0 to 1"):
        load_preset({"extends": "default", "neighbours": {"lift": 1.5}})
    with pytest.raises(InputError, match="neighbours.*takes only"):
        load_preset({"extends": "default", "neighbours": {"width": 2}})
    with pytest.raises(InputError, match="neighbours"):
        load_preset({"extends": "molore", "neighbours": {"lift": 0.5}})  # not in its pipeline.stages
    with pytest.raises(InputError, match="neighbours.combine must be one of max, or"):
        load_preset({"extends": "default", "neighbours": {"combine": "sum"}})
    with pytest.raises(InputError, match="needs scores that are probabilities"):
        load_preset({"extends": "default", "fusion": {"calibration": None}, "neighbours": {"combine": "or"}})
    assert load_preset("default").neighbours.combine == "or"
    assert load_preset({"extends": "default", "fusion": {"calibration": None},
                        "neighbours": {"combine": "max"}}).neighbours.combine == "max"


def test_or_combines_a_neighbours_evidence_with_its_own(tmp_path: Path) -> None:
    """combine = "or": a lifted turn scores 1 - (1 - own)(1 - lift x neighbour), so of two turns
    next to the best one, the one that matches the query better itself stays ahead — where a
    floor ("max") gives both the same score."""
    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        build(mem, extractor="none")
        question = "What did Alice buy at the farmers market, and what will she make with them?"
        own = {h.id: h.score for h in mem.search(question, k=20, preset={  # every entry: all own scores
            "extends": "default", "neighbours": {"lift": 0.0}}).hits}
        window = {"span": 1, "top": 1}
        ored = mem.search(question, k=5, preset={"extends": "default", "neighbours": {
            "lift": 0.6, "combine": "or", **window}}, explain=True)
        floored = mem.search(question, k=5, preset={"extends": "default", "neighbours": {
            "lift": 0.6, "combine": "max", **window}})
    best = ored.hits[0]
    assert best.text.endswith(SESSION[2][1]) and best.score == pytest.approx(own[best.id])
    lifted = [h for h in ored.hits if "neighbour" in h.channels]
    assert {h.text.split(": ", 1)[1] for h in lifted} == {SESSION[1][1], SESSION[3][1]}
    for hit in lifted:
        evidence = 0.6 * best.score
        assert hit.channels["neighbour"].score == pytest.approx(evidence, abs=1e-6)
        assert hit.score == pytest.approx(1 - (1 - own.get(hit.id, 0.0)) * (1 - evidence), abs=1e-6)
    ahead, behind = sorted(lifted, key=lambda h: -h.score)
    assert own.get(ahead.id, 0.0) > own.get(behind.id, 0.0)  # its own evidence decides
    stage = next(s for s in ored.trace["stages"] if s["stage"] == "neighbours")
    assert stage["combine"] == "or" and stage["lifted"] == 2
    tied = [h.score for h in floored.hits if "neighbour" in h.channels]
    assert len(tied) == 2 and tied[0] == pytest.approx(tied[1])  # a floor cannot tell them apart


def test_hits_carry_their_neighbouring_turns_as_context(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engramdb.cli import main
    from engramdb.schema import to_wire

    db = tmp_path / "c.db"
    with Memory(db, embedder="minilm") as mem:
        build(mem, extractor="none")
        mem.add(["A note about quinces, not a turn."])
        result = mem.search("quinces crate", k=3, context=2, preset={"extends": "default", "neighbours": {"lift": 0.0}})
        turn = next(h for h in result.hits if h.entry.kind == "turn")
        note = next(h for h in result.hits if h.entry.kind != "turn")
        assert turn.text.endswith(SESSION[2][1])
        assert [(o, e.text.split(": ", 1)[1]) for o, e in turn.context or []] == \
            [(-2, SESSION[0][1]), (-1, SESSION[1][1]), (1, SESSION[3][1]), (2, SESSION[4][1])]
        assert note.context == []
        assert mem.search("quinces crate", k=1).hits[0].context is None  # not asked: no field
        wire = result.to_dict()["hits"][0]
        assert to_wire("hit", wire)["context"] == wire["context"]  # the wire model keeps it, checked
        with pytest.raises(InputError, match="context must be an integer from 0 to 10"):
            mem.search("quinces", context=11)
    shown = CliRunner().invoke(main, ["--db", str(db), "search", "quinces crate", "-k", "1", "--context", "1"])
    assert shown.exit_code == 0 and "-1 Bob: No idea, tell me." in shown.output and "+1 Bob: What will you make" in shown.output


def test_a_lifted_turn_lifts_its_own_neighbours(tmp_path: Path) -> None:
    """Chaining: with span 1, the best turn lifts the turn after it to lift x its score, and
    that turn, if it is among the top, lifts the next one to lift² x (two turns away)."""
    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        build(mem, extractor="none")
        question = "What did Alice buy at the farmers market?"
        res = mem.search(question, k=5, preset={"extends": "default", "neighbours": {
            "lift": 0.5, "span": 1, "top": 10, "combine": "max"}})
    best = res.hits[0]
    lifted = sorted((h for h in res.hits if "neighbour" in h.channels), key=lambda h: -h.score)
    once = [h for h in lifted if h.score == pytest.approx(0.5 * best.score, abs=1e-6)]
    twice = [h for h in lifted if h.score == pytest.approx(0.25 * best.score, abs=1e-6)]
    assert once and twice, [(h.text, h.score) for h in res.hits]
    assert all(h.channels["neighbour"].rank > 1 for h in twice)  # lifted by a lifted turn, not the best


def test_a_turn_lifted_by_several_shows_its_strongest_lifter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from engramdb import Memory

    with Memory(tmp_path / "n.db", embedder="minilm") as mem:
        mem.add_conversation([("Ann", "I went to the support group yesterday."), ("Bob", "How was the meeting?"),
                              ("Ann", "The support group was great, I met Jo there."), ("Bob", "Nice weather today."),
                              ("Ann", "I baked bread.")], session_id="s1", session_time="2023-05-08T10:00:00",
                             extractor="none")
        hits = {h.entry.text: h for h in mem.search("support group", k=5, explain=True)}
    # (a turn of small talk alone, "How was it?", would score a quarter in the group stage)
    between = hits["Bob: How was the meeting?"]  # next to both support-group turns
    first = hits["Ann: I went to the support group yesterday."]
    assert between.channels["neighbour"].rank == 1  # the best turn lifted it most, not the later one
    assert between.channels["neighbour"].score == pytest.approx(0.2 * first.score, abs=2e-3)  # lift x its score
    assert between.score >= between.channels["neighbour"].score  # "or": at least the strongest evidence


def test_a_turn_keeps_its_place_in_the_session_when_it_changes(mem: Memory) -> None:
    """An update, a supersede or an edited re-import rewrites a turn's row; its neighbours,
    its hit's context and the session's latest turn still follow the conversation's order."""
    turns = [{"speaker": s, "text": t} for s, t in SESSION]
    mem.add_conversation(turns, session_id="market", session_time="2024-05-04T10:00:00", extractor="none")

    def order() -> list[str]:
        ids = mem.store.ids("default", Filters(session_id="market", kinds=["turn"]))
        return [e.text.split(": ", 1)[1] for e in mem.get(ids)]

    middle = next(e for e in mem.get(mem.store.ids("default", Filters(session_id="market")))
                  if e.text.endswith(SESSION[2][1]))
    mem.update(middle.id, text="Alice: The farmers market by the river, I bought a crate of medlars there.")
    expected = [t for _, t in SESSION]
    expected[2] = expected[2].replace("quinces", "medlars")
    assert order() == expected
    hit = mem.search("crate of medlars", k=1, context=1).hits[0]
    assert [(o, e.text.split(": ", 1)[1]) for o, e in hit.context or []] == [(-1, SESSION[1][1]), (1, SESSION[3][1])]

    turns[3]["text"] = "What will you cook with them?"  # the file was edited: a new id, the same turn
    mem.add_conversation(turns, session_id="market", session_time="2024-05-04T10:00:00", extractor="none")
    expected[2], expected[3] = SESSION[2][1], "What will you cook with them?"
    assert order() == expected
    hit = mem.search("what will you cook", k=1, context=1).hits[0]
    assert [(o, e.text.split(": ", 1)[1]) for o, e in hit.context or []] == [(-1, SESSION[2][1]), (1, SESSION[4][1])]

    first = mem.get(mem.store.ids("default", Filters(session_id="market", kinds=["turn"])))[0]
    mem.update(first.id, metadata={"checked": True})
    # The latest turn is still the last one: sending it again is a retry, not a new turn.
    assert mem.add_turn("Alice", SESSION[4][1], session_id="market").turns == 0
    assert order() == expected
