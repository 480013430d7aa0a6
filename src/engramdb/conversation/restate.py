"""Sentence-level rewriting for the offline extractor: pronouns to names, relative time to dates.

These are the two transformations of SimpleMem's "lossless restatement" that need no model:
first and second person resolve to the speakers of the turn, and relative time
expressions ("yesterday", "last week", "上周") resolve against the turn's own timestamp.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ..text.timeparse import TimeWindow, find_time_windows

_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]

# Third-person singular for verbs that commonly follow "I" in chat ("I love" -> "Caroline loves").
_COMMON_VERBS = set(
    "love like want need think feel hope know enjoy plan work live take make try get play paint run write "
    "believe remember miss wish guess mean see say find keep start use teach study volunteer cook bake draw "
    "sing dance swim hike travel visit prefer agree appreciate admire care understand collect own "
    # ways of getting about, everyday doings and plans (not a verb whose past is its base form,
    # "read"-like, which "I put it away" would wrongly make present: put, cut, hit, set, let, quit)
    "fly drive walk ride cycle move leave come arrive stay buy sell pay spend save rent shop eat drink sleep "
    "meet call text email watch listen talk speak ask tell help share learn practise practice train "
    "exercise jog climb ski surf fish garden knit sew build fix grow wear carry bring send join attend "
    "celebrate look seem wait worry hate adore fear doubt wonder forget expect intend become belong "
    "bike".split()
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "were": "was", "don't": "doesn't",
              "haven't": "hasn't", "aren't": "isn't", "weren't": "wasn't"}
_IRREGULAR |= {k.replace("'", "’"): v.replace("'", "’") for k, v in _IRREGULAR.items() if "'" in k}  # "don’t"


def _third_person(verb: str) -> str:
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower not in _COMMON_VERBS:
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


_VERB_ALTERNATION = "|".join(sorted(_COMMON_VERBS | set(_IRREGULAR), key=len, reverse=True))
# an adverb between "I" and its verb, which agrees all the same ("I usually fly" -> "Ann usually flies")
_ADVERBS = "also|still|usually|often|always|never|really|just|sometimes|only|even|rarely|seldom|finally|now"
# a word after which the verb that follows "I" keeps its base form: a modal or "do" ("Can I go?",
# not "Can Ann goes?"; "Why didn't I go?"); for "Bob and I go" see _COMPOUND_SUBJECT
_BASE_FORM_AFTER = ("can", "could", "will", "would", "shall", "should", "may", "might", "must", "do", "does",
                    "did", "don't", "doesn't", "didn't", "can't", "couldn't", "won't", "wouldn't", "shouldn't")
_CONTRACTIONS = {"m": "am", "ve": "have", "ll": "will", "d": "would", "re": "are"}
# "Bob and I go", "My sister and I are": a sentence that opens with a short subject (a name, a
# pronoun, or "my/the ... " up to three words; optionally after a time word or a phrase and a
# comma) joined to "I" has a plural verb, so it keeps its base form ("Bob and Ann go"). Only at
# the start of a sentence: "and I go" after a clause is a clause of its own ("It is far and I
# go anyway" -> "Ann goes").
_SUBJECT_LEAD = (r"(?:(?:Yesterday|Today|Tonight|Tomorrow|Now|Sometimes|Usually|Often|Every \w+|Last \w+|"
                 r"This \w+|Next \w+|On \w+),?\s+|[A-Z][\w ]{0,30},\s+)?")
# (at most two words after "my"/"the": "The weather is nice and I go" is a clause and a clause;
# a capitalised word that opens a sentence without being a subject is not one: "Yeah and I go")
_NOT_SUBJECTS = ("Yes|Yeah|Yep|No|Nope|Oh|Ok|Okay|Well|So|And|But|Or|Then|Now|Wow|Haha|Sure|Right|"
                 "Exactly|Also|Maybe|Sometimes|Usually|Often|Anyway|Plus|Thanks|Today|Yesterday|Tomorrow")
_SUBJECT = (r"(?:(?:[Mm]y|[Hh]is|[Hh]er|[Oo]ur|[Tt]heir|[Tt]he)\s+(?:[\w'’-]+\s+)?[\w'’-]+"
            rf"|(?!(?:{_NOT_SUBJECTS})\b)[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)?)")
_COMPOUND_SUBJECT = re.compile(
    rf"(^|(?<=[.!?])\s+)({_SUBJECT_LEAD}{_SUBJECT}\s+and\s+)I\s+((?:(?:{_ADVERBS})\s+)?)({_VERB_ALTERNATION})\b")


# 你们好 / 您好 / 你好 said as a greeting: before a pause, a particle or the end (你好像很累 is "you seem tired")
_GREETING_ZH = re.compile(r"(你们好|您好|你好)(?=[\s，。！？、,.!?~～啊呀呢吗哦]|$)")


def _resolve_zh(text: str, speaker: str, listener: str | None) -> str:
    out = text.replace("我们", f"{speaker}等人").replace("咱们", f"{speaker}等人")
    out = out.replace("我的", f"{speaker}的").replace("我", speaker)
    if listener:
        out = out.replace("你们", f"{listener}等人").replace("你的", f"{listener}的").replace("您", listener)
        out = out.replace("你", listener)
    return out


def resolve_pronouns(sentence: str, speaker: str, listener: str | None) -> str:
    """First person -> `speaker`, second person -> `listener` (English and Chinese).

    "I'm painting" -> "Melanie is painting"; "my kids" -> "Melanie's kids"; "you were great"
    -> "Caroline was great"; "我上周去了" -> "小王上周去了". Second person stays as written when
    the listener is unknown (a group chat with no addressee).
    """
    if _CJK_RE.search(sentence):
        # A greeting is not a person: 你好 stays 你好 (it read 助手好), as do 你们好 / 您好. The
        # split keeps the greetings at its odd places; only the text between them is restated.
        pieces = _GREETING_ZH.split(sentence)
        return "".join(piece if i % 2 else _resolve_zh(piece, speaker, listener) for i, piece in enumerate(pieces))
    # Expand contractions first so one set of rules handles "I'm" and "I am" alike.
    out = re.sub(r"\b(I|[Yy]ou|[Ww]e)['’](m|ve|ll|d|re)\b", lambda m: f"{m.group(1)} {_CONTRACTIONS[m.group(2)]}", sentence)
    # A question's inverted verb agrees with the name: "Do I need it?" -> "Does Ann need it?"
    out = re.sub(r"\b([Aa]m|[Dd]o|[Hh]ave|[Dd]on't|[Hh]aven't)\s+I\b", lambda m: f"{_agreeing(m.group(1))} {speaker}",
                 out)
    out = _COMPOUND_SUBJECT.sub(lambda m: f"{m.group(1)}{m.group(2)}{speaker} {m.group(3)}{_plural(m.group(4))}", out)
    out = re.sub(rf"(?:\b(\w+['’]?\w*)\s+)?\bI\s+((?:(?:{_ADVERBS})\s+)?)({_VERB_ALTERNATION})\b",
                 lambda m: _agree_after(m, speaker), out)
    out = re.sub(r"\bI\b|\b(?:me|myself)\b", speaker, out)
    out = re.sub(r"\b(?:[Mm]y|mine)\b", _possessive(speaker), out)
    out = re.sub(r"\b(?:[Ww]e|us|ourselves)\b", f"{speaker} and others", out)
    out = re.sub(r"\b(?:[Oo]ur|ours)\b", _possessive(speaker), out)
    if listener:
        # A question's inverted verb agrees too: "Are you going?" -> "Is Caroline going?"
        out = re.sub(r"\b([Aa]re|[Ww]ere|[Hh]ave|[Dd]o|[Aa]ren't|[Ww]eren't|[Hh]aven't|[Dd]on't)\s+you\b(?!\s+and\b)",
                     lambda m: f"{_agreeing(m.group(1))} {listener}", out)
        out = re.sub(r"\b[Yy]ou\s+(are|were|have|do|don't|aren't|weren't|haven't)\b",
                     lambda m: f"{listener} {_third_person(m.group(1))}", out)
        out = re.sub(r"\b(?:[Yy]ou|yourself)\b", listener, out)
        out = re.sub(r"\b(?:[Yy]our|yours)\b", _possessive(listener), out)
    return out


def _agree_after(match: re.Match[str], speaker: str) -> str:
    """"<word> I <adverb> <verb>" with the speaker's name for "I" and the verb agreeing with
    it, unless the word before asks for the base form (a modal or "do": "Can I go?")."""
    before, adverb, verb = match.group(1), match.group(2), match.group(3)
    lead = f"{before} " if before else ""
    keeps = before is not None and before.lower().replace("’", "'") in _BASE_FORM_AFTER
    return f"{lead}{speaker} {adverb}{verb if keeps else _third_person(verb)}"


def _plural(verb: str) -> str:
    """`verb` after a plural subject: its base form, "am" as "are"."""
    return {"am": "are", "Am": "Are"}.get(verb, verb)


def _agreeing(verb: str) -> str:
    """`verb` in the third person singular, its capital kept ("Are" -> "Is")."""
    third = _third_person(verb.lower())
    return third[0].upper() + third[1:] if verb[0].isupper() else third


_SEASON_NAMES = {3: ("spring", "春天"), 6: ("summer", "夏天"), 9: ("autumn", "秋天"), 12: ("winter", "冬天")}


def _date_en(day: datetime) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


def describe_window(window: TimeWindow, chinese: bool = False) -> str:
    """An absolute phrase for a resolved window: "on 7 May 2023", "in April 2023", "2023年5月7日"."""
    start, end = window.start, window.end
    days = (end - start).days
    last = end - timedelta(days=1)
    month_aligned = start.day == 1 and end.day == 1
    season = _SEASON_NAMES.get(start.month) if month_aligned and 89 <= days <= 92 else None
    if chinese:
        if season:
            return f"{start.year}年{season[1]}"
        if days == 1:
            return f"{start.year}年{start.month}月{start.day}日"
        if month_aligned and start.month == 1 and days >= 365:
            return f"{start.year}年" if days <= 366 else f"{start.year}年至{last.year}年"
        if month_aligned and days <= 31:
            return f"{start.year}年{start.month}月"
        if days == 7 and start.weekday() == 0:
            return f"{start.year}年{start.month}月{start.day}日那一周"
        return f"{start.year}年{start.month}月{start.day}日至{last.year}年{last.month}月{last.day}日"
    if season:
        return f"in {season[0]} {start.year}"
    if days == 1:
        return f"on {_date_en(start)}"
    if month_aligned and start.month == 1 and 365 <= days <= 366:
        return f"in {start.year}"
    if month_aligned and days <= 31:
        return f"in {_MONTHS[start.month - 1]} {start.year}"
    if days == 7 and start.weekday() == 0:
        return f"in the week of {_date_en(start)}"
    if days == 2 and start.weekday() == 5:
        return f"on the weekend of {_date_en(start)}"
    if month_aligned:
        return f"between {_MONTHS[start.month - 1]} {start.year} and {_MONTHS[last.month - 1]} {last.year}"
    return f"between {_date_en(start)} and {_date_en(last)}"


_NAMED_PERIODS = frozenset({"holiday", "holiday_zh", "quarter", "quarter_ordinal", "quarter_zh"})
_ANCHORED = re.compile(r"\d{4}|\b(?:last|this|next)\b|去年|今年|明年|前年")


def _is_relative(expression: str) -> bool:
    return not re.search(r"\d{4}", expression)


def resolve_time(sentence: str, said_at: datetime | None) -> tuple[str, TimeWindow | None]:
    """Replace relative time expressions by absolute ones; return the text and the first window.

    Absolute expressions ("in May 2023", "2022年之前") are kept as written but still give the
    window. Unbounded windows ("before 2022") are not used as an entry's time.
    """
    if said_at is None:
        return sentence, None
    # A bare month ("in July"), "over the weekend", or a holiday or quarter named alone ("at
    # Christmas", "in Q3", "国庆") may be past or future in speech; only questions read them as
    # the latest one begun. Hours stay as said ("the past 48 hours"): days would misstate them.
    # Bounds off: "before yesterday" keeps "yesterday" to restate ("before 4 July 2023").
    windows = [w for w in find_time_windows(sentence, said_at, bounds=False)
               if w.kind not in ("month_only", "month_only_zh", "weekend_recent", "hours", "hours_zh")
               and not (w.kind in _NAMED_PERIODS and not _ANCHORED.search(w.expression.lower()))]
    if not windows:
        return sentence, None
    out, cursor, pieces = sentence, 0, []
    for window in windows:
        at = out.find(window.expression, cursor)
        if at < 0:
            continue
        phrase = window.expression
        if _is_relative(window.expression):
            phrase = describe_window(window, chinese=bool(_CJK_RE.search(window.expression)))
            # "in the week of ..." after "in"/"on" reads badly; drop the duplicate preposition,
            # and the article of "(on) the 2nd of June" or "in the last week" with it.
            before = out[:at]
            m = re.search(r"(?:\b(?:on|in|during|at)\s+)?\bthe\s+$|\b(?:on|in|during|at)\s+$", before, re.IGNORECASE)
            if m and phrase.split(" ", 1)[0].lower() in ("on", "in", "between"):
                before = before[: m.start()]
            elif re.search(r"\b(?:before|after|since|until|till|by|from|of)\s+$", before, re.IGNORECASE) \
                    and phrase.startswith(("on ", "in ")):
                # "before 4 July 2023", not "before on 4 July 2023"; "the first of December
                # 2026", not "the first of in December 2026"
                phrase = phrase[3:]
            if not before.strip() or before.rstrip().endswith((".", "!", "?")):
                phrase = phrase[0].upper() + phrase[1:]
            if before[-1:].isascii() and before[-1:].isalnum() and phrase[:1].isdigit():
                before += " "  # "Kim 2024年1月1日…", not "Kim2024年…": the name and the year apart
            pieces.append(before + phrase)
        else:
            pieces.append(out[:at] + phrase)
        out = out[at + len(window.expression):]
        cursor = 0
    text = "".join(pieces) + out
    bounded = [w for w in windows if w.start.year > 1 and w.end.year < 9999]
    return text, (bounded[0] if bounded else None)
