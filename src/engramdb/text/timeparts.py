"""Parts of periods and named periods, for `engramdb.text.timeparse`.

* Parts: a month, a year or a week narrowed by the words around it — "early May", "mid-April",
  "the end of last month", "the first week of June", "the second half of 2022", "5月初",
  "这个月中旬", "去年底", "今年年初", "上半年", "上周末". A month's early / mid / late part is its
  days 1–10 / 11–20 / 21 on, its first to fourth week days 1–7 … 22–28, its last week its
  last seven days, its first … last weekend that Saturday and Sunday; a year's early part is January to March, its middle May to August, its late
  part (年底, "the end of") September to December, its halves January–June and July–December;
  a week's end (上周末) is its weekend, its start Monday to Wednesday (a week's weekend is as
  exact as "last weekend": timeparse does not mark it a part, so a search does not widen it).
* Quarters: "Q1 2023", "the third quarter of 2022", "last quarter", "2023年第一季度", "上个季度".
  A quarter without a year is the latest one begun by the reference time.
* Seasons with a year: "spring 2022", "the summer of 2021" (meteorological, as in timeparse).
* Hours: "the past 48 hours", "the last hour", "过去24小时" — from that many hours back to the
  end of today.
* Fixed-date holidays: Christmas (24–26 December; Christmas Eve the 24th), New Year's Eve, New
  Year's Day (元旦), "New Year" (31 December to 1 January), Valentine's Day (情人节), Halloween
  (万圣节), 国庆节 (1–7 October), Thanksgiving (the fourth Thursday of November to its Sunday);
  with a year ("Christmas 2022", "去年国庆"), "last / this / next", or else the latest one begun
  by the reference time. Lunar holidays (春节, 中秋) move with the calendar and are not read.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from .dates import EN_NUMBERS, month_start, season, year_window, zh_number

Window = tuple[datetime, datetime]

# Hours come in other counts than days: "several hours" is most of a morning.
_COUNT_EN = {**EN_NUMBERS, "twelve": 12, "twenty-four": 24, "a few": 3, "several": 6, "a couple of": 2}
_ORDINAL = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
            "last": 4, "final": 4, "一": 1, "1": 1, "二": 2, "2": 2, "三": 3, "3": 3, "四": 4, "4": 4}
_REL_YEAR_ZH = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
_REL_EN = {"last": -1, "previous": -1, "this": 0, "next": 1, "上个": -1, "上": -1, "这个": 0, "本": 0, "下个": 1,
           "下": 1}
_ZH_NUMBER = r"\d+|[一二两三四五六七八九十]+"

# (month, day, length in days) of each fixed-date holiday, by the names it goes by.
_HOLIDAYS: dict[str, tuple[int, int, int]] = {
    "christmas eve": (12, 24, 1), "平安夜": (12, 24, 1),
    "christmas": (12, 24, 3), "xmas": (12, 24, 3), "圣诞节": (12, 24, 3), "圣诞": (12, 24, 3),
    "new year's eve": (12, 31, 1), "new years eve": (12, 31, 1), "除夕夜": (12, 31, 1),
    "new year's day": (1, 1, 1), "new years day": (1, 1, 1), "元旦": (1, 1, 1),
    "new year": (12, 31, 2), "new year's": (12, 31, 2), "跨年": (12, 31, 2),
    "valentine's day": (2, 14, 1), "valentines day": (2, 14, 1), "valentine's": (2, 14, 1), "情人节": (2, 14, 1),
    "halloween": (10, 31, 1), "万圣节": (10, 31, 1),
    "国庆节": (10, 1, 7), "国庆": (10, 1, 7), "十一长假": (10, 1, 7),
    "thanksgiving": (11, 0, 4),  # day 0: the fourth Thursday
}
_HOLIDAY_EN = "|".join(re.escape(h) for h in sorted((h for h in _HOLIDAYS if h.isascii()), key=len, reverse=True))
_HOLIDAY_ZH = "|".join(sorted((h for h in _HOLIDAYS if not h.isascii()), key=len, reverse=True))

#: (pattern, kind), tried by `timeparse` before its own month and year patterns.
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th|last|final)\s+quarter\s+(?:of\s+)?(\d{4})\b"),
     "quarter_of_year"),
    (re.compile(r"\bq([1-4])(?:\s+(?:of\s+)?(\d{4}))?\b"), "quarter"),
    (re.compile(r"\b(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\b"), "quarter_ordinal"),
    (re.compile(r"\b(last|previous|this|next)\s+quarter\b"), "quarter_rel"),
    (re.compile(r"(?:(\d{4})\s*年|(前年|去年|今年|明年))?的?第?([一二三四1-4])季度"), "quarter_zh"),
    (re.compile(r"(上个|上|这个|本|下个|下)季度"), "quarter_rel_zh"),
    (re.compile(r"\b(?:the\s+)?(?:past|last|previous)\s+(?:(\d+|a couple of|couple of|a few|few|several|one|two|three|"
                r"four|five|six|seven|eight|nine|ten|twelve|twenty-four)\s+)?hours?\b"), "hours"),
    # One run of spaces (two optional ones around an optional count would split a long run every way).
    (re.compile(rf"(?:过去|最近|近)的?\s*(?:({_ZH_NUMBER}|几)\s*)?个?(?:小时|钟头)"), "hours_zh"),
    (re.compile(r"\b(?:the\s+)?(spring|summer|autumn|fall|winter)\s+(?:of\s+)?(\d{4})\b"), "season_year"),
    (re.compile(rf"\b(?:(last|this|next)\s+)?({_HOLIDAY_EN})(?:\s+(?:of\s+)?(\d{{4}}))?(?!\w)"), "holiday"),
    (re.compile(rf"(?:(\d{{4}})\s*年|(前年|去年|今年|明年))?的?({_HOLIDAY_ZH})"), "holiday_zh"),
    # 年初 / 年底 / 上半年 with no year before them: this year's.
    (re.compile(r"(?<![\d年今去明前])(年初|年底|年末|年中|上半年|下半年)"), "year_part_zh"),
]


def _quarter(year: int, n: int, tz: tzinfo | None) -> Window:
    return month_start(year, 3 * n - 2, tz), month_start(year, 3 * n + 1, tz)


def _latest_quarter(ref: datetime, n: int, ahead: bool = False) -> Window:
    """Quarter `n` of the latest year in which it has begun by `ref`; `ahead` (the clause speaks
    of what is to come: "What will we ship in Q3?", 第三季度的计划), the next one not over by `ref`."""
    if ahead:
        return _quarter(ref.year if 3 * n >= ref.month else ref.year + 1, n, ref.tzinfo)
    year = ref.year if 3 * n - 2 <= ref.month else ref.year - 1
    return _quarter(year, n, ref.tzinfo)


def _holiday(name: str, year: int, tz: tzinfo | None) -> Window:
    month, day, days = _HOLIDAYS[name]
    if day == 0:  # Thanksgiving: the fourth Thursday of November
        first = datetime(year, month, 1, tzinfo=tz)
        day = 1 + (3 - first.weekday()) % 7 + 21
    start = datetime(year, month, day, tzinfo=tz)
    return start, start + timedelta(days=days)


def _holiday_near(name: str, ref: datetime, offset: int | None) -> Window:
    """The holiday in `ref`'s year (`offset` 0), the next one to begin after `ref` (1), the one
    before the latest begun (-1), or the latest begun by `ref` (None)."""
    tz = ref.tzinfo
    latest = _holiday(name, ref.year, tz)
    if latest[0] > ref:
        latest = _holiday(name, ref.year - 1, tz)
    if offset is None:
        return latest
    if offset == 0:
        return _holiday(name, ref.year, tz)
    if offset > 0:
        return _holiday(name, latest[0].year + 1, tz)
    # "last Christmas" while it lasts is the one before; after it, the one just gone
    if latest[0] <= ref < latest[1]:
        return _holiday(name, latest[0].year - 1, tz)
    return latest


def resolve(kind: str, m: re.Match[str], ref: datetime, ahead: bool = False) -> Window | None:
    """The window of one of `PATTERNS`' matches (None: not a time after all); `ahead`: its
    clause speaks of what is to come, so a quarter named without a year is the next one."""
    tz = ref.tzinfo
    g = m.groups()
    if kind == "quarter_of_year":
        return _quarter(int(g[1]), _ORDINAL[g[0]], tz)
    if kind == "quarter":
        return _quarter(int(g[1]), int(g[0]), tz) if g[1] else _latest_quarter(ref, int(g[0]), ahead)
    if kind == "quarter_ordinal":
        return _latest_quarter(ref, _ORDINAL[g[0]], ahead)
    if kind in ("quarter_rel", "quarter_rel_zh"):
        index = ref.year * 4 + (ref.month - 1) // 3 + _REL_EN[g[0]]
        return _quarter(index // 4, index % 4 + 1, tz)
    if kind == "quarter_zh":
        n = _ORDINAL[g[2]]
        if g[0]:
            return _quarter(int(g[0]), n, tz)
        if g[1]:
            return _quarter(ref.year + _REL_YEAR_ZH[g[1]], n, tz)
        return _latest_quarter(ref, n, ahead)
    if kind in ("hours", "hours_zh"):
        word = g[0]
        if word is None:
            hours = 1
        elif kind == "hours":
            hours = int(word) if word.isdigit() else _COUNT_EN[word]
        else:
            hours = 6 if word == "几" else (zh_number(word) or 0)
        if not 0 < hours <= 24 * 366:
            return None
        return ref - timedelta(hours=hours), ref.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    if kind == "holiday":
        name = g[1]
        if g[2]:
            return _holiday(name, int(g[2]), tz)
        return _holiday_near(name, ref, None if g[0] is None else _REL_EN[g[0]])
    if kind == "holiday_zh":
        name = g[2]
        if g[0]:
            return _holiday(name, int(g[0]), tz)
        if g[1]:
            return _holiday(name, ref.year + _REL_YEAR_ZH[g[1]], tz)
        return _holiday_near(name, ref, None)
    if kind == "season_year":  # meteorological: winter 2022 is December 2022 to February 2023
        return season(g[0], int(g[1]), tz)
    if kind == "year_part_zh":
        return part_of(year_window(ref.year, tz), m.group(1))
    return None  # pragma: no cover - every kind above is handled


# The part words around a month, a year or a week: English before it, Chinese after it.
_PART_BEFORE = re.compile(
    r"\b(?:(?:the\s+)?(?:very\s+)?(beginning|start|middle|end)\s+of|"
    r"(?:the\s+)?(first|second|third|fourth|last|final)\s+(week|weekend|half)\s+of|"
    r"(early|mid|late))[\s-]*(?:the\s+)?$")
_OF = re.compile(r"of\s+")
_PART_OPENING = re.compile(r"(early|mid|late)[\s-]+")  # inside a match: "early may" (month_only)
# A bare 中 only where no word goes on ("5月中，" but not "这个月中国…").
_PART_AFTER = re.compile(r"的?(年初|年底|年末|年中|上半年|下半年|上半月|下半月|上旬|中旬|下旬|月初|月底|月末|月中|初|底|末|"
                         r"中(?![\u3400-\u9fff]))")
_PART_WORD = {"beginning": "early", "start": "early", "early": "early", "middle": "mid", "mid": "mid",
              "end": "late", "late": "late", "年初": "early", "初": "early", "月初": "early", "上旬": "early",
              "年中": "mid", "月中": "mid", "中旬": "mid", "中": "mid", "年底": "late", "年末": "late", "底": "late",
              "末": "late", "月底": "late", "月末": "late", "下旬": "late", "上半年": "half1", "上半月": "half1",
              "下半年": "half2", "下半月": "half2"}
_YEAR_ONLY = frozenset({"年初", "年底", "年末", "年中", "上半年", "下半年"})
_MONTH_ONLY = frozenset({"上半月", "下半月", "上旬", "中旬", "下旬", "月初", "月底", "月末", "月中"})


def _shape(window: Window) -> str | None:
    """Whether `window` is exactly a calendar month, year or (ISO) week."""
    start, end = window
    if (start.hour, start.minute, start.second, start.microsecond) != (0, 0, 0, 0):
        return None
    if end - start == timedelta(days=7) and start.weekday() == 0:
        return "week"
    if start.day != 1 or end.day != 1:
        return None
    months = (end.year - start.year) * 12 + end.month - start.month
    if months == 1:
        return "month"
    if months == 12 and start.month == 1:
        return "year"
    return None


def part_of(window: Window, word: str, week: int | None = None) -> Window | None:
    """The part `word` names ("early", "late", "末", "上半年", "week" with its `week` number,
    "half" …) of a month, year or week window; None if that part does not apply to it."""
    shape = _shape(window)
    start, end = window
    part = word if word in ("week", "weekend") else _PART_WORD.get(word, word)
    if shape is None or (word in _YEAR_ONLY and shape != "year") or (word in _MONTH_ONLY and shape != "month"):
        return None
    tz = start.tzinfo

    if shape == "week":
        return {"early": (start, start + timedelta(days=3)), "late": (start + timedelta(days=5), end)}.get(part)
    if shape == "year":
        spans = {"early": (1, 4), "mid": (5, 9), "late": (9, 13), "half1": (1, 7), "half2": (7, 13)}
        if part not in spans:
            return None
        first, after = spans[part]
        return month_start(start.year, first, tz), month_start(start.year, after, tz)
    if part == "week" and week is not None:  # a month's first … fourth week, or its last seven days
        return (end - timedelta(days=7), end) if week == 5 else \
            (start + timedelta(days=7 * (week - 1)), start + timedelta(days=7 * week))
    if part == "weekend" and week is not None:  # its first … fourth Saturday and Sunday, or its last
        saturday = start + timedelta(days=(5 - start.weekday()) % 7)
        if week == 5:
            saturday += timedelta(weeks=((end - saturday).days - 1) // 7)
        else:
            saturday += timedelta(weeks=week - 1)
        return saturday, saturday + timedelta(days=2)
    days = {"early": (0, 10), "mid": (10, 20), "half1": (0, 15)}
    if part in days:
        return start + timedelta(days=days[part][0]), start + timedelta(days=days[part][1])
    if part in ("late", "half2"):
        return start + timedelta(days=20 if part == "late" else 15), end
    return None


def narrowed(lowered: str, start: int, end: int, window: Window) -> tuple[Window, int, int]:
    """`window` narrowed by the part words around its expression `lowered[start:end]`, with the
    expression's new span (the words included); unchanged when there are none."""
    # "the end of May": the month pattern's match may open with the "of" that the part ends in
    head = _OF.match(lowered, start, end)
    cut = head.end() if head else start
    before = _PART_BEFORE.search(lowered, max(0, cut - 32), cut)
    opening = _PART_OPENING.match(lowered, start, end)
    after = _PART_AFTER.match(lowered, end, end + 4)
    if before is not None:
        at = before.start()
        if before.group(1):
            part = part_of(window, before.group(1))
        elif before.group(3) in ("week", "weekend"):
            ordinal = before.group(2)
            part = part_of(window, before.group(3), 5 if ordinal in ("last", "final") else _ORDINAL[ordinal])
        elif before.group(3) == "half":
            part = part_of(window, "half1" if before.group(2) == "first" else "half2") \
                if before.group(2) in ("first", "second") else None
        else:
            part = part_of(window, before.group(4))
        if part is not None:
            return part, at, end
    if opening is not None and (part := part_of(window, opening.group(1))) is not None:
        return part, start, end
    if after is not None and (part := part_of(window, after.group(1))) is not None:
        return part, start, after.end()
    return window, start, end
