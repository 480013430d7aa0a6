"""The offline fact extractor: turns into atomic, self-contained ``fact`` entries, no model.

For each turn it splits sentences, drops questions and small talk, rewrites first and
second person to the speakers' names, replaces relative time with absolute dates
(resolved against the turn's own time), and tags persons, entities, keywords, location
and topic. Every fact keeps the id of the turn it came from (``derived_from``).

Sentences that lean on the previous one ("It was amazing.") are kept with it rather than
standing alone, so each fact still says what it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from ..model import Entry, Source
from ..text.tokenize import STOPWORDS_EN, STOPWORDS_ZH, get_jieba, normalize, query_terms
from .model import Conversation, Turn
from ..text.timeparse import TimeWindow
from .restate import resolve_pronouns, resolve_time

# A sentence ends at . ! ? … before a capital, a digit or a quote, but not after a title
# ("Ms. Chen", "Dr. Zhou"), or at 。！？；.
_SENTENCE_RE = re.compile(r"(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bProf\.)"
                          r"(?<=[.!?…])\s+(?=[\"'“A-Z0-9])|(?<=[。！？；])")
_CJK_RE = re.compile(r"[\u4e00-\u9fff]")
_LEANING_RE = re.compile(r"^(?:it|this|that|these|those|they|them|he|she|him|her|his|its|there|so|and|but|also|"
                         r"plus|which|then)\b", re.IGNORECASE)
_QA_MARK = "\x00answer\x00"
_ANSWER_RE = re.compile(r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|definitely|absolutely|of course|not yet|"
                        r"i did|i have|i am|i was|it was|it is|是的|对|没有|不是|还没)\b", re.IGNORECASE)
_SMALL_TALK = {"meet", "hi", "hey", "hello", "thanks", "thank", "bye", "goodbye", "wow", "awesome", "cool", "great", "yeah",
               "yes", "no", "ok", "okay", "sure", "lol", "haha", "congrats", "congratulations", "amazing", "nice", "good",
               "see", "glad", "hear", "sound", "realli", "much", "talk", "chat", "catch", "care"}
# The same in Chinese, as the analyser splits it ("好的，我记住了" -> 好 / 记住, "没问题" -> 问题,
# "我会记下来的" -> 我会 / 记下 / 下来 / 记下来): an assistant's acknowledgement is not a fact.
_SMALL_TALK |= {"好", "好的", "好呀", "好吧", "谢谢", "感谢", "多谢", "哈哈", "哈哈哈", "嘿嘿", "嗯嗯", "太好了", "太棒",
                "太棒了", "真棒", "明白", "记住", "记下", "下来", "记下来", "我会", "问题", "客气", "不错", "真不",
                "真不错", "听", "起来", "收到", "了解", "没关", "关系", "没关系", "加油", "晚安", "早安", "再见",
                "拜拜", "真的", "当然", "主意", "厉害", "真", "知道", "可以", "恭喜", "高兴", "开心", "有趣"}
_RELATION_RE = re.compile(
    r"\b(?:friend|friends|sister|brother|mom|mother|dad|father|son|daughter|husband|wife|partner|boyfriend|"
    r"girlfriend|cousin|aunt|uncle|grandma|grandpa|niece|nephew|colleague|coworker|boss|neighbor|neighbour|"
    r"named|called|with|and)\s+([A-Z][a-z]+)\b"
)
_CAPITALISED_RE = re.compile(r"\b([A-Z][A-Za-z'&.-]*(?:\s+(?:of\s+|the\s+)?[A-Z][A-Za-z'&.-]*)*)")
_PLACE_RE = re.compile(r"\b(?:in|to|from|near|at|visit|visited|visiting|around)\s+"
                       r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_NOT_NAMES = {"I", "The", "A", "An", "It", "This", "That", "My", "We", "You", "He", "She", "They", "And", "But",
              "So", "Oh", "On", "In", "At", "Yes", "No", "Hey", "Hi", "Wow", "Thanks", "What", "When", "Where", "How",
              "Why", "Who", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January",
              "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
              "December", "Between", "If", "Also", "Just", "Well", "Sure", "Ok", "Okay", "Haha", "Lol", "Plus",
              "Congrats", "Congratulations", "Awesome", "Great", "Good", "Thank", "Let", "Last", "Next", "During"}
_OPENING = "\"'“‘(「『[-–— "
_NOT_ENTITY_WORDS = STOPWORDS_EN | {"mr", "mrs", "ms", "dr", "prof", "st", "did", "does", "do", "not", "yes", "no"}
_TOPICS = {
    "family": "kids children son daughter mom dad mother father husband wife family parents sister brother baby",
    "work": "job work career office boss colleague project company business interview promotion",
    "health": "doctor hospital health sick illness therapy workout gym run running exercise diet",
    "travel": "trip travel vacation flight hotel visit visited beach camping road",
    "education": "school class course study studied university college degree exam teacher",
    "art": "paint painting painted art drawing draw music song concert guitar piano sing dance pottery",
    "community": "volunteer volunteering support group community charity activism parade pride lgbtq",
    "pets": "dog dogs cat cats pet pets puppy kitten",
    "food": "cook cooking bake baking recipe dinner lunch restaurant food",
    "reading": "book books read reading novel author library",
}
_TOPIC_WORDS = {w: topic for topic, words in _TOPICS.items() for w in words.split()}


@dataclass(slots=True)
class ExtractionResult:
    """What an extractor produced for one conversation, and what it could not do."""

    facts: list[Entry] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)


class Extractor(Protocol):
    """Turns the turns of a conversation into ``fact`` entries linked to their turn entries."""

    name: str

    def extract(self, conversation: Conversation, turn_entry_ids: dict[str, str], namespace: str) -> ExtractionResult:
        ...


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_RE.split(text.replace("\n", " ")) if s and s.strip()]


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？")) or sentence.rstrip(" .!").endswith(("吗", "呢"))


# A clause that asks: opens with a question word or an auxiliary ("how", "did you"), or holds a
# Chinese question word (哪, 什么, 有没有); its end is a question mark or 吗 / 呢 anyway.
_ASKING_EN = re.compile(
    r"^\W*(?:what|when|where|who|whom|whose|why|which|how|any|anything|anyone|do|does|did|is|are|was|were|"
    r"am|can|could|will|would|should|shall|may|might|must|have|has|had|isn't|aren't|don't|didn't|doesn't|"
    r"won't|wouldn't|can't|couldn't|or|right|ok|okay)\b", re.IGNORECASE)
_ASKING_ZH = re.compile(r"什么|哪|谁|怎|为何|为什么|几[个点时天次岁号月年]|多少|多久|多大|吗|呢|是不是|有没有|能不能|"
                        r"会不会|要不要|可不可以|好不好|对不对|行不行")
_CLAUSE_RE = re.compile(r"(?<=[,，;；、])")


def _stated_before_question(sentence: str) -> str | None:
    """The speaker's news a question sentence opens with: "I'm moving to Berlin next month, any
    tips on neighbourhoods?" -> "I'm moving to Berlin next month", 我下周去上海出差，你知道那边天气怎么样吗？
    -> 我下周去上海出差; None when every clause asks ("What did you cook, was it good?") or the
    opening says nothing of the speaker ("Nature is so special, huh?")."""
    clauses = [c for c in _CLAUSE_RE.split(sentence) if c.strip()]
    stated: list[str] = []
    for clause in clauses[:-1]:  # the last clause holds the question mark
        if _ASKING_EN.match(clause) or _ASKING_ZH.search(clause):
            break
        stated.append(clause)
    text = _without_trailing_filler("".join(stated))
    # News is the speaker's own: "Nature is so special, huh?" or "You love that bar, don't you?"
    # open a question with an opinion or a guess, not with something to remember.
    return text if _FIRST_PERSON.search(text) else None


_FIRST_PERSON = re.compile(r"\b(?:i|i['’](?:m|ve|d|ll)|me|my|mine)\b|我", re.IGNORECASE)  # not "we" / "us": "we all need…"


# What a clause may end with that only leads into the question: "So, what's next?", "I mean, who
# doesn't?", "所以，你觉得呢？". One word at a time, read off the last characters only: a pattern
# repeating separators and words to the end backtracks exponentially on ", , , … x".
_FILLER_END = re.compile(r"(?:\b(?:so|and|but|or|well|anyway|anyways|i mean|you know|like|then|speaking of which|"
                         r"by the way|btw)|所以|那么|那|然后|不过|但是|对了)$", re.IGNORECASE)
_SEPARATORS = " \t\n,，;；、-–—"
_LONGEST_FILLER = 20  # characters: "speaking of which" and a word boundary before it


def _without_trailing_filler(text: str) -> str:
    """`text` without the separators and lead-in words it ends with (linear in its length:
    an end index moves back, nothing is copied until the end)."""
    end = len(text)
    while True:
        while end and text[end - 1] in _SEPARATORS:
            end -= 1
        start = max(0, end - _LONGEST_FILLER)
        found = _FILLER_END.search(text, start, end)
        # A match at the window's start may be a longer word's end ("also" has "so"): not a filler.
        if found is None or (found.start() == start and start > 0 and text[start - 1].isalnum()
                             and text[start].isalnum()):
            return text[:end]
        end = found.start()


def _content_terms(sentence: str) -> list[str]:
    return [t for t in query_terms(_CLOSINGS.sub(" ", sentence)) if t not in _SMALL_TALK]


# The ways a chat is left or put off, whose words alone would count as content ("Haha okay, back
# to work." and "Maybe later." were stored as facts, and "work" then found them for "Where do I
# work?"); the rest of a sentence that holds one still counts ("back to work after my surgery").
_CLOSINGS = re.compile(
    r"\b(?:(?:get(?:ting)?|go(?:ing)?|head(?:ing)?)\s+)?back\s+to\s+work\b(?!\s+(?:after|on|at|in|next|from|since|full))"
    r"|\b(?:gotta|got\s+to|have\s+to|need\s+to|must)\s+(?:go|run|dash|head\s+(?:off|out))\b"
    r"|\b(?:maybe|perhaps)\s+(?:later|another\s+time|next\s+time)\b"
    r"|\b(?:see|catch|talk\s+to|speak\s+to)\s+you\s*(?:later|soon|tomorrow|around)?\b"
    r"(?!\s*(?:on|at|in|next|this|for|when|after|before)\b)"  # "see you on 10 November at the café" says a plan
    r"|\btalk\s+(?:later|soon|tomorrow)\b|\btake\s+care\b(?!\s+of\b)"
    r"|\bhave\s+a\s+(?:good|great|nice|lovely)\s+(?:one|day|night|evening|weekend)\b",
    re.IGNORECASE)


# Words of small talk that can also say what happened ("the talk was great", "we met at the
# café", "how was the meeting?"): a fact leaves them out, a search does not call such a turn empty.
_EVENT_WORDS = {"meet", "see", "hear", "talk", "chat"}


#: small talk alone is short; a longer turn is not analysed (a search checks each turn of its
#: pool). A Chinese character counts three, as a word takes about three Latin letters and a space.
SMALL_TALK_MAX_CHARS = 48


def is_small_talk(text: str, speaker: str | None = None) -> bool:
    """Whether a turn's text says nothing but small talk ("👍", "haha yes", "Thanks!", "好的"):
    at most `SMALL_TALK_MAX_CHARS` and no word but acknowledgements once its speaker label
    ("Ann: ") is left out."""
    if speaker and text.startswith(f"{speaker}:"):
        text = text[len(speaker) + 1:]
    text = text.strip()
    if len(text) + 2 * len(_CJK_RE.findall(text)) > SMALL_TALK_MAX_CHARS:
        return False
    return not [t for t in query_terms(_CLOSINGS.sub(" ", text)) if t not in _SMALL_TALK or t in _EVENT_WORDS]


def _names(text: str, known: set[str]) -> tuple[list[str], list[str], str | None]:
    """(persons, entities, location) mentioned in an English sentence."""
    persons = [name for name in known if re.search(rf"\b{re.escape(name)}\b", text)]
    persons += [m.group(1) for m in _RELATION_RE.finditer(text) if m.group(1) not in _NOT_NAMES]
    place = None
    for m in _PLACE_RE.finditer(text):
        candidate = m.group(1)
        if candidate.split()[0] not in _NOT_NAMES and candidate not in persons:
            place = candidate
            break
    entities = []
    for m in _CAPITALISED_RE.finditer(text):
        phrase = m.group(1).strip(" .'")
        words = phrase.split()
        said = len(words)
        while words and (words[0] in _NOT_NAMES or words[0].lower() in _NOT_ENTITY_WORDS):
            words = words[1:]
        if words and len(words[-1]) == 1:  # "Q" of "Q1", "A" of "Plan A": not a name's word
            words = words[:-1]
        phrase = " ".join(words)
        if phrase.endswith(("'s", "’s")):
            phrase = phrase[:-2]
        if not phrase or phrase in persons or phrase == place or any(w in known for w in phrase.split()):
            continue
        # One capitalised function word ("Did", "Not"), letter ("Q" of "Q1") or title ("Ms")
        # names nothing; a question would match it as an entity.
        if len(words) == 1 and (len(phrase) == 1 or phrase.lower().rstrip(".") in _NOT_ENTITY_WORDS):
            continue
        # Sentence-initial words are capitalised anyway (after an opening quote too: a restated
        # answer quotes the question); keep them only when they are acronyms.
        before = text[: m.start()].rstrip().rstrip(_OPENING)
        at_start = (not before.strip() or before.rstrip().endswith((".", "!", "?", ":", "…"))) \
            and len(words) == said  # "Did Bob call?": Bob is not the word that opens it
        if at_start and not phrase.isupper() and len(words) == 1:
            continue
        entities.append(phrase)
    return persons, entities, place


def _names_zh(text: str, known: set[str]) -> tuple[list[str], list[str], str | None]:
    """Chinese persons/places/organisations from jieba's part-of-speech tags (offline); a word
    tagged as a name that CC-CEDICT knows only as a common word (马拉松, 小龙虾) is none."""
    from ..text.romanize import chinese_names, is_common_word
    from ..text.tokenize import get_jieba

    get_jieba()
    import jieba.posseg as posseg

    persons = [name for name in known if name in text]
    # 小李, and 王芳 where jieba glued a verb on (王芳教: chinese_names keeps both readings, a
    # tag keeps the shorter one).
    names = chinese_names(text)
    names = [name for name in names if not any(name != other and name.startswith(other) for other in names)]
    entities: list[str] = []
    place = None
    for word, flag in posseg.lcut(text):
        if flag == "nr" and len(word) >= 2 and not is_common_word(word) \
                and not any(word != name and word.startswith(name) for name in names):
            persons.append(word)
        elif flag == "ns" and place is None:
            place = word
        elif flag in ("nt", "nz") and len(word) >= 2:
            entities.append(word)
    return list(dict.fromkeys(persons + names)), entities, place


_CALENDAR_WORDS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                             "january", "february", "march", "april", "may", "june", "july", "august",
                             "september", "october", "november", "december", "today", "yesterday", "tomorrow"])
_CALENDAR_ZH = re.compile(r"(?:周|星期|礼拜)[一二三四五六日天]|[今明昨前后]天|[上下]午|早上|晚上|今晚|昨晚|[那这]?一周")
_WORD_TOKEN_RE = re.compile(r"([\u3400-\u9fff]+)|([a-z][a-z0-9]*(?:['’-][a-z0-9]+)*)")


def _cjk_words(run: str) -> list[str]:
    """jieba's words of a Chinese run (precise mode: 服务器, not also 服务 / 务器), stopwords out."""
    return [w for w in get_jieba().lcut(run) if w.strip() and w not in STOPWORDS_ZH]


