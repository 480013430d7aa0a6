"""Time expressions (English and Chinese) resolved to windows against a reference time.

One place for relative time, shared by the write side (a turn's "yesterday" becomes a date)
and the read side (a question's "last week" becomes a filter window). Windows are half-open,
``[start, end)``, in the reference time's timezone (UTC when it is naive; see
`engramdb.model.normalize_timestamp`). Weeks are ISO calendar weeks (Monday to Sunday);
seasons are northern-hemisphere meteorological seasons (summer = June to August).
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from . import timeparts
from .dates import EN_NUMBERS as _EN_NUMBERS
from .dates import month_start as _month_start
from .dates import season as _season
from .dates import year_window as _year
from .dates import zh_number as _zh_number

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
# A vague count ("a few days ago", "几天前", "the other day") is a span of counts, not one.
_VAGUE_EN = {"a few": (2, 6), "few": (2, 6), "several": (2, 6), "a couple of": (2, 3), "couple of": (2, 3)}
_VAGUE_ZH = (2, 6)  # 几
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval ``[start, end)`` and the expression it came from."""

    start: datetime
    end: datetime
    expression: str
    kind: str = ""  # which pattern matched, e.g. "day_word", "month_only"
    part: bool = False  # narrowed to a part of its period ("early May", "上周末"; timeparts.py)

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    def searched(self) -> tuple[datetime, datetime]:
        """The window a search boosts. A part of a period ("the first weekend of August", "the
        end of last month") is mostly told about in the days around it — planned up to a week
        before, reported up to two weeks after — so its window is that much wider; otherwise
        the window itself."""
        if not self.part or self.start.year <= 1 or self.end.year >= 9999:
            return self.start, self.end
        return self.start - _PLANNED_BEFORE, self.end + _REPORTED_AFTER


# LoCoMo R@10 (the six questions naming a part of a month or season): turns 0.733 with the
# part alone, 0.735 with these days around it; turns + facts 0.768 / 0.770 (docs/BENCHMARKS.md).
_PLANNED_BEFORE, _REPORTED_AFTER = timedelta(days=7), timedelta(days=14)


def _en_count(word: str) -> int:
    """"3", "two", "a couple of", "a few" as a number."""
    return int(word) if word.isdigit() else _EN_NUMBERS[word.removeprefix("a ") if word.startswith("a ") else word]


def _day(ref: datetime, offset: int = 0) -> datetime:
    base = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    return base + timedelta(days=offset)


def _month(year: int, month: int, tz: tzinfo | None) -> tuple[datetime, datetime]:
    return _month_start(year, month, tz), _month_start(year, month + 1, tz)


def _week(ref: datetime, offset: int) -> tuple[datetime, datetime]:
    monday = _day(ref, -ref.weekday()) + timedelta(weeks=offset)
    return monday, monday + timedelta(weeks=1)


def _shift_months(ref: datetime, months: int) -> datetime:
    month_index = ref.month - 1 + months
    year, month = ref.year + month_index // 12, month_index % 12 + 1
    day = min(ref.day, [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31, 30,
                        31, 31, 30, 31, 30, 31][month - 1])
    return ref.replace(year=year, month=month, day=day)


_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_COUNT_EN = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|couple of|a few|few|several"
_COUNT_ZH = r"[\d零一二两三四五六七八九十几半]+"
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "个星期": "week", "礼拜": "week",
             "个礼拜": "week", "个月": "month", "年": "year"}
