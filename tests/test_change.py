"""Whether a statement says that something changed (text/change.py): the cue the recency stage
reads to tell an update ("Moved to Bristol last week") from a newer note on the same topic."""

from __future__ import annotations

import pytest

from engramdb.text.change import says_change, says_plan


@pytest.mark.parametrize("text", [
    "Moved to Bristol last week.",
    "Sold the Honda and bought an electric Kia EV6.",
    "Cancelled my gym membership — doing yoga at home instead.",
    "Quit coffee on the doctor's advice; green tea only.",
    "Tom got a new number: 07700 900456.",
    "Priya left the company. My new manager is Daniel.",
    "Started piano lessons; that's my instrument from now on.",
    "Got promoted to design lead at Pixel & Co.",
    "Went vegetarian for the new year, no meat at all anymore.",
    "上个月搬到杭州了，新家在西湖区。",
    "从阿里离职了，下周一去字节跳动上班。",
    "重置了路由器，无线网密码改成了 qwer8888。",
    "把朗逸卖了，换了一辆比亚迪电动车。",
    "咖啡不喝了，改喝茶。",
    "Big week — my first week working at Datadog has been intense.",  # the first days somewhere new
    "First day at the new school went fine.",
])
def test_updates_say_that_something_changed(text: str) -> None:
    assert says_change(text)


@pytest.mark.parametrize("text", [
    "Gave blood today for the first time in years.",
    "Watched a new film last night, it was fine.",  # a new thing, not a change of what is mine
    "I live in Leeds.",
    "We did not move after all.",  # a change denied
    "Still haven't changed my number.",
    "I have always supported Everton.",
    "外婆一直住在重庆，说什么都不肯搬。",  # refused
    "爸妈还住在成都的老房子里，不愿意搬。",
    "明天下午三点开项目会。",
    "今天看了新闻。",  # 新 inside 新闻 is no "new"
    "It was the first day of spring.",
])
def test_notes_on_the_same_topic_do_not(text: str) -> None:
    assert not says_change(text)


def test_only_the_words_just_before_a_cue_can_deny_it() -> None:
    # the denial is looked for in a bounded window before each cue, so a long text is read in
    # linear time, and a "not" far before does not deny a change said later
    assert not says_change("no " * 20_000 + "moved")
    assert says_change("I did not like the old flat. " * 200 + "Moved to Leeds.")


@pytest.mark.parametrize("text, plan", [
    ("Planning to move to Bristol next year.", True),
    ("Thinking about switching to a standing desk.", True),
    ("打算明年换工作。", True),
    ("想搬去杭州。", True),
    ("Moved to Bristol last week.", False),
    ("换了新工作，去了腾讯。", False),
    ("I'm trying to cut down on carbs this summer.", True),  # an effort, not yet a change
])
def test_a_plan_is_no_change_yet(text: str, plan: bool) -> None:
    assert says_plan(text) is plan
