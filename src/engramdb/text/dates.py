"""Calendar arithmetic and number words shared by `timeparse` and `timeparts`: month and year
windows, meteorological seasons, English and Chinese counts."""

from __future__ import annotations

from datetime import datetime, tzinfo

SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12, "春天": 3, "夏天": 6, "秋天": 9, "冬天": 12,
           "春季": 3, "夏季": 6, "秋季": 9, "冬季": 12}
EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
              "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3, "several": 3}
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def zh_number(text: str) -> int | None:
    """"12", "十二", "二十", "五" as a number (None: not one)."""
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)
    return ZH_DIGITS.get(text)


def month_start(year: int, month: int, tz: tzinfo | None) -> datetime:
    """The first moment of `month` of `year`; months past 12 (or below 1) roll into other years."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=tz)


def year_window(year: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)


def season(name: str, year: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    """A meteorological season: summer 2023 is June to August, winter 2022 December to February."""
    first = SEASONS[name]
    return month_start(year, first, tz), month_start(year, first + 3, tz)