_UNIT_ZH = "|".join(sorted(_ZH_UNITS, key=len, reverse=True))
_MONTH_ZH = r"1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九]"  # 3, 12, 三, 十二
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # "between April and May (2023)", "from March to June": both months, not the first alone.
    (re.compile(rf"\b(?:between|from)\s+({_MONTH_RE})\.?(?:\s+(\d{{4}}))?\s+(?:and|to|till|until|through|thru|-|–)\s+"
                rf"({_MONTH_RE})\b\.?(?:,?\s+(\d{{4}})\b)?"), "month_range"),
    # Quarters, hours, fixed-date holidays, 年初 (timeparts.py): before the years they name.
    *timeparts.PATTERNS,
    # A rolling span up to today: "the past month", "over the last 10 days", "past two weeks"
    # (not "the last two weeks of August"; "last week" without a count is the calendar week).
    (re.compile(rf"\b(the\s+)?(past|last|previous)\s+(?:({_COUNT_EN})\s+)?(day|week|fortnight|month|year)s?\b"
                r"(?!\s+of\b)"), "rolling"),
    (re.compile(r"\bthe\s+(week|month|year)\s+before\s+last\b"), "before_last"),
    (re.compile(r"\bthe\s+other\s+day\b"), "other_day"),
    # "over the weekend": the latest weekend begun by then (a question asks of the past; the
    # restater leaves it, since in speech it may lie ahead).
    (re.compile(r"\b(?:over|during)\s+the\s+weekend\b"), "weekend_recent"),
    # "March last year", "in March of last year", "March 5 last year", "5 March next year": that
    # year's month or day (as 去年三月), before "March 5" and "last year" claim their parts.
    (re.compile(rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?({_MONTH_RE})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?"
                r",?\s+(?:of\s+)?(last|this|next)\s+year\b"), "month_rel_year"),
    (re.compile(r"\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?(last|this|next)\s+year\b"), "season_rel_year"),
    # "last March": the latest March over by now (asked in March, last year's; "last Thursday"
    # and "last summer" read alike); "next March" the first to begin; "this March" this year's.
    (re.compile(rf"\b(last|this|next)\s+({'|'.join(m for m in _MONTHS if len(m) > 3 or m == 'may')})\b"
                r"(?!['’]s\b)(?!\s*,?\s*\d)"), "month_rel"),
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "iso_date"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_RE})\.?,?\s+(\d{{4}})\b"), "day_month_year"),
    (re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"), "month_day_year"),
    # Day and month without a year ("on 12 April", "May 3rd"): the nearest such date.
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b(?!\.?,?\s*\d)"), "day_month"),
    (re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\s*,?\s*\d)(?!\s*(?:am|pm|%|years?|days?))"),
     "month_day"),
    (re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]"), "iso_date"),
    (re.compile(r"(\d{4})年(\d{1,2})月"), "year_month_zh"),
    # 今年3月 / 去年十二月 / 去年12月5日: that year's month (or day), not the whole year.
    (re.compile(rf"(去年|今年|明年|前年)\s*({_MONTH_ZH})月"
                r"(\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[日号]"), "rel_year_day_zh"),
    (re.compile(rf"(去年|今年|明年|前年)\s*({_MONTH_ZH})月份?"), "rel_year_month_zh"),
    # 最近三天 / 过去两周 / 近一个月 / 这几天: a rolling span up to today.
    (re.compile(rf"(?:最近|过去|(?<!附)近|这)的?\s*({_COUNT_ZH})\s*({_UNIT_ZH})"), "rolling_zh"),
    (re.compile(r"前几天|这几天"), "few_days_zh"),
    (re.compile(r"(?<![\d年])(\d{1,2})月(\d{1,2})[日号]"), "month_day_zh"),
    (re.compile(rf"\b({_MONTH_RE})\.?,?\s+(\d{{4}})\b"), "month_year"),
    (re.compile(r"(去年|今年|明年|前年)?(春天|夏天|秋天|冬天|春季|夏季|秋季|冬季)"), "season_zh"),
    # A month alone needs a preposition ("may" is also a verb): the latest such month up to ref.
    (re.compile(rf"\b(?:in|during|since|early|mid|late|last|before|after|until|till|by|from|between|through|of)"
                rf"(?:\s+|\s*-\s*)({'|'.join(m for m in _MONTHS if len(m) > 3 or m == 'may')})\b(?!['’]s\b)"
                r"(?!\s*,?\s*\d)"), "month_only"),
    (re.compile(r"\b(last|this|next)\s+(spring|summer|autumn|fall|winter)\b"), "season_rel"),
    (re.compile(r"\b(before|after|since|until|till|by)\s+(\w+\s+)?(\d{4})\b"), "bound_year"),
    (re.compile(r"(\d{4})年(之前|以前|前|之后|以后|后)"), "bound_year_zh"),
    (re.compile(r"\b(?:in|during|of)\s+(\d{4})\b|\b(\d{4})\s*年(?!\d)"), "year"),
    (re.compile(rf"\b({_COUNT_EN})\s+(day|week|fortnight|month|year)s?\s+(ago|later|from now)\b"), "n_ago"),
    # "in two weeks", "in a month's time": that far ahead, unless the clause makes it a duration
    # or a rate ("I learned it in two weeks", "three times in a week": `_DURATION_EN`).
    (re.compile(rf"\bin\s+(?:another\s+|about\s+|just\s+)?({_COUNT_EN})\s+(day|week|fortnight|month|year)s?"
                r"(?:['’]s?\s+time)?\b"), "n_in"),
    # The number starts where a run of numerals starts: retried from inside the run it would
    # rescan the same run from every position (quadratic on a long run of digits).
    (re.compile(rf"(?<![\d零一二两三四五六七八九十几半])({_COUNT_ZH})\s*({_UNIT_ZH})(前|以前|之前|后|以后|之后)"),
     "n_ago_zh"),
    # 过两天, 再过一个月 ("in two days", "in a month's time"): 过 where a clause or its subject
    # starts or after a verb of intent (打算 / 准备 / 计划 / 要 / 想 过两天去), not after another
    # verb (学过两天: "studied for two days") or in 超过 / 经过 / 度过; 再过 after anything
    # (什么事情再过一个月发生).
    (re.compile(rf"(?:再\s*|(?<![^\s，。！？；：、,.!?;:“”\"等我你他她它们咱就那算备划要想]))过\s*({_COUNT_ZH})\s*({_UNIT_ZH})"
                r"(?![前后])"), "n_in_zh"),
    (re.compile(r"\b(the\s+day\s+before\s+yesterday|the\s+day\s+after\s+tomorrow|yesterday|today|tonight|"
                r"tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))\b"), "day_word"),
    (re.compile(r"(大前天|大后天|前天|昨天|昨晚|今天|今晚|明天|后天)"), "day_word_zh"),
    (re.compile(r"\b(last|this|next|past)\s+(week|weekend|month|year)\b"), "rel_unit"),
    (re.compile(r"\b(last|this|next|on)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"), "weekday"),
    (re.compile(r"(上上|上个|上|这个|这|本|下个|下)(?:周|星期|礼拜)([一二三四五六日天])"), "weekday_zh"),
    # 周六 alone (not 每周六, 一周一次, or a range 周一到周五: habits); resolved by its verb's tense
    (re.compile(r"(?<![每上下这本个一二两三四五六七八九十几\d到至~\-—])(?:周|星期|礼拜)([一二三四五六日天])"
                r"(?![一二三四五六日天次]|\s*[到至~\-—])"), "weekday_bare_zh"),
    (re.compile(r"(上上个|上上|上个|上|这个|这|本|下下个|下下|下个|下)(周|星期|礼拜|月)|(去年|今年|明年|前年)"), "rel_unit_zh"),
    # A month alone ("12月", "十二月份"): as "in December", the latest such month up to ref. Last,
    # so a date, "3个月前" or "下个月" has claimed its characters first. Spelled in numerals it may
    # run into the next word ("三月我去了…", "我三月去了…"), but not into the words it makes with
    # what follows: 五月天 is a band, 五月花 the Mayflower, 六月雪 and 二月兰 plants, 十月怀胎 and
    # 七月流火 idioms, 一月一次 a rate (and 三月五日 a date, read above).
    (re.compile(r"(?<![\d零一二两三四五六七八九十年个每第])(1[0-2]|0?[1-9])月份?(?![\d日号天次])"), "month_only_zh"),
    (re.compile(r"(?<![\d零一二两三四五六七八九十年个每第])(十[一二]?|[一二三四五六七八九])月"
                r"(?:份|(?![天次雪兰花怀流光饼亮球票薪日号零一二两三四五六七八九十\d]|[之以]?[前后]天))"), "month_only_zh"),
]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_DAY_WORDS = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1,
              "the day after tomorrow": 2, "last night": -1, "this morning": 0, "this afternoon": 0, "this evening": 0, "大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0,
              "明天": 1, "后天": 2, "大后天": 3}
