"""No query, however long or odd, costs more than near-linear time.

Never a wall-clock limit here: each test times the same step on an adversarial input of size
n and 8n side by side, in one run, and checks the growth. Linear time grows about 8 times,
quadratic 64 times; the bound of 30 leaves room for noise and catches the quadratic cases
(a 20,000-character word took ~12 s in the substring channel's pattern finder).
"""

from __future__ import annotations

import gc
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pytest

from engramdb import Memory
from engramdb.pipeline.presets import PRESET_NAMES
from engramdb.plan import PlanContext, RulePlanner
from engramdb.text.patterns import exact_patterns
from engramdb.text.timeparse import find_time_windows

NOW = datetime(2023, 5, 22, 12, 0, tzinfo=timezone.utc)
GROWTH, MAX_GROWTH = 8, 30


def _best(step: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        step(text)
        best = min(best, time.perf_counter() - start)
    return best


def _growth(step: Callable[[str], object], make: Callable[[int], str], n: int, repeats: int = 5) -> float:
    """How many times longer `step` takes on ``make(8 n)`` than on ``make(n)`` (best of `repeats`)."""
    small, large = make(n), make(GROWTH * n)
    step(small)  # warm caches and lazy loads outside the measurement
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _best(step, large, repeats) / _best(step, small, repeats)
    finally:
        if enabled:
            gc.enable()


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _counted_days(n: int) -> str:
    """'1 days ago 2 days ago …': hundreds of distinct time expressions."""
    return " ".join(f"{i} days ago" for i in range(1, n // 8))[:n]


def _counted_days_zh(n: int) -> str:
    """'1天前2天前3天前…': thousands of distinct time expressions."""
    return "".join(f"{i}天前" for i in range(1, n // 3))[:n]


# Computed with the earlier, quadratic pattern: the linear one finds exactly the same strings.
NORMAL_QUERIES = [
    ("what fixed ERR_CONN_RESET in v2.3.1?", ["err_conn_reset", "v2.3.1"]),
    ("staging db port 5433", ["5433"]),
    ("ticket ENG-1234 status", ["eng-1234"]),
    ('who wrote "tram 28" notes', ["tram 28", "28"]),
    ("《三体》的作者是谁", ["三体"]),
    ("When did Caroline go to the support group?", []),
    ("Is node.js faster than python3.11 on x86_64?", ["node.js", "python3.11", "x86_64"]),
    ("email bob@example.com about https://example.com/a/b?x=1", ["example.com", "example.com/a/b"]),
    ("the meeting at 10:30 on 2023-05-01", ["10:30", "2023-05-01"]),
    ("k8s vs a1b2c3d vs c# vs c++", ["k8s", "a1b2c3d"]),
    ("ＥＮＧ－１２３ and ｖ２", ["eng-123", "v2"]),
    ("项目XYZ123下个月开始收费吗", ["xyz123"]),
    ("第2章讲了什么", []),
    ("pi is 3.14 and 1,000 is a number", ["3.14", "000"]),
    ("iPhone 15 Pro Max price", ["15"]),
    ("what's in /etc/nginx/nginx.conf?", ["etc/nginx/nginx.conf"]),
    ("v٣ and ٣a and ٣٣", ["v٣", "٣a"]),  # non-ASCII digits (\d) as before
    ("a-b--c1 x.. y_ _z 7", ["a-b", "c1"]),
    ("「重要」的事和『另一件』", ["重要", "另一件"]),
    ("the 2nd and 3rd and 1st", ["2nd", "3rd", "1st"]),
    ("#42 and #hashtag and @user", ["42"]),
    ("one two three", []),
]


@pytest.mark.parametrize(("query", "patterns"), NORMAL_QUERIES)
def test_exact_patterns_unchanged_on_normal_queries(query: str, patterns: list[str]) -> None:
    assert exact_patterns(query) == patterns


@pytest.mark.parametrize("make", [_repeat("a"), _repeat("Hello")], ids=["letters", "word"])
def test_exact_patterns_is_linear_on_a_long_word(make: Callable[[int], str]) -> None:
    assert _growth(exact_patterns, make, 4000) < MAX_GROWTH


# A run of numerals was rescanned from each of its characters; each of thousands of expressions
# was checked against every one found before it (n = 16,000: 1,600 then 12,800 expressions).
@pytest.mark.parametrize(("make", "n"), [(_repeat("1"), 4000), (_repeat("一"), 4000), (_repeat("last week "), 16000),
                                         (_repeat("上周三3天前"), 4000), (lambda n: "近" + " " * n, 4000),
                                         (_repeat("the end of the first week of "), 16000), (_repeat("early May "), 16000),
                                         (_repeat("5月底上周末Q1 Christmas "), 8000),
                                         (_repeat("周六我要去三月我 I'm flying on Monday "), 8000)],
                         ids=["digits", "zh-numerals", "last-week", "zh-expressions", "zh-hours-spaces",
                              "part-words", "parts", "named-periods", "weekdays-by-tense"])
def test_time_windows_are_found_in_linear_time(make: Callable[[int], str], n: int) -> None:
    assert _growth(lambda text: find_time_windows(text, NOW), make, n) < MAX_GROWTH


def test_a_number_too_large_for_a_date_is_not_a_time_expression() -> None:
    assert find_time_windows("what happened 99999999999 days ago?", NOW) == []


# Computed with the earlier planner, which blanked each expression with str.replace in turn.
PLANNED_KEYWORDS = [
    ("What did I do yesterday and the day before yesterday?", ["day"]),
    ("What did Melanie paint last week, and what did she plan for next week?", ["melanie", "paint", "plan"]),
    ("Which books did I read last week? Last week I read lastweek's digest", ["books", "read", "lastweek", "digest"]),
    ("上周三和去年夏天我们去了哪些地方？3天前呢", ["地方"]),
    ("How many days ago was 2 days ago before 2022 in May 2023?", ["days", "ago"]),
    ("What happened yesterday, yesterdays and today", ["happened"]),
]


@pytest.mark.parametrize(("query", "keywords"), PLANNED_KEYWORDS)
def test_planned_keywords_unchanged_on_normal_queries(query: str, keywords: list[str]) -> None:
    assert RulePlanner().plan(query, PlanContext(now=NOW, match_names=lambda text: [])).keywords == keywords


def test_many_time_expressions_are_planned_in_linear_time() -> None:
    context = PlanContext(now=NOW, match_names=lambda text: [])
    plan = RulePlanner().plan(_counted_days(4000), context)
    assert plan.time_start is not None and not {"days", "ago"} & set(plan.keywords)  # every one cut out
    assert _growth(lambda text: RulePlanner().plan(text, context), _counted_days_zh, 4000, repeats=3) < MAX_GROWTH


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory):
    # No length cap: the steps themselves must be linear, however long a query is let through.
    with Memory(tmp_path_factory.mktemp("linear") / "x.db", embedder="minilm", max_query_chars=10**9) as mem:
        mem.add([
            {"text": "Caroline went to the LGBTQ support group last week.", "persons": ["Caroline"],
             "timestamp": "2023-05-20"},
            {"text": "Melanie painted a sunrise in May 2023.", "persons": ["Melanie"], "timestamp": "2023-05-16"},
            {"text": "小王在黄山参加了产品 XYZ 的发布会。", "persons": ["小王"], "entities": ["产品 XYZ"],
             "location": "黄山", "timestamp": "2023-05-17"},
            "Release v2.3.1 fixed ERR_CONN_RESET on reconnect.",
            "The staging database listens on port 5433.",
            "《三体》是刘慈欣写的科幻小说。",
            "黄山山顶晚上很冷，要带外套。",
        ] + [f"note number {i} about topic {i % 7}" for i in range(30)])
        yield mem


def _adversarial(n: int) -> str:
    """A word of letters and a run of digits (each was read in quadratic time), n chars in all."""
    return _repeat("a")(n // 2) + " " + _repeat("1")(n // 2)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_search_is_linear_in_the_query_for_every_preset(small_store: Memory, preset: str) -> None:
    growth = _growth(lambda text: small_store.search(text, preset=preset, now=NOW), _adversarial, 4000,
                     repeats=3)
    assert growth < MAX_GROWTH


@pytest.mark.parametrize("make", [_repeat("now still "), _repeat("现在以前"), _repeat("currently was "), _repeat("a"),
                                  _repeat("Sam's "), _repeat("ab'")], ids=["present", "zh", "former", "word", "names", "quotes"])
def test_a_question_about_now_or_before_is_read_in_linear_time(make: Callable[[int], str]) -> None:
    from engramdb.plan.rules import asks_former, asks_present

    assert _growth(asks_present, make, 4000) < MAX_GROWTH
    assert _growth(asks_former, make, 4000) < MAX_GROWTH


def test_news_about_someone_else_is_told_in_linear_time() -> None:
    from engramdb.pipeline.recency import _someone_else

    def letters(i: int) -> str:
        return "".join("abcdefghijklmnopqrstuvwxyz"[(i // 26 ** d) % 26] for d in range(4))

    def names(n: int) -> str:  # thousands of distinct possessive names ("Zqbaaa's")
        return " ".join(f"Zq{letters(i)}'s" for i in range(n // 9))[:n]

    def check(text: str) -> bool:
        return _someone_else(text, text.replace("'s", ""))  # every name known: no early exit
    assert not check(names(4000)) and _someone_else(names(4000), "")
    assert _growth(check, names, 4000) < MAX_GROWTH


@pytest.mark.parametrize("make", [
    lambda n: "I went" + " ," * (n // 2) + "x, ok?",  # separators repeated: backtracked exponentially
    lambda n: "I went" + " so," * (n // 4) + " right?",  # lead-in words to strip, one by one
    lambda n: "我下周去上海出差" + "，所以" * (n // 3) + "，你知道吗？",
], ids=["separators", "fillers", "chinese-fillers"])
def test_the_news_a_question_opens_with_is_read_in_linear_time(make: Callable[[int], str]) -> None:
    from engramdb.conversation.extract import _stated_before_question

    assert _growth(_stated_before_question, make, 2_000) < MAX_GROWTH
