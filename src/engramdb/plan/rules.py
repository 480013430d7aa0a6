"""The rule planner: the offline default. No model, well under 2 ms a question.

* keywords: the question's words minus English and Chinese stopwords and question words;
* persons, entities, location: names the namespace already holds (the store's gazetteer);
* time window: every time expression resolved against the reference time ("last week",
  "in May 2023", "before 2022", "上周", "2023年5月", "去年夏天"), their hull; in a dialogue
  context (several "<Speaker>: …" utterances), only those of the last utterance's question
  (all of the last utterance when it asks nothing);
* intent: from cue words ("when", "how many", "list all", "哪些", "多少", ...);
* present: the question asks for the present state ("now", "currently", "still", "现在",
  "目前") and names no time window, no former state ("before", "used to", "以前") and is
  not a dialogue context (where "now" and "still" are small talk);
* former: the question asks for a state before it changed ("used to", "my old …", "before",
  以前, 原来), with no time window and not in a dialogue context;
* sub-queries: the question, plus the question without its question words and time
  expression, plus one per person or entity when the question compares several.
"""

from __future__ import annotations

import re

from ..text.dialogue import asked_part, is_dialogue, without_roles
from ..text.timeparse import TimeWindow, find_time_windows
from ..text.tokenize import STOPWORDS_EN, STOPWORDS_ZH, normalize
from .base import PlanContext, Planner
from .model import MAX_SUB_QUERIES, EvidenceRoute, QueryPlan

# Checked in order: the first intent whose cues match wins.
_INTENT_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("comparison", re.compile(r"\b(?:compare|compared|comparison|difference|differ|versus|vs\.?|both|either|"
                              r"more than|less than|better than|worse than|which (?:one|of the two))\b"
                              r"|比较|区别|不同|相比|哪个更|还是")),
    ("enumeration", re.compile(r"\b(?:how many|how much|how often|list|all the|every|what (?:activities|kinds?|"
                               r"types?|things|events|books|places|hobbies|items)|which (?:\w+ )?(?:have|has|did)|"
                               r"name (?:all|some)|count)\b|哪些|多少|几个|几次|所有|列出|有几")),
    # "when" asks for a time where a question or clause starts with it ("When did…", "…? When
    # Evan get back…") or an auxiliary follows it ("tell me when did…"); inside a sentence it is
    # a conjunction ("What should I keep in mind when suggesting recipes?", "How did Joanna feel
    # when someone wrote her?": 37 of LoCoMo's questions, none asking for a time).
    ("temporal", re.compile(r"(?:^|[.?!;:\n]\s*)when\b|\bwhen\s+(?:did|do|does|is|was|were|will|are|am|have|has|had|"
                            r"would|should|can|could|shall|might|may|must)\b|"
                            r"\b(?:what (?:time|date|day|year|month)|which (?:day|year|month|date)|how long|"
                            r"since when|until when|how long ago)\b|什么时候|何时|哪天|哪一天|几号|哪年|哪一年|多久|多长时间")),
    ("preference", re.compile(r"\b(?:favou?rite|prefers?|preferred|likes?|loves?|enjoys?|fan of|hates?|"
                              r"dislikes?)\b|喜欢|偏好|最爱|爱好|讨厌")),
    ("multi-hop", re.compile(r"\b(?:why|would|might|likely|could|because|reason|lead to|result in|what if)\b"
                             r"|为什么|为何|会不会|可能|原因")),
]
_QUESTION_WORDS = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how", "did", "does", "do",
                   "is", "are", "was", "were", "has", "have", "had", "can", "could", "would", "should", "will",
                   "many", "much", "often", "long", "times"}
_ZH_QUESTION_RE = re.compile(r"哪|什么|谁|多少|几|怎么|为什么|是否|吗")
_CHOICE_RE = re.compile(r"\b(?:or|more|less|than)\b|还是|更")
_MAX_BLANKED = 16  # distinct time expressions blanked wherever they occur (see _without_times)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’\-]*|\d+(?:[.:/-]\d+)*|[\u3400-\u9fff]+")


def _without_times(query: str, windows: list[TimeWindow]) -> str:
    """The query with its time expressions blanked, for its keywords.

    Each expression is blanked wherever it occurs in the query. Only a query written to be slow
    holds more than `_MAX_BLANKED` distinct expressions ("1 day ago 2 days ago …" thousands of
    times); the ones past that are cut out once each, where they were read, in one pass over
    the query, rather than searched for in the whole query one by one (quadratic).
    """
    expressions = list(dict.fromkeys(w.expression for w in windows))
    rest = set(expressions[_MAX_BLANKED:])
    if rest:
        # `windows` are in order of appearance and do not overlap, so each one is found at
        # or after the end of the one before.
        pieces: list[str] = []
        cursor = 0
        for window in windows:
            if window.expression in rest:
                at = query.find(window.expression, cursor)
                if at < 0:  # pragma: no cover - windows read from another text
                    continue
                pieces += [query[cursor:at], " "]
                cursor = at + len(window.expression)
        query = "".join([*pieces, query[cursor:]])
    for expression in expressions[:_MAX_BLANKED]:
        query = query.replace(expression, " ")
    return query