_REL = {"last": -1, "past": -1, "this": 0, "next": 1, "上上个": -2, "下下个": 2, "下下": 2, "上上": -2, "上个": -1, "上": -1, "这个": 0, "这": 0, "本": 0,
        "下个": 1, "下": 1, "去年": -1, "今年": 0, "明年": 1, "前年": -2}


def _nearest_day(month: int, day: int, ref: datetime) -> tuple[datetime, datetime] | None:
    """A day and month said without a year: the nearest such date to `ref` (30 December said
    on 3 January is the one four days before, not the one a year on)."""
    candidates = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            candidates.append(datetime(year, month, day, tzinfo=ref.tzinfo))
        except ValueError:
            continue
    if not candidates:
        return None
    start = min(candidates, key=lambda c: abs((c - ref).total_seconds()))
    return start, start + timedelta(days=1)


def _ym(moment: datetime) -> tuple[int, int]:
    return moment.year, moment.month


def _span_back(ref: datetime, unit: str, lo: float, hi: float, sign: int = -1) -> tuple[datetime, datetime]:
    """The periods `lo` to `hi` units before (`sign` -1) or after `ref`, whole: days, calendar
    weeks, months or years. A fortnight is two weeks; half a month (半个月) the week 15 days
    away, half a year (半年) the month six months away."""
    tz = ref.tzinfo
    if unit == "fortnight":
        unit, lo, hi = "week", lo * 2, hi * 2
    if lo != int(lo) and unit == "month":
        ref, unit, lo, hi = ref + timedelta(days=sign * 15), "week", 0, 0
    elif lo != int(lo) and unit == "year":
        unit, lo, hi = "month", lo * 12, hi * 12
    near, far = sign * int(lo), sign * int(hi)
    if unit == "day":
        a, b = (_day(ref, near), _day(ref, near) + timedelta(days=1)), (_day(ref, far), _day(ref, far) + timedelta(days=1))
    elif unit == "week":
        a, b = _week(ref + timedelta(weeks=near), 0), _week(ref + timedelta(weeks=far), 0)
    elif unit == "month":
        a, b = _month(*_ym(_shift_months(ref, near)), tz), _month(*_ym(_shift_months(ref, far)), tz)
    else:
        a, b = _year(ref.year + near, tz), _year(ref.year + far, tz)
    return min(a[0], b[0]), max(a[1], b[1])


