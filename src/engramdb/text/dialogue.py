"""Dialogue-context queries: an agent often searches with the last few utterances of a
conversation ("<Bart>: "…" <Assistant>: "…" <Bart>: "…"", "[Bart]: …", "【小雨】…" or one
"Speaker: …" per line, "User: … Assistant: … User: …" on one line, or a chat API's messages as a JSON array,
``[{"role": "user", "content": "…"}, …]``).
What the user asks now is in the last utterance; a time expression earlier in the chatter
("I barely slept this week") is not the window the question is about — nor is one in the
last utterance's small talk before its question ("I barely slept this week. Do you remember
the puppy I adopted?")."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from .tokenize import _CJK, STOPWORDS_EN

# A sentence ends at . ! ? … (then a space) or at a CJK terminator (no space needed).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？])")
# A question: ends with a question mark, or (Chinese, often unpunctuated) with 吗/呢/么.
_QUESTION = re.compile(r"[?？]\W*$|[吗呢么][。.]?$")

# "<Name>:" or "[Name]:" tags anywhere, or "Name:" / "Name：" at the start of a line (names up
# to 40 chars).
_TAG = re.compile(r"<([^<>\n]{1,40})>\s*[:：]")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,40})\]\s*[:：]")
# "【Name】…" at the start of a line, a colon optional, as Chinese chat exports write turns; a
# notice's headings are written so too ("【通知】… 【注意】…"), so it is a dialogue only with the
# evidence `_inline_turns` asks for (a speaker twice, or one named by role).
_LENTICULAR = re.compile(r"^[ \t]*【([^【】\n]{1,40})】[ \t]*[:：]?", re.MULTILINE)
# A line's label must look like a speaker: up to three words that start with a letter
# ("Mary Ann", "Dr. Smith", "小明"), or one word and a number ("Speaker 2"); a colon before a
# digit is a time ("around 10:30"), not a label.
_NAME = r"[^\W\d_][\w'’.\-]{0,19}(?:[ \t][^\W\d_][\w'’.\-]{0,19}){0,2}|[^\W\d_][\w'’.\-]{0,19}[ \t]\d{1,3}"
_LINE = re.compile(rf"^[ \t]*({_NAME})[ \t]*[:：](?!\d)", re.MULTILINE)
# "User: … Assistant: … User: …" on one line, as agents often join a transcript: a name of up
# to three capitalised words (a role in any case: "user:"; or up to six CJK characters) and a
# colon, at the start or right after a sentence ends. A CJK name may also follow a space ("用户：我在整理反馈 助手：好的"):
# Chinese puts no spaces inside a sentence, so one there is where a turn ends. Prose has such
# colons too ("Note: …", "他说：…"), so a line of these counts as a dialogue only with the
# evidence of one (`_inline_turns`).
_INLINE = re.compile(r"(?:^|(?<=[.!?…。！？\"”])|(?<=\s)(?=[\u4e00-\u9fff]{1,6}\s*[:：]))"
                     r"\s*([A-Z][\w'’.-]{0,19}(?: [A-Z][\w'’.-]{0,19}){0,2}"
                     r"|(?i:user|assistant|human|ai|bot|agent|customer)"  # roles, whatever their case
                     r"|[\u4e00-\u9fff]{1,6})\s*[:：](?!//)")
# Speakers an agent's transcript names by role.
CHAT_ROLES = frozenset({"user", "assistant", "ai", "bot", "human", "system", "agent", "me", "you", "customer",
                    "用户", "助手", "机器人", "客服", "我", "你", "系统"})


# Quote marks: the markup around an utterance, not its words ("…", “…”, 「…」, 『…』).
_QUOTES = '"“”「」『』'


def _said(text: str) -> str:
    """An utterance without the quotes around it."""
    return text.strip().strip(_QUOTES).strip()


def _split(query: str, marks: list[re.Match[str]]) -> list[tuple[str, str]]:
    ends = [m.start() for m in marks[1:]] + [len(query)]
    return [(m.group(1).strip(), _said(query[m.end():e])) for m, e in zip(marks, ends)]


def _inline_turns(query: str, pattern: re.Pattern[str] | None = None) -> list[re.Match[str]]:
    """Speaker labels of a one-line transcript (or of `pattern`), or [] unless it reads as one:
    it starts with a label, and a speaker speaks twice or one is named by role ("User", "助手")."""
    marks = list((pattern or _INLINE).finditer(query))
    if len(marks) < 2 or query[: marks[0].start()].strip():
        return []
    names = [m.group(1).strip().lower() for m in marks]
    if len(set(names)) < len(names) or CHAT_ROLES.intersection(names):
        return marks
    return []


# A chat API's messages: who speaks (a name before a role) and what is said (a string, or
# content parts of type "text"). Instructions and tool traffic are not the conversation.
_SPEAKER_KEYS = ("name", "role", "speaker", "author")
_TEXT_KEYS = ("content", "text", "message", "utterance")
_NOT_SAID = frozenset({"system", "developer", "tool", "function"})


def _said_in(message: dict[str, object]) -> str:
    value = next((message[k] for k in _TEXT_KEYS if k in message), None)
    if isinstance(value, list):  # [{"type": "text", "text": "…"}, {"type": "image_url", …}]
        value = " ".join(p["text"] for p in value
                         if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return value.strip() if isinstance(value, str) else ""


# A messages payload opens with its first message: `[{` or `{"messages": [{`. Anything else
# (a bracketed note, a deeply nested array) is never parsed.
_MESSAGES_START = re.compile(r'\[\s*\{|\{\s*"messages"\s*:\s*\[\s*\{')


@lru_cache(maxsize=64)
def _message_turns(query: str) -> tuple[tuple[str, str], ...]:
    """(speaker, utterance) pairs of chat messages as JSON — an array of messages, or an
    object with a ``messages`` array — at least one said; () for anything else."""
    text = query.strip()
    if not _MESSAGES_START.match(text) or text[-1] not in "]}":
        return ()
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting too deep to be messages
        return ()
    messages = payload.get("messages") if isinstance(payload, dict) else payload
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return ()
    turns = []
    for message in messages:
        role = message.get("role")
        if isinstance(role, str) and role.strip().lower() in _NOT_SAID:
            continue
        who = next((v for k in _SPEAKER_KEYS if isinstance(v := message.get(k), str) and v.strip()), "")
        if who and (said := _said_in(message)):
            turns.append((who.strip(), said))
    return tuple(turns)


def said_messages(query: str) -> bool:
    """Whether chat messages as JSON say anything: one message with a speaker (a role) and
    content, not a system one; False for ``[]``, ``[{"role": "user"}]`` or any other text."""
    return bool(_message_turns(query))


def _turns(query: str) -> list[tuple[str, str]]:
    """(speaker, utterance) pairs of a dialogue-context query; [] when it is not one."""
    if messages := _message_turns(query):
        return list(messages)
    for pattern in (_TAG, _BRACKET, _LINE):
        marks = list(pattern.finditer(query))
        if len(marks) >= 2:
            return _split(query, marks)
    marks = _inline_turns(query, _LENTICULAR) or _inline_turns(query)
    return _split(query, marks) if marks else []


def is_dialogue(query: str) -> bool:
    """Whether a query is a dialogue context: two or more speaker turns."""
    return len(_turns(query)) >= 2


def utterances(query: str) -> list[str]:
    """The utterances of a dialogue-context query (one item: not a dialogue)."""
    turns = _turns(query)
    return [said for _, said in turns] if turns else [query]


def _speaker(who: str) -> str:
    """A turn's label as evidence: a name stays ("Bart: "); a role (User, Assistant, 助手) is
    no evidence of what is talked about, and as a word it matches every memory about users
    ("整理用户反馈" for "User: …"), so it goes."""
    return "" if who.lower() in CHAT_ROLES else f"{who}: "


@lru_cache(maxsize=256)  # the planner and recall both ask for each query
def without_roles(query: str) -> str:
    """A dialogue context as what its speakers said, for keywords and BM25: role labels
    (``User:``, ``<Assistant>:``) dropped, named speakers and every word kept; any other
    query is unchanged (one chat message as JSON is its text)."""
    turns = _turns(query)
    if len(turns) < 2:
        return turns[0][1] if turns else query
    return "\n".join(f"{_speaker(who)}{said}" for who, said in turns if said)


def asked_part(query: str) -> str:
    """What a query asks about, for reading its time window: the question sentences of a
    dialogue context's last utterance (all of it when it asks nothing); the whole query
    when it is not a dialogue context (a search written as one is all meant)."""
    said = [u for _, u in _turns(query) if u]
    if len(said) < 2:
        return said[0] if said else query  # one chat message as JSON: its text
    questions = [s for s in _SENTENCE_END.split(said[-1]) if _QUESTION.search(s.strip())]
    return " ".join(questions) if questions else said[-1]


# Words a dialogue context's vector is better without: the stopword list, less the words that
# turn a statement round ("not", "never", "can't"), which a memory must agree with.
_NEGATIONS = frozenset({"no", "nor", "not", "never", "cannot"})
_EDGE_PUNCTUATION = re.compile(r"^[^\w']+|[^\w']+$")
_CJK_CHAR = re.compile(f"[{_CJK}]")


def _is_function_word(word: str) -> bool:
    core = word.lower()
    if core in _NEGATIONS or core.endswith("n't"):
        return False
    return core in STOPWORDS_EN


def content_words(utterance: str, said_before: set[str] | None = None) -> str:
    """An utterance's content words for the embedder: English stopwords and punctuation at
    word edges dropped, negations kept; a word with Chinese, Japanese or Korean characters in
    it loses only the quote marks at its edges (an unlabelled turn quoted inside another:
    `满分！” “哇`), and keeps its words and punctuation (no dialogue set in those languages
    measures what to drop). With ``said_before`` (the lower-cased words of the context so
    far, updated here), a non-CJK word already said earlier in the context is dropped."""
    kept: list[str] = []
    for token in utterance.replace("’", "'").split():
        if _CJK_CHAR.search(token):
            kept.append(token.strip(_QUOTES))
        elif (word := _EDGE_PUNCTUATION.sub("", token).strip("'")) and not _is_function_word(word):
            if said_before is not None:
                if (key := word.lower()) in said_before:
                    continue
                said_before.add(key)
            kept.append(word)
    return " ".join(kept)


@lru_cache(maxsize=256)  # the semantic channel and the recall trace both ask for each query
def plain(query: str) -> str:
    """A dialogue context as the embedder should read it: ``Name: words …``, one turn after
    another, without the angle brackets and quotes (~15% of a context's tokens, which pull its
    vector towards other markup) and, in English, without stopwords and edge punctuation (half
    the words of chatty turns, which pull it towards any other chatter and cost the embedder
    time: the context keeps only what it talks about), and each word once, where it is first
    said (speakers echo each other's words, which would otherwise weigh twice or three times
    in the vector). Measured in docs/BENCHMARKS.md ("Dialogue contexts as the embedder reads
    them"; "Dialogue contexts: each word once"). A single tagged utterance loses its markup
    only, and one chat message as JSON is its text; any other query is unchanged."""
    turns = _turns(query)
    if len(turns) == 1:
        return turns[0][1]
    if not turns and (one := _TAG.match(query.lstrip())):  # a single tagged utterance
        said = _said(query.lstrip()[one.end():])
        return f"{one.group(1).strip()}: {said}" if said else query
    said_before: set[str] = set()
    spoken = [f"{_speaker(who)}{words}" for who, said in turns if (words := content_words(said, said_before))]
    if not spoken:  # all small talk: the words are all there is
        spoken = [f"{_speaker(who)}{said}" for who, said in turns if said]
    return " ".join(spoken) if spoken else query
