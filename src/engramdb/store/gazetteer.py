"""Names the store already knows (people, entities, places), matched against query text.

No NER model is needed: the gazetteer is built from the tags of stored entries, per
namespace, and rebuilt only when the store has changed since. It is backend-neutral: a
store hands it two functions, one that says which version of its data it holds (any value
that changes with every write) and one that lists a namespace's name tags, so every
backend matches names in a query the same way.
"""

from __future__ import annotations

import re
import threading
from typing import Callable, Hashable, Iterable

from ..text.romanize import person_keys, query_keys
from ..text.tokenize import normalize
from .channels import NAME_FIELDS

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_MIXED = re.compile(r"[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9][a-z0-9'._\-]*")
_MAX_WORDS = 5


NameRows = Callable[[str | None], Iterable[tuple[str, str]]]


class Gazetteer:
    """Matches the names a namespace's entries are tagged with (`NAME_FIELDS`) in text.

    `version()` is the store's data version, `rows(namespace)` the distinct (field, value)
    name tags of that namespace (None: of every namespace).
    """

    def __init__(self, version: Callable[[], Hashable], rows: NameRows) -> None:
        self._version, self._rows = version, rows
        self._lock = threading.Lock()
        self._seq: Hashable = None
        self._names: dict[str | None, dict[str, list[tuple[str, str]]]] = {}
        # Names mixing CJK with other characters ("产品 xyz", "iphone 15 pro max"): the word and
        # CJK-run n-grams below cannot cut them out of a query, so they are found by substring.
        self._mixed: dict[str | None, list[str]] = {}
        # Persons by the pinyin key of their name (text/romanize.py): "Wang Fang" in a question
        # finds the entries tagged 王芳, and 王芳 those tagged "wang fang".
        self._keys: dict[str | None, dict[str, list[tuple[str, str]]]] = {}

    def _sync(self) -> None:
        seq = self._version()
        if seq == self._seq:
            return
        with self._lock:
            if seq == self._seq:
                return
            self._names = {}
            self._mixed = {}
            self._keys = {}
            self._seq = seq

    def names(self, namespace: str | None) -> dict[str, list[tuple[str, str]]]:
        """Lower-cased name -> [(field, value)] for one namespace (None: all)."""
        self._sync()
        cached = self._names.get(namespace)
        if cached is not None:
            return cached
        table: dict[str, list[tuple[str, str]]] = {}
        for field, value in self._rows(namespace):
            if field in NAME_FIELDS:
                table.setdefault(value, []).append((field, value))
        self._mixed[namespace] = [name for name in table if _CJK_RUN.search(name) and _MIXED.search(name)]
        keys: dict[str, list[tuple[str, str]]] = {}
        for name, pairs in table.items():
            people = [pair for pair in pairs if pair[0] == "person"]
            for key in person_keys(name) if people else ():
                keys.setdefault(key, []).extend(people)
        self._keys[namespace] = keys
        self._names[namespace] = table
        return table

    def match(self, namespace: str | None, query: str) -> list[tuple[str, str]]:
        """(field, value) pairs for every known name that occurs in the query."""
        table = self.names(namespace)
        if not table:
            return []
        text = normalize(query)
        found: dict[tuple[str, str], None] = {}
        words = [w.strip("'._-") for w in _WORD.findall(text)]
        words = [w[:-2] if w.endswith("'s") else w for w in words]
        for size in range(1, _MAX_WORDS + 1):
            for start in range(0, len(words) - size + 1):
                for pair in table.get(" ".join(words[start : start + size]), ()):
                    found[pair] = None
        for name in self._mixed.get(namespace, ()):
            if name in text:
                for pair in table[name]:
                    found[pair] = None
        keys = self._keys.get(namespace)
        if keys:
            for key in query_keys(query):
                for pair in keys.get(key, ()):
                    found[pair] = None
        for run in _CJK_RUN.findall(text):
            for size in range(2, min(len(run), 8) + 1):
                for start in range(0, len(run) - size + 1):
                    for pair in table.get(run[start : start + size], ()):
                        found[pair] = None
        return list(found)
