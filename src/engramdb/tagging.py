"""People a plain note names, tagged from the names its namespace already knows.

A conversation's turns carry their speakers and its facts the people they name, so the symbolic
channel finds them for "Where does Alice live?"; a note added with `Memory.add` carries no tag
unless the caller gives one, and lost to Alice's turns that merely share her name ("Alice: Her
name is Biscuit." above "Alice moved to Porto."). A note that gives no people is tagged with
the namespace's known people (the planner's gazetteer: `Store.match_names`) its text names, spelt
as the text spells them. No NER model: a name the store has never seen tagged is not guessed.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from .model import Entry
from .text.dialogue import CHAT_ROLES

#: the store's ``match_names(namespace, text)``: (field, value) pairs of known names in a text
MatchNames = Callable[[str | None, str], "list[tuple[str, str]]"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def tag_known_people(entries: Sequence[Entry], namespace: str, match_names: MatchNames) -> int:
    """Give each entry that names no person (not a turn: its speaker is its person) the known
    people its text names; returns how many entries were tagged."""
    tagged = 0
    for entry in entries:
        if entry.persons or entry.kind == "turn":
            continue
        # a chat's roles are tagged as speakers, but "the user manual" names no one
        names = [value for field, value in match_names(namespace, entry.text)
                 if field == "person" and value.lower() not in CHAT_ROLES]
        spelled = [found for name in names if (found := _as_written(name, entry.text))]
        if spelled:
            entry.persons = list(dict.fromkeys(spelled))
            tagged += 1
    return tagged


def _as_written(name: str, text: str) -> str | None:
    """`name` (a normalised tag) as `text` writes it, or None when it is not there letter for
    letter (a name found through its pinyin key is another script's: not spelt in this text)."""
    pattern = re.escape(name) if _CJK.search(name) else rf"(?<!\w){re.escape(name)}(?!\w)"
    found = re.search(pattern, text, re.IGNORECASE)
    return found.group(0) if found else None