# The speaker names chat exports give (OpenAI roles), as a fact says them.
_ROLE_NAMES = {"user": ("the user", "用户"), "assistant": ("the assistant", "助手"), "system": ("the system", "系统")}
#: The agent's own side of a chat, by role: what it says is an answer, a question or politeness
#: ("Ouch, take care.", "好的，需要我帮你记住什么吗？"), or what memory already holds, said back
#: ("Your dentist is Dr. Weber"); as facts these crowded the user's own (an outside check: in the
#: top 3 of 10 of 43 questions) and echoed themselves ("The assistant said: …"). Its turns are
#: stored and searchable all the same; only no facts are restated from them.
AGENT_ROLES = frozenset({"assistant", "ai", "bot", "system", "agent", "助手", "机器人", "系统", "ai助手"})


def _as_named(speaker: str, chinese: bool, introduced: Mapping[str, str] | None = None) -> str:
    """`speaker` as a fact names them: a role ("user", "assistant") by the name it gave itself in
    the conversation (`introductions`), else as "the user" / 用户."""
    role = _ROLE_NAMES.get(speaker.strip().lower()) if speaker.islower() else None
    if role is not None and introduced and speaker in introduced:
        return introduced[speaker]
    return speaker if role is None else role[1 if chinese else 0]


# A speaker saying who they are: "My name is Carla", "call me Carla", "I go by Carla", 我叫陈静,
# 我的名字是陈静. Not "I'm …" ("I'm British", "I'm Fine"): too often not a name.
_INTRODUCTION_EN = re.compile(r"\b(?i:my name is|my name's|call me|i go by)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b")
_INTRODUCTION_ZH = re.compile(r"我(?:叫|的名字(?:是|叫))([\u4e00-\u9fff]{2,3})(?=[，,。.！!\s、和]|$)")


