"""Query understanding: a question read into a `QueryPlan` the recall channels follow.

`RulePlanner` (offline, the default of planned presets), `NoPlanner` (the question as typed),
and, with an LLM configured, `engramdb.plan.llm.LLMPlanner` (falls back to the rules) and
`engramdb.plan.reflect.Reflector` (asks for more recall when the evidence is incomplete).
"""

from .base import PlanContext, Planner
from .model import INTENTS, MAX_SUB_QUERIES, EvidenceRoute, QueryPlan
from .rules import NoPlanner, RulePlanner, intent_of

__all__ = ["PlanContext", "Planner", "QueryPlan", "EvidenceRoute", "INTENTS", "MAX_SUB_QUERIES", "RulePlanner",
           "NoPlanner", "intent_of"]