def _rolling(ref: datetime, unit: str, count: float) -> tuple[datetime, datetime]:
    """The `count` units up to and including today: "the past month" is the last 30 days."""
    if unit == "month":  # calendar months back (a fortnight, a week: _UNIT_DAYS)
        whole = int(count)
        start = _shift_months(ref, -whole) - timedelta(days=round((count - whole) * 30))
    else:
        start = ref - timedelta(days=_UNIT_DAYS[unit] * count)
    return _day(start), _day(ref, 1)


def _zh_count(text: str) -> tuple[float, float] | None:
    """A Chinese (or Arabic) count as a range: 三 (3, 3), 几 (2, 6), 半 (0.5, 0.5)."""
    if text == "几":
        return _VAGUE_ZH
    if text == "半":
        return 0.5, 0.5
    number = _zh_number(text)
    return None if number is None else (number, number)


def _resolve(kind: str, m: re.Match[str], ref: datetime) -> tuple[datetime, datetime] | None:
    tz = ref.tzinfo
    g = m.groups()
    if kind == "month_range":
        first, last = _MONTHS[g[0]], _MONTHS[g[2]]
        if g[3]:
            end_year = int(g[3])
        elif g[1]:
            end_year = int(g[1]) + (last < first)
        else:  # the latest such month up to ref
            end_year = ref.year if last <= ref.month else ref.year - 1
        start_year = int(g[1]) if g[1] else end_year - (first > last)
        return _month_start(start_year, first, tz), _month_start(end_year, last + 1, tz)
    if kind == "rolling":
        the, word, count_word, unit = g
        if count_word is None and (word == "last" or (word == "previous" and not the)):
            return None  # "last week", "the last month": the calendar unit (rel_unit)
        if count_word is None:
            count: float = 1
        elif count_word in _VAGUE_EN:
            count = _VAGUE_EN[count_word][1] + 1
        else:
            count = _en_count(count_word)
        return _rolling(ref, unit, count)
    if kind == "rolling_zh":
        counts = _zh_count(g[0])
        if counts is None:
            return None
        vague = g[0] == "几"
        return _rolling(ref, _ZH_UNITS[g[1]], counts[1] + 1 if vague and _ZH_UNITS[g[1]] == "day" else counts[1])
    if kind == "before_last":
        if g[0] == "week":
            return _week(ref, -2)
        if g[0] == "month":
            return _month(*_ym(_shift_months(ref, -2)), tz)
        return _year(ref.year - 2, tz)
    if kind == "weekend_recent":
        saturday = _week(ref, 0 if ref.weekday() >= 5 else -1)[0] + timedelta(days=5)
        return saturday, saturday + timedelta(days=2)
    if kind in ("other_day", "few_days_zh"):  # "the other day", 前几天: a few days back
        return _day(ref, -7 if kind == "other_day" else -_VAGUE_ZH[1]), _day(ref, 0)
    if kind in ("rel_year_month_zh", "rel_year_day_zh"):
        month = int(g[1]) if g[1].isdigit() else _zh_number(g[1])
        if month is None or not 1 <= month <= 12:
            return None
        year = ref.year + _REL[g[0]]
        if kind == "rel_year_month_zh":
            return _month(year, month, tz)
        day_of_month = int(g[2]) if g[2].isdigit() else _zh_number(g[2])
        if day_of_month is None:
            return None
        start = datetime(year, month, day_of_month, tzinfo=tz)
        return start, start + timedelta(days=1)
    if kind == "month_rel_year":
        year, month, day = ref.year + _REL[g[3]], _MONTHS[g[1]], g[0] or g[2]
        if day is None:
            return _month(year, month, tz)
        start = datetime(year, month, int(day), tzinfo=tz)
        return start, start + timedelta(days=1)
    if kind == "season_rel_year":
        return _season(g[0], ref.year + _REL[g[1]], tz)
    if kind == "month_rel":
        month = _MONTHS[g[1]]
        if g[0] == "last":
            return _month(ref.year if month < ref.month else ref.year - 1, month, tz)
        if g[0] == "next":
            return _month(ref.year if month > ref.month else ref.year + 1, month, tz)
        return _month(ref.year, month, tz)
    if kind == "iso_date":
        start = datetime(int(g[0]), int(g[1]), int(g[2]), tzinfo=tz)
        return start, start + timedelta(days=1)
    if kind == "day_month_year":
        start = datetime(int(g[2]), _MONTHS[g[1]], int(g[0]), tzinfo=tz)
        return start, start + timedelta(days=1)
    if kind == "month_day_year":
        start = datetime(int(g[2]), _MONTHS[g[0]], int(g[1]), tzinfo=tz)
        return start, start + timedelta(days=1)
    if kind == "month_day_zh":
        return _nearest_day(int(g[0]), int(g[1]), ref)
    if kind == "year_month_zh":
        return _month(int(g[0]), int(g[1]), tz)
    if kind == "month_year":
        return _month(int(g[1]), _MONTHS[g[0]], tz)
    if kind in ("day_month", "month_day"):
        day, name = (g[0], g[1]) if kind == "day_month" else (g[1], g[0])
        return _nearest_day(_MONTHS[name], int(day), ref)
    if kind in ("month_only", "month_only_zh"):
        month = _MONTHS[g[0]] if kind == "month_only" else _zh_number(g[0])
        if month is None or not 1 <= month <= 12:
            return None
        if _ahead(m):  # "What will I do in March?", 三月份的计划: the next March not over yet
            return _month(ref.year if month >= ref.month else ref.year + 1, month, tz)
        year = ref.year if month <= ref.month else ref.year - 1
        return _month(year, month, tz)
    if kind == "year":
        return _year(int(g[0] or g[1]), tz)
    if kind == "season_zh":
        return _season(g[1], ref.year + _REL[g[0]] if g[0] else ref.year, tz)
    if kind == "season_rel":
        # The seasons named around ref, oldest first (a winter runs into the next year).
        seasons = [_season(g[1], year, tz) for year in range(ref.year - 2, ref.year + 2)]
        if g[0] == "last":  # the latest one over by now ("last summer" in July is last year's)
            return next(w for w in reversed(seasons) if w[1] <= ref)
        if g[0] == "next":  # the first one still to begin
            return next(w for w in seasons if w[0] > ref)
        # "this winter": the one under way (10 January: the winter that began in December),
        # else this year's
        return next((w for w in seasons if w[0] <= ref < w[1]), _season(g[1], ref.year, tz))
    if kind in ("bound_year", "bound_year_zh"):
        word, year = (g[0], int(g[2])) if kind == "bound_year" else (g[1], int(g[0]))
        return _bounded(_year(year, tz), word)
    if kind == "n_in" and _DURATION_EN.search(_lead(m)):  # what comes after is the next thought
        return None
    if kind in ("n_ago", "n_ago_zh", "n_in", "n_in_zh"):
        if kind in ("n_ago", "n_in"):
            unit, sign = g[1], (-1 if kind == "n_ago" and g[2] == "ago" else 1)
            if g[0] in _VAGUE_EN:  # "a few days ago": two to six days back, not three exactly
                return _span_back(ref, unit, *_VAGUE_EN[g[0]], sign=sign)
            count = _en_count(g[0])
            if unit == "fortnight":
                unit, count = "week", count * 2
        else:
            unit = _ZH_UNITS[g[1]]
            sign = -1 if kind == "n_ago_zh" and g[2] in ("前", "以前", "之前") else 1
            counts = _zh_count(g[0])
            if counts is None:
                return None
            if counts[0] != counts[1] or counts[0] != int(counts[0]):  # 几天前, 半个月前
                return _span_back(ref, unit, *counts, sign=sign)
            count = int(counts[0])
        if unit == "day":
            start = _day(ref, sign * count)
            return start, start + timedelta(days=1)
        if unit == "week":
            return _week(ref + timedelta(weeks=sign * count), 0)
        if unit == "month":
            moved = _shift_months(ref, sign * count)
            return _month(moved.year, moved.month, tz)
        return _year(ref.year + sign * count, tz)
    if kind in ("day_word", "day_word_zh"):
        word = re.sub(r"\s+", " ", g[0])
        start = _day(ref, _DAY_WORDS[word])
        return start, start + timedelta(days=1)
    if kind == "rel_unit":
        offset, unit = _REL[g[0]], g[1]
        if unit == "week":
            return _week(ref, offset)
        if unit == "weekend":
            monday = _week(ref, offset)[0]
            return monday + timedelta(days=5), monday + timedelta(days=7)
        if unit == "month":
            moved = _shift_months(ref, offset)
            return _month(moved.year, moved.month, tz)
        return _year(ref.year + offset, tz)
    if kind == "weekday":
        target = _WEEKDAYS.index(g[1])
        if g[0] == "this":
            start = _week(ref, 0)[0] + timedelta(days=target)
        elif g[0] == "next":  # the next such day after today
            start = _day(ref, (target - ref.weekday() - 1) % 7 + 1)
        elif g[0] == "on" and _HABIT_EN.search(clause := _clause(m)):
            return None  # "I usually start work on Monday": every such day, not one
        elif g[0] == "on" and _FUTURE_EN.search(clause) and not _PAST_EN.search(clause):
            # "I'm flying to Paris on Monday", "remind me on Sunday": the coming one, today included
            start = _day(ref, (target - ref.weekday()) % 7)
        else:  # "last Saturday", and "on Saturday" in a memory: the latest such day before today
            start = _day(ref, -((ref.weekday() - target - 1) % 7 + 1))
        return start, start + timedelta(days=1)
    if kind == "weekday_zh":
        target = "一二三四五六日".index(g[1].replace("天", "日"))
        start = _week(ref, _REL[g[0]])[0] + timedelta(days=target)
        return start, start + timedelta(days=1)
    if kind == "weekday_bare_zh":
        # 周六 alone says which day but not which week; the verb does: 要 / 打算 / 准备 the coming
        # one (today included), 了 / 过 the latest before today; neither, no time (每周六 never).
        target = "一二三四五六日".index(g[0].replace("天", "日"))
        clause = _clause(m)
        if _FUTURE_ZH.search(clause):
            start = _day(ref, (target - ref.weekday()) % 7)
        elif _PAST_ZH.search(clause):
            start = _day(ref, -((ref.weekday() - target - 1) % 7 + 1))
        else:
            return None
        return start, start + timedelta(days=1)
    if kind == "rel_unit_zh":
        if g[2]:
            return _year(ref.year + _REL[g[2]], tz)
        offset = _REL[g[0]]
        if g[1] == "月":
            moved = _shift_months(ref, offset)
            return _month(moved.year, moved.month, tz)
        return _week(ref, offset)
    return None  # pragma: no cover - every pattern kind is handled above