def introductions(conversation: Conversation) -> dict[str, str]:
    """The names a chat's roles give themselves ("user" -> "Carla"): a chat export speaks as
    roles, so its facts said "The user adopted a cat", and "What pet did Carla get?" found no
    word or name in them. A role that gives two different names keeps neither."""
    found: dict[str, set[str]] = {}
    for turn in conversation.turns:
        if not (turn.speaker.islower() and turn.speaker.strip().lower() in _ROLE_NAMES):
            continue
        for match in (*_INTRODUCTION_EN.finditer(turn.text), *_INTRODUCTION_ZH.finditer(turn.text)):
            name = match.group(1)  # a capitalised word: not "call me back"
            found.setdefault(turn.speaker, set()).add(name)
    return {role: next(iter(names)) for role, names in found.items() if len(names) == 1}


def _keywords(text: str, persons: list[str], limit: int = 8) -> list[str]:
    """A fact's content words as written (lower-cased: "puppy", not the index's stem "puppi"), so
    a `keyword:puppy` filter and the page's chips read as words; one per stem, without the
    persons it names, small talk, or month and weekday names (its time says those)."""
    named = {term for person in persons for term in query_terms(person)}
    seen: set[str] = set()
    words: list[str] = []
    for match in _WORD_TOKEN_RE.finditer(normalize(text)):
        cjk, latin = match.groups()
        for word in (_cjk_words(cjk) if cjk else [latin]):
            # A Chinese word is its own term (one character says little alone); an English one's is its stem.
            stems = ([word] if len(word) > 1 else []) if cjk else query_terms(word)
            if len(stems) != 1 or stems[0] in named or stems[0] in seen or stems[0] in _SMALL_TALK \
                    or word in _SMALL_TALK or word in _CALENDAR_WORDS or (cjk and _CALENDAR_ZH.fullmatch(word)):
                continue
            seen.add(stems[0])
            words.append(word)
            if len(words) == limit:
                return words
    return words


