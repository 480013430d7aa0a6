"""Relative and absolute time expressions, English and Chinese, against a fixed reference time."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from engramdb.text.timeparse import find_time_windows, parse_time_window

# Monday 8 May 2023, 1:56 pm (a LoCoMo session time).
REF = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def d(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


CASES = [
    ("I went there yesterday", d(2023, 5, 7), d(2023, 5, 8)),
    ("the day before yesterday", d(2023, 5, 6), d(2023, 5, 7)),
    ("see you tomorrow", d(2023, 5, 9), d(2023, 5, 10)),
    ("two days ago", d(2023, 5, 6), d(2023, 5, 7)),
    ("3 weeks ago", d(2023, 4, 17), d(2023, 4, 24)),
    ("a couple of months ago", d(2023, 2, 1), d(2023, 4, 1)),  # two or three months back
    ("last week", d(2023, 5, 1), d(2023, 5, 8)),
    ("this week", d(2023, 5, 8), d(2023, 5, 15)),
    ("next month", d(2023, 6, 1), d(2023, 7, 1)),
    ("last year", d(2022, 1, 1), d(2023, 1, 1)),
    ("last weekend", d(2023, 5, 6), d(2023, 5, 8)),
    ("I ran a charity race last Saturday", d(2023, 5, 6), d(2023, 5, 7)),
    ("my mom and I made dinner last night", d(2023, 5, 7), d(2023, 5, 8)),
    ("When did Melanie go camping in June?", d(2022, 6, 1), d(2022, 7, 1)),
    ("what did we do in May", d(2023, 5, 1), d(2023, 6, 1)),
    ("we fly on 12 April, early morning", d(2023, 4, 12), d(2023, 4, 13)),  # the nearest 12 April
    ("the party is on June 3rd", d(2023, 6, 3), d(2023, 6, 4)),
    ("back on the 2nd of January", d(2023, 1, 2), d(2023, 1, 3)),
    ("this morning I went for a run", d(2023, 5, 8), d(2023, 5, 9)),
    ("we met on Monday", d(2023, 5, 1), d(2023, 5, 2)),
    ("see you next Friday", d(2023, 5, 12), d(2023, 5, 13)),
    ("this Wednesday", d(2023, 5, 10), d(2023, 5, 11)),
    ("上周六我们去了黄山", d(2023, 5, 6), d(2023, 5, 7)),
    ("下星期一开会", d(2023, 5, 15), d(2023, 5, 16)),
    ("last summer", d(2022, 6, 1), d(2022, 9, 1)),
    ("in May 2023", d(2023, 5, 1), d(2023, 6, 1)),
    ("on 8 May, 2023", d(2023, 5, 8), d(2023, 5, 9)),
    ("on May 25th, 2023", d(2023, 5, 25), d(2023, 5, 26)),
    ("2023-01-31", d(2023, 1, 31), d(2023, 2, 1)),
    ("before 2022", d(1, 1, 1), d(2022, 1, 1)),
    ("since 2021", d(2021, 1, 1), d(9999, 1, 1)),
    ("in 2020", d(2020, 1, 1), d(2021, 1, 1)),
    ("昨天去了超市", d(2023, 5, 7), d(2023, 5, 8)),
    ("前天", d(2023, 5, 6), d(2023, 5, 7)),
    ("上周 Alice 跟谁聊了产品 XYZ", d(2023, 5, 1), d(2023, 5, 8)),
    ("下个月开始收费", d(2023, 6, 1), d(2023, 7, 1)),
    ("上个月", d(2023, 4, 1), d(2023, 5, 1)),
    ("三天前", d(2023, 5, 5), d(2023, 5, 6)),
    ("两周前", d(2023, 4, 24), d(2023, 5, 1)),
    ("2023年5月", d(2023, 5, 1), d(2023, 6, 1)),
    # A relative year with a month is that month, not the year.
    ("Alice 今年3月跑了多远？", d(2023, 3, 1), d(2023, 4, 1)),
    ("去年12月 Alice 去看了什么医生？", d(2022, 12, 1), d(2023, 1, 1)),
    ("去年十二月五号", d(2022, 12, 5), d(2022, 12, 6)),
    ("4月以来", d(2023, 4, 1), d(9999, 1, 1)),  # since April
    # Both ends of a range of months.
    ("between April and May", d(2023, 4, 1), d(2023, 6, 1)),
    ("what happened from March to April", d(2023, 3, 1), d(2023, 5, 1)),
    ("between August and November 2022", d(2022, 8, 1), d(2022, 12, 1)),
    # A rolling span up to today, not the calendar unit before it.
    ("in the past month", d(2023, 4, 8), d(2023, 5, 9)),
    ("over the last 10 days", d(2023, 4, 28), d(2023, 5, 9)),
    ("最近三天", d(2023, 5, 5), d(2023, 5, 9)),
    ("过去两周", d(2023, 4, 24), d(2023, 5, 9)),
    ("the last two weeks of August 2022", d(2022, 8, 1), d(2022, 9, 1)),  # not a rolling span
    # Vague counts are spans; a fortnight, 个星期, 半个月, the week before last.
    ("a few days ago", d(2023, 5, 2), d(2023, 5, 7)),
    ("几天前", d(2023, 5, 2), d(2023, 5, 7)),
    ("前几天", d(2023, 5, 2), d(2023, 5, 8)),
    ("the other day", d(2023, 5, 1), d(2023, 5, 8)),
    ("a fortnight ago", d(2023, 4, 24), d(2023, 5, 1)),
    ("两个星期前", d(2023, 4, 24), d(2023, 5, 1)),
    ("半个月前", d(2023, 4, 17), d(2023, 4, 24)),
    ("the week before last", d(2023, 4, 24), d(2023, 5, 1)),
    ("上上个月", d(2023, 3, 1), d(2023, 4, 1)),
    ("What did Alice do over the weekend?", d(2023, 5, 6), d(2023, 5, 8)),
    ("2022年3月14日", d(2022, 3, 14), d(2022, 3, 15)),
    ("5月20日", d(2023, 5, 20), d(2023, 5, 21)),
    ("去年夏天", d(2022, 6, 1), d(2022, 9, 1)),
    ("去年", d(2022, 1, 1), d(2023, 1, 1)),
    ("2022年之前", d(1, 1, 1), d(2022, 1, 1)),
    ("Alice 3月做了什么", d(2023, 3, 1), d(2023, 4, 1)),  # a month alone: the latest up to now
    ("十二月份的事", d(2022, 12, 1), d(2023, 1, 1)),
    # a bound on a month or a day is an open interval, as on a year
    ("what did Bob buy before June 2022?", d(1, 1, 1), d(2022, 6, 1)),
    ("until June 2022", d(1, 1, 1), d(2022, 7, 1)),
    ("after March 2023", d(2023, 4, 1), d(9999, 1, 1)),
    ("2023年3月之后", d(2023, 4, 1), d(9999, 1, 1)),
    ("2023年3月以前", d(1, 1, 1), d(2023, 3, 1)),
    # a month under a bound is the month, not a count: 5月之前 is before May, 5个月之前 5 months ago
    ("5月之前我去了哪里", d(1, 1, 1), d(2023, 5, 1)),
    ("四月以后", d(2023, 5, 1), d(9999, 1, 1)),
    ("4月前", d(1, 1, 1), d(2023, 4, 1)),
    ("5个月之前", d(2022, 12, 1), d(2023, 1, 1)),
    ("三个月后", d(2023, 8, 1), d(2023, 9, 1)),
    ("since April", d(2023, 4, 1), d(9999, 1, 1)),
    ("since 7 May", d(2023, 5, 7), d(2023, 5, 8)),  # a named day stays the day it names
    ("between March and April 2023", d(2023, 3, 1), d(2023, 5, 1)),
    # a unit before the bound anchors a span next to the date, not everything before it
    # (the day itself included: it is often when it was told)
    ("what did John do the week before 3 August 2022?", d(2022, 7, 27), d(2022, 8, 4)),
    ("two weeks before 11 August 2022", d(2022, 7, 28), d(2022, 8, 12)),
    ("on the Monday before 24 July 2022", d(2022, 7, 17), d(2022, 7, 25)),
    ("the Saturday after 28 October 2022", d(2022, 10, 28), d(2022, 11, 5)),
    ("how many tournaments has Nate won by 10 July 2022?", d(2022, 7, 10), d(2022, 7, 11)),
    # "in <count> <unit>": that far ahead, as "two weeks from now" (was no time at all, while
    # 两周后 was one)
    ("I'm moving in two weeks", d(2023, 5, 22), d(2023, 5, 29)),
    ("the exam is in 3 days", d(2023, 5, 11), d(2023, 5, 12)),
    ("see you in a week's time", d(2023, 5, 15), d(2023, 5, 22)),
    ("what will Alice do in a fortnight?", d(2023, 5, 22), d(2023, 5, 29)),
    ("we'll know in a few days", d(2023, 5, 10), d(2023, 5, 15)),
    ("I'm moving in two weeks, can't wait!", d(2023, 5, 22), d(2023, 5, 29)),  # the words before say
    ("我过两天去北京", d(2023, 5, 10), d(2023, 5, 11)),  # 过两天 / 再过一个月: "in two days"
    ("再过一个月就毕业了", d(2023, 6, 1), d(2023, 7, 1)),
    ("过几天再说", d(2023, 5, 10), d(2023, 5, 15)),
    # after a verb of intent, and 再过 after anything (an outside check: both were no time)
    ("我打算过两天去上海玩", d(2023, 5, 10), d(2023, 5, 11)),
    ("他要过两天才回来", d(2023, 5, 10), d(2023, 5, 11)),
    ("我准备过两周搬家", d(2023, 5, 22), d(2023, 5, 29)),
    ("什么事情再过一个月发生", d(2023, 6, 1), d(2023, 7, 1)),
    ("大后天考试", d(2023, 5, 11), d(2023, 5, 12)),  # three days on (it read 后天, two days on)
]


@pytest.mark.parametrize("text", [
    "I learned to swim in two weeks",  # a duration, told of the past
    "she finished the course in 3 months",
    "I lost 5 kg in a month",
    "I go running three times in a week",  # a rate
    "we have to decide within two weeks",
    "two of them came in a week",
    "Hey Nate! We haven't talked in a few days",  # what has not been (LoCoMo's greetings)
    "I have not slept in two days",
    "我学过两天钢琴",  # 过 after a verb: "studied for two days"
    "超过三天没睡好",
    "过了两天他才回来",
    "度过两周假期",
    "经过三天的努力",
    "才过两天就忘了",  # "forgot after only two days"
])
def test_a_count_of_units_ahead_is_no_time_when_it_is_a_duration_or_a_rate(text: str) -> None:
    assert parse_time_window(text, REF) is None, text


@pytest.mark.parametrize("text, ref, start, end", [
    # A month or quarter named alone is the latest begun, unless its clause speaks of what is to
    # come (a future, a plan): "What will I do in March?" in April was last March, and "What's on
    # the Q3 roadmap?" in April the Q3 of last year (an outside check).
    ("What will I do in March?", d(2024, 4, 15), d(2025, 3, 1), d(2025, 4, 1)),
    ("I'm going to Paris in June.", d(2024, 4, 15), d(2024, 6, 1), d(2024, 7, 1)),
    ("What did I do in March?", d(2024, 4, 15), d(2024, 3, 1), d(2024, 4, 1)),
    ("What did we plan in March?", d(2024, 4, 15), d(2024, 3, 1), d(2024, 4, 1)),  # a past plan
    ("What's on the Q3 roadmap?", d(2024, 4, 15), d(2024, 7, 1), d(2024, 10, 1)),
    ("What are my goals for Q2?", d(2024, 4, 15), d(2024, 4, 1), d(2024, 7, 1)),  # the one under way
    ("What did I do in Q3?", d(2024, 4, 15), d(2023, 7, 1), d(2023, 10, 1)),
    ("三月份的计划是什么？", d(2024, 4, 15), d(2025, 3, 1), d(2025, 4, 1)),
    ("我三月去了哪里？", d(2024, 4, 15), d(2024, 3, 1), d(2024, 4, 1)),
    ("第三季度的目标是什么？", d(2024, 4, 15), d(2024, 7, 1), d(2024, 10, 1)),
    ("我们第一季度做了什么？", d(2024, 4, 15), d(2024, 1, 1), d(2024, 4, 1)),
    ("I usually travel in August.", d(2024, 4, 15), d(2023, 8, 1), d(2023, 9, 1)),  # a habit: as before
])
def test_a_month_or_quarter_alone_lies_ahead_when_its_clause_does(text: str, ref: datetime, start: datetime,
                                                                    end: datetime) -> None:
    window = parse_time_window(text, ref)
    assert window is not None and (window.start, window.end) == (start, end), window


@pytest.mark.parametrize("text, ref, start, end", [
    # "in March last year" was the year and "March" read as a hull of 15 months; "last March"
    # asked in March was the month under way (as 去年三月 and "last Thursday" never were).
    ("What did I do in March last year?", d(2024, 3, 20), d(2023, 3, 1), d(2023, 4, 1)),
    ("in May of last year", d(2024, 3, 20), d(2023, 5, 1), d(2023, 6, 1)),
    ("March 5 last year", d(2024, 3, 20), d(2023, 3, 5), d(2023, 3, 6)),
    ("on the 5th of March last year", d(2024, 3, 20), d(2023, 3, 5), d(2023, 3, 6)),
    ("the summer of last year", d(2024, 3, 20), d(2023, 6, 1), d(2023, 9, 1)),
    ("What did I do last March?", d(2024, 3, 20), d(2023, 3, 1), d(2023, 4, 1)),
    ("last June", d(2024, 6, 15), d(2023, 6, 1), d(2023, 7, 1)),
    ("last February", d(2024, 6, 15), d(2024, 2, 1), d(2024, 3, 1)),
    ("next March", d(2024, 3, 20), d(2025, 3, 1), d(2025, 4, 1)),
    ("next December", d(2024, 3, 20), d(2024, 12, 1), d(2025, 1, 1)),
    ("this March", d(2024, 3, 20), d(2024, 3, 1), d(2024, 4, 1)),
    ("since last March", d(2024, 3, 20), d(2023, 3, 1), datetime(9999, 1, 1, tzinfo=timezone.utc)),
])
def test_a_month_of_last_year_is_that_month(text: str, ref: datetime, start: datetime, end: datetime) -> None:
    window = parse_time_window(text, ref)
    assert window is not None and (window.start, window.end) == (start, end), window


@pytest.mark.parametrize("text, ref, start, end", [
    ("what happened this winter?", d(2023, 1, 10), d(2022, 12, 1), d(2023, 3, 1)),  # the winter under way
    ("last winter", d(2023, 1, 10), d(2021, 12, 1), d(2022, 3, 1)),  # the latest one over
    ("next winter", d(2023, 1, 10), d(2023, 12, 1), d(2024, 3, 1)),
    ("last summer", d(2023, 7, 5), d(2022, 6, 1), d(2022, 9, 1)),  # not the summer under way
    ("this summer", d(2023, 7, 5), d(2023, 6, 1), d(2023, 9, 1)),
    ("last summer", d(2023, 10, 2), d(2023, 6, 1), d(2023, 9, 1)),
])
def test_seasons_are_read_around_the_reference_time(text: str, ref: datetime, start: datetime, end: datetime) -> None:
    window = parse_time_window(text, ref)
    assert window is not None and (window.start, window.end) == (start, end)


def test_a_restated_sentence_keeps_its_bound_words_for_the_restater() -> None:
    """The conversation restater rewrites the expression itself ("yesterday" -> a date), so it
    reads windows without bounds."""
    (window,) = find_time_windows("I got it before yesterday.", REF, bounds=False)
    assert (window.start, window.end, window.expression) == (d(2023, 5, 7), d(2023, 5, 8), "yesterday")
    (bounded,) = find_time_windows("I got it the day before last week.", REF)
    assert (bounded.start, bounded.end) == (d(2023, 4, 30), d(2023, 5, 8))
    (month,) = find_time_windows("I got it before March 2023.", REF)
    assert (month.start, month.end) == (d(1, 1, 1), d(2023, 3, 1))


def test_a_chinese_date_without_a_year_is_the_nearest_one():
    """As "30 December" said on 3 January: four days before, not a year on (and the reverse)."""
    new_year = d(2024, 1, 3)
    for text in ("12月30日发生了什么", "what happened on 30 December?"):
        window = parse_time_window(text, new_year)
        assert window is not None and (window.start, window.end) == (d(2023, 12, 30), d(2023, 12, 31)), text
    window = parse_time_window("我1月1日要去开会。", d(2023, 12, 20))
    assert window is not None and window.start == d(2024, 1, 1)


def test_counts_of_months_and_monthly_are_not_a_month():
    for text in ("12个月", "每月的账单", "3个月前", "下个月", "五月天的演唱会怎么样", "一月一次", "五月花号", "十月怀胎"):
        assert [w.kind for w in find_time_windows(text, REF)] != ["month_only_zh"], text


def test_a_month_in_chinese_numerals_may_run_into_the_next_word():
    # the commonest phrasing: a pronoun or a verb right after the month
    for text, month in (("三月我去了哪里", 3), ("我三月去了哪里", 3), ("十二月我做了什么", 12), ("五月跟小王去了杭州", 5)):
        window = parse_time_window(text, d(2026, 12, 20))
        assert window is not None and (window.start.month, window.start.year) == (month, 2026), text


@pytest.mark.parametrize("text, start, end", CASES, ids=[c[0] for c in CASES])
def test_expression_resolves_to_window(text: str, start: datetime, end: datetime):
    window = parse_time_window(text, REF)
    assert window is not None, text
    assert (window.start, window.end) == (start, end)


def test_no_time_expression():
    assert parse_time_window("What did Melanie paint?", REF) is None
    assert parse_time_window("version 2.3 of the app", REF) is None


def test_several_expressions_in_order_and_hull():
    windows = find_time_windows("Between March 2023 and yesterday", REF)
    assert [w.expression for w in windows] == ["March 2023", "yesterday"]
    hull = parse_time_window("Between March 2023 and yesterday", REF)
    assert (hull.start, hull.end) == (d(2023, 3, 1), d(2023, 5, 8))


def test_naive_reference_is_utc_and_invalid_dates_are_skipped():
    window = parse_time_window("yesterday", datetime(2023, 1, 1, 0, 30))
    assert window.start == d(2022, 12, 31)
    # An impossible day is not a date; the month that remains is still read.
    window = parse_time_window("31 February 2023", REF)
    assert (window.start, window.end, window.expression) == (d(2023, 2, 1), d(2023, 3, 1), "February 2023")


# Parts of periods, quarters, hours and holidays (text/timeparts.py), against Monday 22 May 2023.
NOW = datetime(2023, 5, 22, 10, 0, tzinfo=timezone.utc)
PART_CASES = [
    ("What did Alice do in the first week of May?", "the first week of May", d(2023, 5, 1), d(2023, 5, 8)),
    ("the last week of April", "the last week of April", d(2023, 4, 24), d(2023, 5, 1)),
    ("early May", "early May", d(2023, 5, 1), d(2023, 5, 11)),
    ("in mid-April", "mid-April", d(2023, 4, 11), d(2023, 4, 21)),
    ("late April", "late April", d(2023, 4, 21), d(2023, 5, 1)),
    ("at the end of last month", "the end of last month", d(2023, 4, 21), d(2023, 5, 1)),
    ("the middle of March", "the middle of March", d(2023, 3, 11), d(2023, 3, 21)),
    ("the second half of 2022", "the second half of 2022", d(2022, 7, 1), d(2023, 1, 1)),
    ("at the start of last week", "the start of last week", d(2023, 5, 15), d(2023, 5, 18)),
    ("since early May", "early May", d(2023, 5, 1), datetime(9999, 1, 1, tzinfo=timezone.utc)),
    ("before the end of last month", "the end of last month", datetime(1, 1, 1, tzinfo=timezone.utc), d(2023, 4, 21)),
    ("上个月初", "上个月初", d(2023, 4, 1), d(2023, 4, 11)),
    ("这个月中旬", "这个月中旬", d(2023, 5, 11), d(2023, 5, 21)),
    ("四月底", "四月底", d(2023, 4, 21), d(2023, 5, 1)),
    ("上周末我们去爬山了", "上周末", d(2023, 5, 20), d(2023, 5, 22)),
    ("去年底", "去年底", d(2022, 9, 1), d(2023, 1, 1)),
    ("今年年初", "今年年初", d(2023, 1, 1), d(2023, 4, 1)),
    ("年初", "年初", d(2023, 1, 1), d(2023, 4, 1)),
    ("去年下半年", "去年下半年", d(2022, 7, 1), d(2023, 1, 1)),
    ("in Q1", "Q1", d(2023, 1, 1), d(2023, 4, 1)),
    ("in Q3", "Q3", d(2022, 7, 1), d(2022, 10, 1)),  # the latest Q3 begun
    ("Q3 2022", "Q3 2022", d(2022, 7, 1), d(2022, 10, 1)),
    ("the third quarter of 2022", "the third quarter of 2022", d(2022, 7, 1), d(2022, 10, 1)),
    ("last quarter", "last quarter", d(2023, 1, 1), d(2023, 4, 1)),
    ("2022年第三季度", "2022年第三季度", d(2022, 7, 1), d(2022, 10, 1)),
    ("上个季度", "上个季度", d(2023, 1, 1), d(2023, 4, 1)),
    ("in spring 2022", "spring 2022", d(2022, 3, 1), d(2022, 6, 1)),
    ("the winter of 2022", "the winter of 2022", d(2022, 12, 1), d(2023, 3, 1)),
    ("in the last 48 hours", "the last 48 hours", datetime(2023, 5, 20, 10, tzinfo=timezone.utc), d(2023, 5, 23)),
    ("过去24小时", "过去24小时", datetime(2023, 5, 21, 10, tzinfo=timezone.utc), d(2023, 5, 23)),
    ("since Christmas", "Christmas", d(2022, 12, 24), datetime(9999, 1, 1, tzinfo=timezone.utc)),
    ("last Christmas", "last Christmas", d(2022, 12, 24), d(2022, 12, 27)),
    ("Christmas 2021", "Christmas 2021", d(2021, 12, 24), d(2021, 12, 27)),
    ("at Thanksgiving", "Thanksgiving", d(2022, 11, 24), d(2022, 11, 28)),  # the fourth Thursday
    ("on Valentine's Day", "Valentine's Day", d(2023, 2, 14), d(2023, 2, 15)),
    ("去年国庆", "去年国庆", d(2022, 10, 1), d(2022, 10, 8)),
]


@pytest.mark.parametrize("text, expression, start, end", PART_CASES, ids=[c[0] for c in PART_CASES])
def test_parts_of_periods_quarters_hours_and_holidays(text: str, expression: str, start: datetime,
                                                       end: datetime) -> None:
    [window] = find_time_windows(text, NOW)
    assert (window.expression, window.start, window.end) == (expression, start, end)


@pytest.mark.parametrize("text, expression", [
    ("这个月中国队赢了", "这个月"),  # 中 opens 中国, not the middle of the month
    ("a lot of May's flowers", None),  # May's: a name
    ("I may go there", None),
])
def test_part_words_that_are_not_parts(text: str, expression: str | None) -> None:
    windows = find_time_windows(text, NOW)
    assert [w.expression for w in windows] == ([expression] if expression else [])
    if expression == "这个月":
        assert (windows[0].start, windows[0].end) == (d(2023, 5, 1), d(2023, 6, 1))


def test_the_restater_leaves_holidays_quarters_and_hours_named_alone() -> None:
    """In speech "at Christmas" or "in Q3" may lie ahead, and hours are not days: only a
    question reads them as the latest begun. Anchored ones are restated."""
    from engramdb.conversation.restate import resolve_time

    for said in ("Let us meet at Christmas.", "We launch in Q3.", "国庆我要去北京。", "The past 48 hours were crazy."):
        assert resolve_time(said, NOW)[0] == said
    assert resolve_time("I moved in at the end of last month.", NOW)[0] == \
        "I moved in between 21 April 2023 and 30 April 2023."
    assert resolve_time("去年国庆我去了北京。", NOW)[0].startswith("2022年10月1日至2022年10月7日")


def test_a_search_looks_at_the_days_around_a_part_of_a_period() -> None:
    """What happens in "the first weekend of August" is planned the days before and told the
    days after: the planner's window is a week wider before and two weeks after, a whole
    period's is not widened, and the restater's window is the part itself."""
    from engramdb.plan.base import PlanContext
    from engramdb.plan.rules import RulePlanner

    [part] = find_time_windows("the first weekend of August 2023", NOW)
    assert (part.start, part.end, part.part) == (d(2023, 8, 5), d(2023, 8, 7), True)
    assert part.searched() == (d(2023, 7, 29), d(2023, 8, 21))
    [month] = find_time_windows("in August 2023", NOW)
    assert month.searched() == (month.start, month.end) == (d(2023, 8, 1), d(2023, 9, 1))
    plan = RulePlanner().plan("Where did Andrew go during the first weekend of August 2023?",
                              PlanContext(now=NOW, match_names=lambda text: []))
    assert (plan.time_start, plan.time_end) == (d(2023, 7, 29), d(2023, 8, 21))
    assert "weekend" not in plan.keywords and "first" not in plan.keywords
    # a week's end is a weekend as exact as "last weekend": searched as it is, in both languages
    for text in ("上周末我干了什么", "上个周末我干了什么", "what did I do last weekend"):
        plan = RulePlanner().plan(text, PlanContext(now=NOW, match_names=lambda text: []))
        assert (plan.time_end - plan.time_start).days == 2 and plan.time_start.weekday() == 5, text


def test_a_weekday_named_alone_follows_the_tense_of_its_clause() -> None:
    """A plan names the coming day, a memory the last one (said on Friday 20 November 2026)."""
    friday = d(2026, 11, 20)
    cases = [("I'm flying to Paris on Monday.", d(2026, 11, 23)), ("Remind me to call mom on Sunday.", d(2026, 11, 22)),
             ("The party is on Saturday.", d(2026, 11, 21)), ("We will meet on Friday.", d(2026, 11, 20)),
             ("I went to the park on Sunday.", d(2026, 11, 15)), ("The concert was on Saturday.", d(2026, 11, 14)),
             ("I'm telling you, on Sunday we went to the beach.", d(2026, 11, 15)),
             ("周六我要去参加婚礼。", d(2026, 11, 21)), ("周六我去参加了婚礼。", d(2026, 11, 14)),
             ("星期一我们见过面", d(2026, 11, 16)),
             # a timetable or a booking in the present is still to come (they read as past before)
             ("My sister arrives on Sunday.", d(2026, 11, 22)), ("We leave on Monday.", d(2026, 11, 23)),
             ("I have a dentist appointment on Wednesday.", d(2026, 11, 25)),
             ("My sister arrived on Sunday.", d(2026, 11, 15)), ("I had a dentist appointment on Wednesday.",
                                                                   d(2026, 11, 18))]
    for text, start in cases:
        windows = find_time_windows(text.lower(), friday)
        assert [(w.start, w.end) for w in windows] == [(start, start + timedelta(days=1))], text
    # habits and ranges name no one day; a bare weekday with no tense is left alone
    for text in ("我每周六打球。", "我一周一次去健身房了", "我周一到周五都要上班", "周六",
                 "i usually start work on monday.", "we always eat out on friday."):
        assert find_time_windows(text, friday) == [], text