# One character can be the whole content word (买, 猫, 书, 冷), so single characters count,
# but not the light verbs that frame a question ("去了哪些地方", "要带什么") without saying what.
_LIGHT_VERBS_ZH = frozenset("去来要会能想说做带看找用")


def _keywords(text: str) -> list[str]:
    """Surface words worth matching, in order: no stopwords, no question words."""
    out: list[str] = []
    for word in _WORD_RE.findall(text):
        lower = normalize(word).strip("'’-")
        if lower.endswith(("'s", "’s")):
            lower = lower[:-2]
        if re.fullmatch(r"[\u3400-\u9fff]+", lower):
            from ..text.tokenize import _cjk_terms

            out.extend(w for w in _cjk_terms(lower) if w not in STOPWORDS_ZH and w not in _LIGHT_VERBS_ZH
                       and not _ZH_QUESTION_RE.search(w))
        elif lower and lower not in STOPWORDS_EN and lower not in _QUESTION_WORDS and len(lower) > 1:
            out.append(lower)
    return list(dict.fromkeys(out))


# "now", "currently", "these days", "still", "anymore", "latest": the state as it is today.
# Not "recently" / 最近: it names a time ("what did I do recently") rather than a state.
_PRESENT_EN = re.compile(r"\b(?:now|nowadays|currently|current|these days|at the moment|at present|presently|"
                         r"still|anymore|any more|any longer|latest|most recent|newest|up[ -]to[ -]date)\b")
# 还 + a verb in a yes-no question is "still" ("我还吃素吗？", "我还对青霉素过敏吗？"); not 还是 ("or"),
# 还有 ("also"), 还没 ("not yet").
_PRESENT_ZH = re.compile(r"现在|目前|当前|如今|眼下|现今|最新|至今|仍然|仍旧|依然|还在|"
                         r"还(?![是有没])[^，,。？?！!吗么嘛]{1,12}[吗么嘛][？?！!。\s]*$")
# A question about a former state, or in the past tense, asks about then, not now.
_FORMER_EN = re.compile(r"\b(?:before|previous|previously|former|formerly|prior|used to|(?<!how )old|originally|"
                        r"at first|back then|in the past|earlier|ago|did|was|were|had)\b")
_FORMER_ZH = re.compile(r"以前|之前|原来|原先|原本|曾经|当初|从前|过去|早先|前任|旧(?!金山)")


# A question about what something was before it changed: "Where did I work before (Stripe)?",
# "my old / previous phone number", "used to", "did I use to" (not "did Nate use X to make"),
# 以前, 原来, 前任. Not "old" alone ("old notebooks", "one-year-old"), and "before" only where it
# marks a state that was replaced: ending the question, before a name ("before Stripe", "before
# the Kia") or before a move or a change ("before I moved"); "before my flight" orders events.
_FORMER_STATE_EN = re.compile(r"\b(?:used to|did (?:i|we) use to|previously|formerly|former|prior|"
                              r"(?:my|our|your|his|her|their|\w+['’]s) (?:old|previous|last)|"
                              r"originally|at first|back then|in the past)\b|\bbefore\W*$|"
                              r"\bbefore (?:(?:i|we|he|she|they) )?(?:moved|moving|changed|changing|switched|switching|"
                              r"left|leaving|joined|joining|started|starting|got)\b")
_BEFORE_NAME = re.compile(r"\bbefore (?:the )?[A-Z]")  # on the text as written: "before Stripe", "before the Kia"
_FORMER_STATE_ZH = re.compile(r"以前|之前|原来|原先|原本|曾经|当初|从前|前任|上一[份个任家]|旧(?!金山)")


def asks_about_state(question: str) -> tuple[bool, bool]:
    """(present, former): whether a question (not a dialogue context) asks for the present state
    of something ("Where do I work now?", "我现在住哪") or a former one ("Where did I work
    before?", "What was my old phone number?", "我以前的领导是谁？"). A question with cues of both
    ("以前的同事现在在哪") is read as neither; a present cue in the past tense ("Where did I work
    now?") is not present."""
    if is_dialogue(question):
        return False, False
    text = normalize(question)
    now = bool(_PRESENT_EN.search(text) or _PRESENT_ZH.search(text))
    then = bool(_FORMER_STATE_EN.search(text.strip()) or _FORMER_STATE_ZH.search(text)
                or _BEFORE_NAME.search(question))
    present = now and not (_FORMER_EN.search(text) or _FORMER_ZH.search(text))
    return present, then and not now