# A bound on a time ("before June 2023", "since May", "until 7 May", "2023年5月之后"): the word
# right before the expression (or, for a month alone, opening it), or in Chinese right after.
_BOUND_BEFORE = re.compile(r"\b(before|after|since|until|till|by)\s+(?:the\s+)?$")
_BOUND_OPENING = re.compile(r"(before|after|since|until|till|by)\b")  # matched at the expression's start
_BOUND_AFTER = re.compile(r"\s*(之前|以前|之后|以后|以来|前(?!天)|后(?!天))")  # matched right after it
_EARLIEST, _LATEST = datetime(1, 1, 1), datetime(9999, 1, 1)
# Already bounds, or spans a bound word does not open ("from March to June", "the past month").
_PART_KINDS = frozenset(kind for _, kind in timeparts.PATTERNS)
_BOUNDED_KINDS = frozenset({"bound_year", "bound_year_zh", "month_range", "rolling", "rolling_zh", "other_day",
                            "few_days_zh", "hours", "hours_zh"})


def _bounded(window: tuple[datetime, datetime], word: str) -> tuple[datetime, datetime]:
    """`window` as the open interval a bound word makes of it."""
    tz = window[0].tzinfo
    lo, hi = window
    if word in ("before", "之前", "以前", "前"):
        return _EARLIEST.replace(tzinfo=tz), lo
    if word in ("until", "till", "by"):
        return _EARLIEST.replace(tzinfo=tz), hi
    if word in ("after", "之后", "以后", "后"):
        return hi, _LATEST.replace(tzinfo=tz)
    return lo, _LATEST.replace(tzinfo=tz)  # since


