"""Query plans from the rule planner, and the trace of a planned search."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.plan import NoPlanner, PlanContext, RulePlanner

NOW = datetime(2023, 5, 22, 12, 0, tzinfo=timezone.utc)  # a Monday
FIXTURES = Path(__file__).parent / "fixtures" / "conversations"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    with Memory(tmp_path_factory.mktemp("plan") / "plan.db", embedder="minilm") as mem:
        mem.add([
            {"text": "Caroline went to an LGBTQ support group.", "persons": ["Caroline"], "entities": ["LGBTQ"],
             "timestamp": "2023-05-07"},
            {"text": "Melanie painted a sunrise.", "persons": ["Melanie"], "timestamp": "2023-05-16"},
            {"text": "小王在杭州参加了产品 XYZ 的发布会。", "persons": ["小王"], "entities": ["产品 XYZ"],
             "location": "杭州", "timestamp": "2023-05-17"},
        ])
        yield mem


# question -> (intent, persons, entities, location, window start, window end, extra sub-query)
PLANS = [
    ("When did Caroline go to the LGBTQ support group?", "temporal", ["caroline"], ["lgbtq"], None, None, None,
     None),
    ("What did Melanie paint last week?", "temporal", ["melanie"], [], None, "2023-05-15", "2023-05-22", None),
    ("How many times has Melanie gone to the beach in 2023?", "enumeration", ["melanie"], [], None, "2023-01-01",
     "2024-01-01", "melanie gone beach"),
    ("List all the books Caroline read before 2022", "enumeration", ["caroline"], [], None, "0001-01-01",
     "2022-01-01", "list books caroline read"),
    ("Did Caroline or Melanie paint more in May 2023?", "comparison", ["caroline", "melanie"], [], None,
     "2023-05-01", "2023-06-01", "caroline paint"),
    ("What is Melanie's favorite book?", "preference", ["melanie"], [], None, None, None, None),
    ("Would Caroline pursue writing as a career?", "multi-hop", ["caroline"], [], None, None, None, None),
    ("Where is the support group?", "lookup", [], [], None, None, None, None),
    ("上周小王在杭州跟谁聊了产品 XYZ？", "temporal", ["小王"], ["产品 xyz"], "杭州", "2023-05-15", "2023-05-22", None),
    ("小王去年夏天去了哪些地方？", "enumeration", ["小王"], [], None, "2022-06-01", "2022-09-01", "小王 地方"),
    ("小王什么时候去的杭州？", "temporal", ["小王"], [], "杭州", None, None, None),
    # "when" inside a sentence is a conjunction, not a question about a time (an outside check:
    # the dated channel then ranked an assistant's "I'll keep that in mind" first)
    ("What should I keep in mind when suggesting recipes for Caroline?", "lookup", ["caroline"], [], None, None,
     None, None),
    ("How did Melanie feel when she painted the sunrise?", "lookup", ["melanie"], [], None, None, None, None),
    ("Can you tell me when is Melanie's show?", "temporal", ["melanie"], [], None, None, None, None),
    ("When Caroline has lost her job?", "temporal", ["caroline"], [], None, None, None, None),
    ("2023年5月小王和Melanie谁更忙？", "comparison", ["小王", "melanie"], [], None, "2023-05-01", "2023-06-01", None),
]


@pytest.mark.parametrize(("question", "intent", "persons", "entities", "location", "start", "end", "core"), PLANS)
def test_rule_plans(store: Memory, question: str, intent: str, persons: list[str], entities: list[str],
                    location: str | None, start: str | None, end: str | None, core: str | None) -> None:
    context = PlanContext(NOW, lambda text: store.store.match_names("default", text))
    plan = RulePlanner().plan(question, context)
    assert plan.intent == intent
    assert sorted(plan.persons) == sorted(persons) and plan.entities == entities and plan.location == location
    assert (plan.time_start.date().isoformat() if plan.time_start else None) == start
    assert (plan.time_end.date().isoformat() if plan.time_end else None) == end
    assert plan.sub_queries[0] == question and len(plan.sub_queries) <= 4
    if core:  # the bare-keyword query for spread evidence, or the first compared name's route
        assert plan.sub_queries[1] == core
    elif intent != "comparison":
        assert plan.sub_queries == [question]
    if intent == "comparison":
        assert len(plan.routes) == 2 and {r.persons[0] for r in plan.routes} == set(persons)


def test_planned_search_follows_the_plan_and_explains_itself(store: Memory) -> None:
    res = store.search("What did Melanie paint last week?", k=2, planner="rules", now=NOW, explain=True)
    assert res.hits[0].text == "Melanie painted a sunrise."
    assert _active(res) == ["plan", "recall", "fuse", "group", "select"]
    skipped = {s["stage"]: s["skipped"] for s in res.trace["stages"] if "skipped" in s}
    assert skipped["gate"] == "no gates set" and "no cross-encoder" in skipped["rerank"]
    by_name = {s["stage"]: s for s in res.trace["stages"]}
    plan = by_name["plan"]
    assert plan["planner"] == "rules" and plan["plan"]["intent"] == "temporal"
    assert plan["plan"]["sub_queries"] == ["What did Melanie paint last week?"]
    recall = by_name["recall"]["channels"]
    assert recall["semantic"]["n"] == 3 and recall["temporal"]["n"] == 2 and recall["symbolic"]["n"] == 1
    top = by_name["fuse"]["candidates"][0]
    assert top["id"] == res.hits[0].id and set(top["channels"]) >= {"semantic", "lexical", "symbolic", "temporal"}
    assert by_name["select"]["candidates"][0]["id"] == res.hits[0].id
    listing = store.search("How many paintings did Melanie paint?", k=2, planner="rules", now=NOW)
    assert listing.trace["stages"][1]["channels"]["semantic"]["queries"] == 2
    unplanned = store.search("How many paintings did Melanie paint?", k=2, planner="none", now=NOW)
    assert unplanned.trace["stages"][1]["channels"]["semantic"]["queries"] == 1
    assert "candidates" not in unplanned.trace["stages"][2]  # only with explain


def test_nothing_passing_the_gates_retries_once_relaxed(store: Memory, tmp_path: Path) -> None:
    strict = tmp_path / "strict.toml"
    strict.write_text('[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[fusion]\nmethod = "weighted"\n'
                      '[plan]\nplanner = "rules"\n[gate]\nmin_score = 100.0\n')
    res = store.search("Melanie painting", k=3, preset=str(strict))
    assert _active(res) == ["plan", "recall", "fuse", "gate", "recall (retry)", "fuse (retry)", "select"]
    by_name = {s["stage"]: s for s in res.trace["stages"]}
    gate = by_name["gate"]
    assert gate["n_out"] == 0 and gate["retry"]["gates"] == "off" and gate["retry"]["n_out"] > 0
    assert by_name["recall (retry)"]["channels"]["semantic"]["queries"] == 1  # no sub-query expansion on retry
    assert res.hits and res.hits[0].text == "Melanie painted a sunrise."
    loose = tmp_path / "loose.toml"
    loose.write_text(strict.read_text().replace("min_score = 100.0", "min_score = -100.0"))
    assert _active(store.search("Melanie painting", preset=str(loose))) == ["plan", "recall", "fuse", "gate", "select"]
    # Molore-style: the retry lowers the floors instead of dropping them.
    relaxed = tmp_path / "relaxed.toml"
    relaxed.write_text(strict.read_text().replace("min_score = 100.0", "min_score = 100.0\nretry_min_relative = 0.99"))
    res = store.search("Melanie painting", k=3, preset=str(relaxed))
    assert _stage(res, "gate")["retry"]["gates"] == "relaxed"
    # min_score is kept in the retry, so nothing passes again and the search is honest about it.
    assert res.hits == [] and _stage(res, "gate")["retry"]["n_out"] == 0


def test_llm_planner_without_an_endpoint_falls_back_to_rules(store: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGRAM_LLM_BASE_URL", "OPENAI_BASE_URL", "ENGRAM_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    res = store.search("When did Caroline go to the support group?", planner="llm", now=NOW)
    plan = res.trace["stages"][0]["plan"]
    assert plan["planner"] == "rules" and "no LLM configured" in plan["notes"][0]


def _llm_memory(store: Memory, srv):  # type: ignore[no-untyped-def]
    from engramdb.llm import LLMClient, LLMConfig

    store.llm = LLMClient(LLMConfig(base_url=srv.base_url, model="m", max_retries=0), sleep=lambda _: None)
    return store


def test_llm_plan_and_reflection_rounds_through_search(store: Memory, tmp_path: Path) -> None:
    import json

    from llm_server import FakeLLMServer

    preset = tmp_path / "reflect.toml"
    preset.write_text('[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[fusion]\nmethod = "weighted"\n'
                      '[plan]\nplanner = "llm"\nreflect_rounds = 2\n')
    plan = {"intent": "lookup", "keywords": ["caroline", "group"], "persons": ["Caroline"], "entities": [],
            "location": None, "time_start": None, "time_end": None, "sub_queries": ["Caroline support group"],
            "routes": []}
    gap = {"complete": False, "missing": "what Melanie painted", "queries": ["Melanie painting"]}
    done = {"complete": True, "missing": "", "queries": []}
    try:
        with FakeLLMServer([json.dumps(plan), json.dumps(gap), json.dumps(done)]) as srv:
            _llm_memory(store, srv)
            res = store.search("Who went to the support group, and what did her friend paint?", k=2,
                               preset=str(preset))
            asked = [r["messages"][-1]["content"] for r in srv.chat_requests]
    finally:
        store.llm = None
    assert _active(res) == ["plan", "recall", "fuse", "reflect", "recall (gap 1)", "fuse (gap 1)", "select"]
    assert res.trace["stages"][0]["plan"]["planner"] == "llm"
    assert res.trace["stages"][0]["plan"]["sub_queries"][1] == "Caroline support group"
    rounds = next(s for s in res.trace["stages"] if s["stage"] == "reflect")["rounds"]
    assert rounds[0]["gap_queries"] == ["Melanie painting"] and rounds[1]["complete"] and len(rounds) == 2
    assert [c["purpose"] for c in res.trace["llm_calls"]] == ["plan", "reflect", "reflect"]
    assert "Melanie painted a sunrise." in asked[2]  # the second judgement saw the gap's evidence
    assert {h.text for h in res.hits} == {"Caroline went to an LGBTQ support group.", "Melanie painted a sunrise."}
    # reflect=False skips the rounds (and their LLM calls) for one query.
    with FakeLLMServer([json.dumps(plan)]) as srv:
        _llm_memory(store, srv)
        quiet = store.search("support group", preset=str(preset), reflect=False)
        store.llm = None
    assert "reflect" not in _active(quiet) and "llm_calls" in quiet.trace
    assert next(s for s in quiet.trace["stages"] if s["stage"] == "reflect")["skipped"] == "reflection off for this query"
    assert [c["purpose"] for c in quiet.trace["llm_calls"]] == ["plan"]


def test_when_questions_recall_entries_that_state_their_time(mem: Memory) -> None:
    mem.import_path(FIXTURES / "turns.jsonl")
    res = mem.search("When did Caroline adopt the puppy?", k=3, planner="rules", explain=True)
    channels = res.trace["stages"][1]["channels"]
    assert res.trace["stages"][0]["plan"]["intent"] == "temporal" and "temporal" not in channels
    dated = [c for c in res.trace["stages"][2]["candidates"] if "dated" in c["channels"]]
    assert channels["dated"]["n"] == len(dated) >= 1
    dated_hits = [h for h in res.hits if "dated" in h.channels]
    assert dated_hits and all(h.entry.timestamp_end for h in dated_hits)  # only entries with an event period
    assert dated_hits[0].text == "On 3 June 2023 Caroline adopted a puppy named Oscar."
    assert "dated" not in mem.search("When did Caroline adopt the puppy?", planner="none").trace["stages"][1]["channels"]


def _active(res) -> list[str]:  # type: ignore[no-untyped-def]
    """The stages that did something (a preset's unconfigured stages record why they skipped)."""
    return [s["stage"] for s in res.trace["stages"] if "skipped" not in s]


def _stage(res, name: str) -> dict:  # type: ignore[no-untyped-def]
    """The trace record of the stage `name` (positions move when a preset adds stages)."""
    return next(s for s in res.trace["stages"] if s["stage"] == name)


@pytest.mark.parametrize(("question", "keywords"), [
    ("她养了几只猫和狗？", ["养", "猫", "狗"]),  # one character is the whole word
    ("她上个月读了哪些书", ["读", "书"]),
    ("黄山山顶晚上冷吗？要带什么？", ["黄山", "山顶", "晚上", "冷"]),  # 要 / 带 only frame the question
    ("我们去了哪些地方？", ["地方"]),
])
def test_chinese_keywords_keep_one_character_content_words(question: str, keywords: list[str]) -> None:
    plan = RulePlanner().plan(question, PlanContext(now=NOW, match_names=lambda text: []))
    assert plan.keywords == keywords


def test_role_labels_are_not_persons_even_when_the_store_tags_the_assistants_turns(tmp_path: Path) -> None:
    """An assistant's turns carry "Assistant" as their speaker (a person tag); a chat context's
    "Assistant:" label is markup, so it must not make every assistant turn a name match."""
    with Memory(tmp_path / "roles.db", embedder="minilm") as mem:
        mem.add_conversation([("Alice", "We adopted a kitten, a grey British shorthair."),
                              ("Assistant", "Congratulations!")], session_id="s1", session_time="2025-04-05T15:00:00")
        context = PlanContext(NOW, lambda text: mem.store.match_names("default", text))
        assert ("person", "assistant") in context.match_names("Assistant: hello")  # the store does know it
        chat = "User: I'm tired. Assistant: Sorry to hear that. User: What breed is the kitten, Alice?"
        messages = json.dumps([{"role": "user", "content": "I'm tired."},
                               {"role": "assistant", "content": "Sorry to hear that."},
                               {"role": "user", "content": "What breed is the kitten?"}])
        for query, persons in [(chat, ["alice"]), (messages, [])]:
            assert RulePlanner().plan(query, context).persons == persons
            assert NoPlanner().plan(query, context).persons == persons