def asks_present(question: str) -> bool:
    """Whether a question asks for the present state of something (`asks_about_state`)."""
    return asks_about_state(question)[0]


def asks_former(question: str) -> bool:
    """Whether a question asks for a former state of something (`asks_about_state`)."""
    return asks_about_state(question)[1]


def intent_of(question: str) -> str:
    text = normalize(question)
    for intent, cue in _INTENT_CUES:
        if cue.search(text):
            return intent
    return "lookup"


class RulePlanner:
    """Plans from cue words, the gazetteer and the time parser; never calls a model."""

    name = "rules"

    def __init__(self, core_query_intents: tuple[str, ...] = ("enumeration",)) -> None:
        # Most questions are answered by one statement that the question itself matches best;
        # the bare-keyword variant helps where the evidence is spread over many statements
        # ("how many times...", "what activities..."). Measured on LoCoMo, docs/BENCHMARKS.md.
        self.core_query_intents = core_query_intents

    def plan(self, query: str, context: PlanContext) -> QueryPlan:
        asked = asked_part(query)  # the whole query unless it is a dialogue context
        windows = find_time_windows(asked, context.now) if context.now is not None else []
        # The hull of bounded windows; an open bound ("before 2022") keeps its open side.
        start = min((w.searched()[0] for w in windows), default=None)
        end = max((w.searched()[1] for w in windows), default=None)
        # Names said, not role labels: "Assistant:" is markup, though the store tags the
        # assistant's turns with it as their speaker.
        names = context.match_names(without_roles(query))
        persons = [v for f, v in names if f == "person"]
        entities = [v for f, v in names if f == "entity" and v not in persons]
        location = next((v for f, v in names if f == "location"), None)
        # Intent from the whole context: its cue words anywhere ("all the…", "how many…") still
        # say what kind of answer is wanted (measured: intent from the last utterance alone
        # lowers MADial-en nDCG@10 0.549 -> 0.542).
        intent = intent_of(query)
        if intent in ("lookup", "temporal", "preference") and len(persons + entities) >= 2 \
                and _CHOICE_RE.search(normalize(query)):
            intent = "comparison"  # "Did Caroline or Melanie paint more?"
        elif intent == "lookup" and windows:
            intent = "temporal"
        keywords = _keywords(_without_times(without_roles(query), windows))  # no "User", "Assistant"
        present, former = asks_about_state(query)
        sub_queries = [query]
        routes: list[EvidenceRoute] = []
        # The bare content ("Caroline LGBTQ support group") matches statements better than a
        # question does when the question word or the date carries no content.
        core = " ".join(keywords)
        if len(keywords) >= 2 and core.lower() != normalize(query).strip(" ?？") \
                and intent in self.core_query_intents:
            sub_queries.append(core)
        if intent == "comparison" and len(persons + entities) >= 2:
            for name in (persons + entities)[: MAX_SUB_QUERIES - len(sub_queries)]:
                others = {n for n in persons + entities if n != name}
                focused = " ".join(k for k in keywords if k not in others)
                routes.append(EvidenceRoute(goal=f"what the question asks about {name}", queries=[focused],
                                            persons=[name] if name in persons else [],
                                            entities=[name] if name in entities else []))
                sub_queries.append(focused)
        return QueryPlan(
            query=query, sub_queries=sub_queries, keywords=keywords, persons=persons, entities=entities,
            location=location, time_start=start, time_end=end,
            time_expression=" … ".join(w.expression for w in windows) or None,
            intent=intent, present=present and not windows, former=former and not windows,
            routes=routes, planner=self.name,
        )


class NoPlanner:
    """No planning: the question as typed, with only its time window (the baseline)."""

    name = "none"

    def plan(self, query: str, context: PlanContext) -> QueryPlan:
        asked = asked_part(query)
        windows = find_time_windows(asked, context.now) if context.now is not None else []
        names = context.match_names(without_roles(query))
        return QueryPlan(
            query=query, keywords=[], persons=[v for f, v in names if f == "person"],
            entities=[v for f, v in names if f == "entity"],
            location=next((v for f, v in names if f == "location"), None),
            time_start=min((w.searched()[0] for w in windows), default=None),
            time_end=max((w.searched()[1] for w in windows), default=None),
            time_expression=" … ".join(w.expression for w in windows) or None, planner=self.name,
        )


class NotedPlanner:
    """Another planner's plans with a note, e.g. why the planner asked for was not used."""

    def __init__(self, inner: Planner, note: str) -> None:
        self.inner = inner
        self.note = note
        self.name = inner.name

    def plan(self, query: str, context: PlanContext) -> QueryPlan:
        plan = self.inner.plan(query, context)
        plan.notes.append(self.note)
        return plan