# "the week before 3 August", "the Monday before 24 July", "two weeks before 11 August": an
# anchored span next to the date, not everything before it.
_ANCHOR = re.compile(r"\b(?:(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few)\s+)?"
                     r"(day|night|morning|evening|week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|"
                     r"saturday|sunday)s?\s+(before|after)\s+(?:the\s+)?$")
_ANCHOR_DAYS = {"day": 1, "night": 1, "morning": 1, "evening": 1, "week": 7, "weekend": 7, "month": 31, "year": 366}


def _anchored(window: tuple[datetime, datetime], word: str, count: int, unit: str) -> tuple[datetime, datetime]:
    """The span of `count` units (a weekday: a week) right before or after `window`, and the
    window itself: "the week before 3 August" is most often what was told on 3 August (LoCoMo
    asks that way of what a session dated 3 August says about the week before)."""
    span = timedelta(days=_ANCHOR_DAYS.get(unit, 7) * count)
    lo, hi = window
    return (lo - span, hi) if word == "before" else (lo, hi + span)


# A named day keeps its point window under a bound ("by 10 July 2022"): in a conversation
# store everything lies before it, so an open window would lift every turn alike, while the
# day is where what is asked was said. A month, a season or a year becomes the open interval.
_DAY_KINDS = frozenset({"rel_year_day_zh", "iso_date", "day_month_year", "month_day_year", "day_month", "month_day", "month_day_zh",
                        "day_word", "day_word_zh", "weekday", "weekday_zh", "weekday_bare_zh"})


