"""A time window and a topic: the window's weight for what the question is about.

The temporal channel boosts every entry inside the window a question names ("last week", "in
Q3", 上周): asked "What did I do last week?", being in the window is what makes an entry
relevant. But "What's on the Q3 roadmap?" also names a topic, and three unrelated notes from
July to September outranked the one note about the roadmap at p 0.997: the window's weight
(3.0) is more than all the topical evidence together. So when the question asks about more
than its time, an entry in the window that shows nothing of that topic — no word of the
question in BM25's list, a semantic match below the list's mean — counts `off_topic` of the
window's weight. Entries in the window that match the topic keep all of it, and outrank
comparable entries outside the window as before.

What a question asks besides its time is its terms less the resolved time expression, time
words and the words that ask for anything at all ("happen", "do", 发生, 做): "What happened
last week?" has no topic, "What did Alice do two weeks ago?" has Alice.
"""

from __future__ import annotations

import re

from ..plan.model import QueryPlan
from ..text.tokenize import query_terms
from .context import Rows
from .fuse import channel_values

#: Analysed terms (English stems, Chinese words) that ask about anything in a window, or name
#: time itself: a question made only of these has no topic of its own.
VACUOUS = frozenset({
    # what happened, what did I do / get up to / say, anything new, how was it
    "happen", "do", "done", "go", "went", "gone", "get", "got", "anyth", "someth", "thing", "stuff", "new",
    "up", "talk", "say", "said", "tell", "told", "event", "activ", "plan", "busi", "fun", "interest", "news",
    "remind", "rememb", "recal",
    # time words the expression may leave behind ("about two weeks ago")
    "ago", "last", "next", "past", "previous", "recent", "earlier", "later", "week", "weekend", "month", "year",
    "day", "night", "morning", "afternoon", "even", "today", "yesterday", "tomorrow", "time", "period", "quarter",
    "season", "summer", "winter", "spring", "autumn", "fall", "holiday", "one", "two", "three", "four", "few",
    "sever", "coupl",
    # Chinese: 发生 / 做 / 干 / 去 / 聊 / 说 … and time words
    "发生", "做", "干", "干什么", "去", "去过", "聊", "聊天", "说", "说过", "提到", "事", "事情", "新鲜事", "活动",
    "安排", "计划", "最近", "之前", "以前", "时候", "上个", "这个", "下个", "上个月", "这个月", "下个月", "周末",
    "上周", "这周", "本周", "下周", "今天", "昨天", "前天", "明天", "去年", "今年", "明年", "月", "周", "天", "年",
})


def topic_terms(plan: QueryPlan) -> list[str]:
    """The question's terms besides its time: its analysed words less the resolved time
    expression, time words and words that ask about anything (`VACUOUS`), less numbers."""
    text = plan.query or ""
    for expression in (plan.time_expression or "").split(" … "):
        if expression.strip():
            text = re.sub(re.escape(expression.strip()), " ", text, flags=re.IGNORECASE)
    return [t for t in query_terms(text) if t not in VACUOUS and not t.isdigit()]


def off_topic(results: dict[str, Rows]) -> set[int]:
    """Rows of the window (the temporal list) that show nothing of the topic: not in BM25's
    list, and a semantic match below the semantic list's mean (or none)."""
    lexical = {rowid for rowid, _ in results.get("lexical", [])}
    semantic = results.get("semantic", [])
    values, _ = channel_values([score for _, score in semantic])
    above = {rowid for (rowid, _), value in zip(semantic, values) if value >= 0.0}
    return {rowid for rowid, _ in results.get("temporal", []) if rowid not in lexical and rowid not in above}
