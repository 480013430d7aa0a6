"""The LLM planner and the reflector against a local OpenAI-compatible test server (no network)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from llm_server import FakeLLMServer

from engramdb.llm import LLMClient, LLMConfig
from engramdb.model import Entry, Hit
from engramdb.plan.base import PlanContext
from engramdb.plan.llm import LLMPlanner
from engramdb.plan.model import EvidenceRoute, QueryPlan
from engramdb.plan.reflect import Judgement, Reflector

NOW = datetime(2023, 8, 20, 12, 0, tzinfo=timezone.utc)
QUESTION = "When did Caroline go to the LGBTQ support group last May?"


class FakeRules:
    """Stands in for the rule planner: a recognisable plan, and a record of the calls."""

    name = "rules"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def plan(self, query: str, context: PlanContext) -> QueryPlan:
        self.calls.append(query)
        return QueryPlan(query=query, planner="rules", keywords=["rule-keyword"])


def _context(now: datetime | None = NOW) -> PlanContext:
    def match_names(text: str) -> list[tuple[str, str]]:
        return [("person", "caroline"), ("entity", "lgbtq support group")] if "Caroline" in text else []
    return PlanContext(now=now, match_names=match_names)


def _client(base_url: str, retries: int = 1) -> LLMClient:
    return LLMClient(LLMConfig(base_url=base_url, model="m", max_retries=retries, json_retries=retries),
                     sleep=lambda _: None)


def _plan_reply(**overrides: Any) -> str:
    reply: dict[str, Any] = {
        "intent": "temporal", "keywords": ["support group", "LGBTQ"], "persons": ["Caroline"],
        "entities": ["LGBTQ support group"], "location": None, "time_start": "2023-05-01",
        "time_end": "2023-06-01", "sub_queries": ["Caroline LGBTQ support group"],
        "routes": [{"goal": "when Caroline attended the group", "queries": ["Caroline support group meeting"],
                    "persons": ["Caroline"], "entities": ["LGBTQ support group"]}],
    }
    reply.update(overrides)
    return json.dumps(reply)


def test_good_reply_becomes_the_plan_and_the_prompt_carries_the_context() -> None:
    rules = FakeRules()
    with FakeLLMServer([_plan_reply()]) as srv:
        client = _client(srv.base_url)
        plan = LLMPlanner(client, rules).plan(QUESTION, _context())
        sent = srv.chat_requests
    assert plan.planner == "llm" and plan.intent == "temporal" and plan.notes == [] and rules.calls == []
    assert plan.persons == ["Caroline"] and plan.entities == ["LGBTQ support group"] and plan.location is None
    assert plan.keywords == ["support group", "LGBTQ"]
    assert plan.time_start == datetime(2023, 5, 1, tzinfo=timezone.utc)
    assert plan.time_end == datetime(2023, 6, 1, tzinfo=timezone.utc)
    assert plan.time_start.tzinfo is not None and plan.has_window
    assert plan.sub_queries == [QUESTION, "Caroline LGBTQ support group"]
    assert plan.routes == [EvidenceRoute(goal="when Caroline attended the group",
                                         queries=["Caroline support group meeting"], persons=["Caroline"],
                                         entities=["LGBTQ support group"])]
    (request,) = sent
    assert request["response_format"] == {"type": "json_object"}
    prompt = "\n".join(m["content"] for m in request["messages"])
    assert QUESTION in prompt and "2023-08-20T12:00:00+00:00" in prompt
    assert "person: caroline" in prompt and "entity: lgbtq support group" in prompt
    assert client.calls[-1]["purpose"] == "plan" and client.usage.calls == 1


def test_unknown_reference_time_and_no_names_are_said_so() -> None:
    with FakeLLMServer([_plan_reply(intent="lookup", time_start=None, time_end=None, sub_queries=[],
                                    routes=None)]) as srv:
        plan = LLMPlanner(_client(srv.base_url), FakeRules()).plan("What is Bob's dog called?", _context(None))
        user = srv.chat_requests[0]["messages"][-1]["content"]
    assert "Reference time: unknown" in user and "Known names in the question: none" in user
    assert plan.planner == "llm" and plan.intent == "lookup" and plan.notes == []
    assert plan.sub_queries == ["What is Bob's dog called?"] and not plan.has_window and plan.routes == []


def test_malformed_output_twice_falls_back_to_rules_with_a_note() -> None:
    rules = FakeRules()
    with FakeLLMServer(["not json", _plan_reply(intent="gossip")]) as srv:
        client = _client(srv.base_url, retries=1)
        plan = LLMPlanner(client, rules).plan(QUESTION, _context())
        correction = srv.chat_requests[1]["messages"][-1]["content"]
    assert plan.planner == "rules" and plan.keywords == ["rule-keyword"] and rules.calls == [QUESTION]
    (note,) = plan.notes
    assert note.startswith("llm planner failed (") and note.endswith("); used rules")
    assert "gossip" in note and "\n" not in note
    assert "no JSON" in correction  # the first failure was fed back to the model
    assert client.usage.calls == 2 and client.usage.failures == 2


def test_inverted_window_is_rejected_then_corrected() -> None:
    with FakeLLMServer([_plan_reply(time_start="2023-06-01", time_end="2023-05-01"), _plan_reply()]) as srv:
        plan = LLMPlanner(_client(srv.base_url), FakeRules()).plan(QUESTION, _context())
        correction = srv.chat_requests[1]["messages"][-1]["content"]
    assert "must be after time_start" in correction
    assert plan.planner == "llm" and plan.time_end == datetime(2023, 6, 1, tzinfo=timezone.utc)


def test_unreachable_endpoint_falls_back_without_raising() -> None:
    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, timeout=2),
                       sleep=lambda _: None)
    plan = LLMPlanner(client, FakeRules()).plan(QUESTION, _context())
    assert plan.planner == "rules" and plan.keywords == ["rule-keyword"]
    (note,) = plan.notes
    assert "unreachable" in note and note.endswith("used rules")
    assert client.usage.failures == 1


def test_more_than_three_sub_queries_are_truncated() -> None:
    many = ["Caroline support group", QUESTION, "Caroline May 2023", "LGBTQ group meeting", "Caroline pride"]
    with FakeLLMServer([_plan_reply(sub_queries=many)]) as srv:
        plan = LLMPlanner(_client(srv.base_url), FakeRules()).plan(QUESTION, _context())
    # The echoed question does not use up a slot.
    assert plan.sub_queries == [QUESTION, "Caroline support group", "Caroline May 2023", "LGBTQ group meeting"]
    assert plan.planner == "llm" and plan.notes == ["llm gave 4 sub-queries; kept 3"]


def _hit(text: str, when: str, n: int) -> Hit:
    entry = Entry(text=text, kind="fact", namespace="ns", id=f"h{n}", timestamp=when).normalized("ns")
    return Hit(id=entry.id or "x", text=entry.text, score=1.0 / n, entry=entry, channels={})


HITS = [_hit("Caroline went to an LGBTQ support group on 7 May 2023.", "2023-05-07", 1),
        _hit("Melanie painted a sunrise. " + "It was lovely. " * 40, "2023-05-08T13:56:00", 2)]
PLAN = QueryPlan(query=QUESTION, intent="temporal", persons=["Caroline"], planner="llm",
                 sub_queries=["Caroline LGBTQ support group"], time_start=datetime(2023, 5, 1, tzinfo=timezone.utc),
                 time_end=datetime(2023, 6, 1, tzinfo=timezone.utc))


def test_reflection_complete() -> None:
    with FakeLLMServer([json.dumps({"complete": True, "missing": "", "queries": ["ignored"]})]) as srv:
        client = _client(srv.base_url)
        judgement = Reflector(client).judge(QUESTION, PLAN, HITS)
        request = srv.chat_requests[0]
    assert judgement == Judgement(complete=True, gap_queries=[], reason="the evidence answers the question", ok=True)
    assert judgement.to_dict() == {"complete": True, "gap_queries": [], "reason": judgement.reason, "ok": True}
    user = request["messages"][-1]["content"]
    assert "[1] (2023-05-07T00:00:00+00:00) Caroline went to an LGBTQ support group on 7 May 2023." in user
    assert "[2] (2023-05-08T13:56:00+00:00) Melanie painted a sunrise." in user
    assert "It was lovely. " * 40 not in user and "..." in user  # long hit text is cut
    assert QUESTION in user and "temporal" in user and "Caroline" in user and "2023-05-01 to 2023-06-01" in user
    assert request["response_format"] == {"type": "json_object"} and client.calls[-1]["purpose"] == "reflect"


def test_reflection_gap_queries_are_distinct_new_and_capped() -> None:
    reply = {"complete": False, "missing": "the exact date of the meeting",
             "queries": [QUESTION, "Caroline support group date", " caroline support group DATE ", "",
                         "Caroline LGBTQ support group", "LGBTQ meeting May", "Caroline calendar", "extra one"]}
    with FakeLLMServer([json.dumps(reply)]) as srv:
        judgement = Reflector(_client(srv.base_url), max_gap_queries=3).judge(QUESTION, PLAN, HITS)
    assert judgement.ok and not judgement.complete and judgement.reason == "the exact date of the meeting"
    # Not the question, not a plan sub-query already searched, no case/space duplicates, at most 3.
    assert judgement.gap_queries == ["Caroline support group date", "LGBTQ meeting May", "Caroline calendar"]


def test_reflection_with_no_hits_still_asks() -> None:
    with FakeLLMServer([json.dumps({"complete": False, "missing": "everything", "queries": None})]) as srv:
        judgement = Reflector(_client(srv.base_url)).judge(QUESTION, PLAN, [])
        user = srv.chat_requests[0]["messages"][-1]["content"]
    assert "(no evidence found)" in user
    assert judgement == Judgement(complete=False, gap_queries=[], reason="everything", ok=True)


def test_reflection_server_error_stops_the_loop() -> None:
    with FakeLLMServer([{"status": 500, "body": {"error": {"message": "model crashed"}}}] * 2) as srv:
        client = _client(srv.base_url, retries=1)
        judgement = Reflector(client).judge(QUESTION, PLAN, HITS)
    assert judgement.ok is False and judgement.complete is None and judgement.gap_queries == []  # no verdict
    assert judgement.to_dict()["complete"] is None
    assert "model crashed" in judgement.reason and "HTTP 500" in judgement.reason
    assert client.usage.failures == 1


def test_the_model_says_whether_the_question_asks_about_now() -> None:
    question = "Where does Caroline work now?"
    replies = [_plan_reply(intent="lookup", time_start=None, time_end=None, present=True),
               _plan_reply(intent="lookup", time_start=None, time_end=None, present=None),  # left out: no
               _plan_reply(intent="temporal", present=True),  # with a window the window decides
               _plan_reply(intent="lookup", time_start=None, time_end=None, former=True)]
    with FakeLLMServer(replies) as srv:
        planner = LLMPlanner(_client(srv.base_url), FakeRules())
        plans = [planner.plan(question, _context()) for _ in replies]
        prompt = srv.chat_requests[0]["messages"][0]["content"]
    assert [p.present for p in plans] == [True, False, False, False] and all(p.planner == "llm" for p in plans)
    assert [p.former for p in plans] == [False, False, False, True]
    assert '"present": bool' in prompt and '"former": bool' in prompt and plans[0].to_dict()["present"] is True