def _bound(lowered: str, start: int, end: int, window: tuple[datetime, datetime],
           kind: str) -> tuple[datetime, datetime]:
    """`window`, or what the bound or anchor words around it make of it."""
    anchor = _ANCHOR.search(lowered, max(0, start - 40), start)
    if anchor:
        count = 1 if anchor.group(1) is None else _en_count(anchor.group(1))
        return _anchored(window, anchor.group(3), count, anchor.group(2))
    if kind in _DAY_KINDS:
        return window
    before = _BOUND_BEFORE.search(lowered, max(0, start - 12), start)
    opening = _BOUND_OPENING.match(lowered, start, end)
    after = _BOUND_AFTER.match(lowered, end, end + 4)
    found = before or opening or after
    return _bounded(window, found.group(1)) if found else window


def find_time_windows(text: str, ref: datetime, bounds: bool = True) -> list[TimeWindow]:
    """Every time expression in `text`, resolved against `ref`, in order of appearance.

    Expressions do not overlap: the most specific pattern (a full date before a month before
    a year) claims its characters first. With `bounds`, a bound word makes an open interval of
    a month, season or year ("before June 2023": up to 1 June; "since May": from 1 May on), and
    a unit before the bound a span next to a day ("the week before 3 August": 27 July to
    3 August, that day included); a year's bound always does ("before 2022").
    """
    if ref.tzinfo is None:
        ref = ref.replace(tzinfo=timezone.utc)
    lowered = text.lower()
    # Spans claimed by earlier patterns: disjoint, sorted by start (`starts` mirrors `taken`).
    taken: list[tuple[int, int]] = []
    starts: list[int] = []
    found: list[tuple[int, TimeWindow]] = []
    for pattern, kind in _PATTERNS:
        claimed: list[tuple[int, int]] = []  # this pattern's matches never overlap each other
        for m in pattern.finditer(lowered):
            if _overlaps(taken, starts, m.start(), m.end()):
                continue
            try:
                window = timeparts.resolve(kind, m, ref, ahead=kind in _AHEAD_KINDS and _ahead(m)) \
                    if kind in _PART_KINDS else _resolve(kind, m, ref)
            except (ValueError, KeyError, OverflowError):
                continue  # "31 February", "99999999999 days ago" and the like: not a date
            if window is not None:
                start, end = m.start(), m.end()
                # "early May", "the end of last month", "5月底", "上周末": that part of it.
                original = window
                part, at, until = timeparts.narrowed(lowered, start, end, window)
                narrow = part != window and not (_overlaps(taken, starts, at, until)
                                                 or (claimed and claimed[-1][1] > at))
                if narrow:
                    window, start, end = part, at, until
                if bounds and kind not in _BOUNDED_KINDS:
                    window = _bound(lowered, start, end, window, kind)
                claimed.append((start, end))
                # A week's end (上周末) is a weekend as exact as "last weekend", not a vague part.
                weekend = narrow and _is_week_weekend(original, window)
                found.append((start, TimeWindow(window[0], window[1], text[start:end], kind,
                                                      (narrow and not weekend) or kind == "year_part_zh")))
        if claimed:
            taken = list(heapq.merge(taken, claimed))
            starts = [s for s, _ in taken]
    return [w for _, w in sorted(found, key=lambda item: item[0])]


# What says a weekday named alone is still to come: a future or a plan in its clause ("I'm
# flying", "we are meeting", "will", "going to", "remind me"); a present "is/are on" states a
# schedule ("the party is on Friday"), and so does a timetable verb or a booking in the present
# ("my sister arrives on Sunday", "I have a dentist appointment on Wednesday"). Chinese: 要 / 会 / 打算 / 准备 / 想 / 计划; 了 / 过 for the past.
_FUTURE_EN = re.compile(r"\b(?:will|shall|won't|going to|gonna|plan(?:s|ning)? to|about to|remind|"
                        r"(?:am|are|is|i'm|we're|you're|they're|he's|she's)\s+(?:\w+\s+)?\w+ing|"
                        r"(?:is|are)\s+(?:\w+\s+){0,2}on\s+\w+day|"
                        # a timetable in the present: "my sister arrives on Sunday", "we leave on Monday"
                        r"(?:arrives?|leaves?|starts?|begins?|departs?|lands?|flies|opens?|closes?|ends?)|"
                        # something booked: "I have a dentist appointment on Wednesday"
                        r"(?:have|has|i've|we've)\s+(?:got\s+)?(?:a|an|my|the|our|his|her|their)\s+(?:\w+\s+){0,2}"
                        r"(?:appointment|meeting|exam|interview|flight|class|lesson|date|party|game|match|deadline|"
                        r"test|surgery|check-?up|call|shift))\b|\w['’]ll\b")