def _topic(terms: list[str]) -> str | None:
    counts: dict[str, int] = {}
    for term in terms:
        topic = _TOPIC_WORDS.get(term)
        if topic:
            counts[topic] = counts.get(topic, 0) + 1
    return max(counts, key=lambda t: counts[t]) if counts else None


class OfflineExtractor:
    """Rule-based restatement; the default, and what Engram does when no LLM is configured."""

    name = "offline"

    def __init__(self, min_terms: int = 2) -> None:
        self.min_terms = min_terms

    def _listener(self, conversation: Conversation, index: int) -> str | None:
        """Who a turn addresses: the other speaker of a two-person chat, else the previous speaker."""
        turn = conversation.turns[index]
        others = [s for s in conversation.speakers if s != turn.speaker]
        if len(others) == 1:
            return others[0]
        for prev in reversed(conversation.turns[:index]):
            if prev.speaker != turn.speaker:
                return prev.speaker
        return None

    def _groups(self, turn: Turn, question: str | None, names: frozenset[str] = frozenset()) -> list[str]:
        """Sentences worth keeping, with leaning sentences joined to the one before.

        A first sentence that answers the other speaker's question ("Yes, two days ago.")
        is kept as ``question + answer``: alone it says little, together they say it all.
        """
        groups: list[str] = []
        for n, sentence in enumerate(split_sentences(turn.text)):
            if _is_question(sentence):
                # What a question opens with may be news ("我下周去上海出差，那边冷吗？"): kept as a
                # statement of its own when it says enough (below), the question left out.
                stated = _stated_before_question(sentence)
                if stated is None or len([t for t in _content_terms(stated) if t not in names]) < self.min_terms:
                    continue
                sentence = stated
            if groups and _LEANING_RE.match(sentence):
                groups[-1] = f"{groups[-1]} {sentence}"
                continue
            if n == 0 and question and _content_terms(question) and _ANSWER_RE.match(sentence):
                groups.append(f"{_QA_MARK}{sentence}")
                continue
            # Names don't count: "Totally agree, Jon." is still small talk.
            if len([t for t in _content_terms(sentence) if t not in names]) < self.min_terms:
                continue
            groups.append(sentence)
        caption = turn.metadata.get("image_caption")
        if caption:
            groups.append(f"I shared a photo: {caption}.")
        return groups

    def extract(self, conversation: Conversation, turn_entry_ids: dict[str, str], namespace: str) -> ExtractionResult:
        result = ExtractionResult()
        introduced = introductions(conversation)
        known = set(conversation.speakers) | set(introduced.values())
        names = frozenset(t for name in known for t in query_terms(name))
        for index, turn in enumerate(conversation.turns):
            if turn.speaker.strip().lower() in AGENT_ROLES:
                continue
            listener = self._listener(conversation, index)
            previous = conversation.turns[index - 1] if index else None
            question = None
            if previous is not None and previous.speaker != turn.speaker:
                asked = [s for s in split_sentences(previous.text) if _is_question(s)]
                question = resolve_pronouns(asked[-1], _as_named(previous.speaker, False, introduced),
                                            _as_named(turn.speaker, False, introduced)) if asked else None
            # The time a question asks of leads a question-and-answer fact (it opens its text).
            asked_at = resolve_time(question, turn.timestamp)[1] if question else None
            for group in self._groups(turn, question, names):
                # Times first, as said: a subject restated by name can hide what marks a time
                # (我过两天去上海 -> 小王过两天…, where 过 after a name reads as a verb's).
                said = group[len(_QA_MARK):] if group.startswith(_QA_MARK) else group
                said, early = resolve_time(said, turn.timestamp)
                group = _QA_MARK + said if group.startswith(_QA_MARK) else said
                chinese = bool(_CJK_RE.search(group))
                # A chat's roles are not names: "the user moved to Paris", 用户下周去北京.
                speaker = _as_named(turn.speaker, chinese, introduced)
                hearer = _as_named(listener, chinese, introduced) if listener is not None else None
                if group.startswith(_QA_MARK):
                    answer = resolve_pronouns(group[len(_QA_MARK):], speaker, hearer)
                    asker = _as_named(previous.speaker, chinese, introduced)  # type: ignore[union-attr]
                    text = (f"{asker}问“{question}”，{speaker}回答“{answer}”" if chinese else
                            f'{asker} asked "{question}" and {speaker} answered "{answer}"')
                else:
                    text = resolve_pronouns(group, speaker, hearer)
                    if not any(name in text for name in {*known, speaker}):
                        # No one named: say who said it, so the fact stands on its own.
                        text = f"{speaker}说：{text}" if chinese else f"{speaker} said: {text}"
                text = text[:1].upper() + text[1:]  # "The user said: …"
                text, window = resolve_time(text, turn.timestamp)
                # The time as said, not as re-read from the restated text ("in the week of 29 May
                # 2023" would read as that day).
                window = (asked_at if group.startswith(_QA_MARK) else None) or early or window
                # A question-and-answer fact comes from both turns.
                sources = [previous, turn] if group.startswith(_QA_MARK) and previous else [turn]
                result.facts.append(self._fact(text, window, sources, known, turn_entry_ids, namespace))
        return result

    def _fact(self, text: str, window: TimeWindow | None, sources: list[Turn], known: set[str],
              turn_entry_ids: dict[str, str], namespace: str) -> Entry:
        turn = sources[-1]
        chinese = bool(_CJK_RE.search(text))
        persons, entities, place = (_names_zh if chinese else _names)(text, known)
        terms = _content_terms(text)
        said_at = turn.timestamp.isoformat() if turn.timestamp else None
        metadata: dict[str, object] = {"extractor": self.name}
        if said_at:
            metadata["said_at"] = said_at
        if window is not None:
            metadata["time_expression"] = window.expression
        return Entry(
            text=text,
            kind="fact",
            namespace=namespace,
            timestamp=window.start.isoformat() if window else said_at,
            timestamp_end=window.end.isoformat() if window else None,
            persons=[turn.speaker, *persons],
            entities=entities,
            keywords=_keywords(text, [turn.speaker, *persons, *_ROLE_NAMES.get(turn.speaker, ())]),
            location=place,
            topic=_topic(terms),
            source=Source(session_id=turn.session_id, turn_id=turn.turn_id, speaker=turn.speaker),
            metadata=metadata,
            derived_from=[turn_entry_ids[t.turn_id] for t in sources if t.turn_id in turn_entry_ids],
        ).normalized(namespace)