# ... unless the clause says what happened ("I'm telling you, on Sunday we went to the beach")
_PAST_EN = re.compile(r"\b(?:went|was|were|did|had|got|came|saw|took|made|met|visited|yesterday|ago)\b")
# ... and a habit names no one day ("I usually start work on Monday", "we always eat out on Friday")
# ... and "in <count> <unit>" is a duration or a rate, not a time ahead, after words that say
# what was done ("I learned to swim in two weeks"), what has not been ("we haven't talked in a
# few days") or how often ("three times in a week").
_DURATION_EN = re.compile(r"\b(?:went|was|were|did|had|got|came|took|made|finished|completed|learned|learnt|built|"
                          r"managed|lost|gained|wrote|written|done|within|once|twice|times|per|every|not|never)\b|"
                          r"n['’]t\b")
_HABIT_EN = re.compile(r"\b(?:usually|always|often|normally|generally|typically|sometimes|never|every)\b")
_FUTURE_ZH = re.compile(r"要|会|打算|准备|想|计划|将")
_PAST_ZH = re.compile(r"了|过")
_CLAUSE_END = re.compile(r"[.!?;。！？；\n]")


# A month or a quarter named alone is the latest one begun ("What did I do in March?"), unless
# its clause speaks of what is to come: a future (`_FUTURE_EN` / `_FUTURE_ZH`) or a plan
# ("the Q3 roadmap", "goals for Q2", 三月份的计划, 安排), and says nothing of the past.
_PLAN_EN = re.compile(r"\b(?:plan(?:s|ned)?|goals?|roadmap|targets?|upcoming|scheduled?|due|deadline|agenda|okrs?)\b")
_PLAN_ZH = re.compile(r"安排|目标|规划|日程")
_AHEAD_KINDS = frozenset({"quarter", "quarter_ordinal", "quarter_zh"})


def _ahead(m: re.Match[str]) -> bool:
    """Whether the clause of a month or quarter named alone speaks of what is to come."""
    clause = _clause(m)
    if _CJK_CLAUSE.search(clause):
        return bool(_FUTURE_ZH.search(clause) or _PLAN_ZH.search(clause)) and not _PAST_ZH.search(clause)
    return bool(_FUTURE_EN.search(clause) or _PLAN_EN.search(clause)) and not _PAST_EN.search(clause) \
        and not _HABIT_EN.search(clause)


_CJK_CLAUSE = re.compile(r"[\u4e00-\u9fff]")


def _lead(m: re.Match[str]) -> str:
    """The clause before the match `m` (at most 80 characters)."""
    before = m.string[max(0, m.start() - 80):m.start()]
    ends = list(_CLAUSE_END.finditer(before))
    return before[ends[-1].end() if ends else 0:]


def _clause(m: re.Match[str]) -> str:
    """The clause around the match `m` (at most 80 characters each way), the match included."""
    after = m.string[m.end():m.end() + 80]
    stop = _CLAUSE_END.search(after)
    return _lead(m) + m.group(0) + (after[:stop.start()] if stop else after)


def _is_week_weekend(week: tuple[datetime, datetime], part: tuple[datetime, datetime]) -> bool:
    """Whether `part` is the Saturday and Sunday of the seven-day window `week`."""
    return (week[1] - week[0] == timedelta(days=7) and part[1] - part[0] == timedelta(days=2)
            and part[0].weekday() == 5 and part[1] == week[1])


def _overlaps(taken: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    """Whether [start, end) overlaps a span of `taken` (disjoint spans sorted by start).

    Only the last span starting before `end` can overlap: disjoint spans sorted by start are
    sorted by end too. A bisection, not a scan of every span (quadratic in the number of
    expressions for a query that repeats one thousands of times).
    """
    at = bisect.bisect_left(starts, end) - 1
    return at >= 0 and taken[at][1] > start


def parse_time_window(text: str, ref: datetime) -> TimeWindow | None:
    """The window covering every time expression in `text` (their hull), or None."""
    windows = find_time_windows(text, ref)
    if not windows:
        return None
    return TimeWindow(min(w.start for w in windows), max(w.end for w in windows),
                      " … ".join(w.expression for w in windows))
