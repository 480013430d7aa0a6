"""Analysis for the lexical channel: mixed Chinese/English text to BM25 terms.

FTS5's default tokenizer (like most BM25 analysers) treats a run of Chinese characters as one
token, so a Chinese sentence becomes a single unsearchable term. We analyse text ourselves:

* CJK runs are segmented with jieba in search mode (words plus their sub-words, so both
  "支持小组" and "小组" match);
* Latin words are lower-cased, stopwords dropped and Snowball-stemmed ("painted" -> "paint");
* identifiers (``v2.3.1``, ``ERR_CONN_RESET``, ``a1b2c3d``) are kept whole as one term
  (separators folded to ``_``) *and* split into their parts, so both exact and partial
  queries find them.

The same function analyses documents and queries, which keeps both sides consistent.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache
from importlib import resources

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|([a-z0-9]+(?:[._\-/:+#][a-z0-9]+)*)")

_jieba_lock = threading.Lock()
_jieba = None


def _load_words(name: str) -> frozenset[str]:
    text = resources.files("engramdb.text").joinpath(name).read_text(encoding="utf-8")
    return frozenset(text.split())


STOPWORDS_EN: frozenset[str] = _load_words("stopwords_en.txt")
STOPWORDS_ZH: frozenset[str] = _load_words("stopwords_zh.txt")


def get_jieba():  # type: ignore[no-untyped-def]
    """Load jieba once (its dictionary takes ~1 s), quietly and thread-safely."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


_stemmer_local = threading.local()


def _stem(word: str) -> str:
    # PyStemmer objects are not thread-safe: one per thread.
    stemmer = getattr(_stemmer_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        _stemmer_local.stemmer = stemmer
    return stemmer.stemWord(word)


@lru_cache(maxsize=65536)
def _latin_terms(word: str) -> tuple[str, ...]:
    if re.fullmatch(r"[a-z]+", word):
        if word in STOPWORDS_EN or len(word) < 2:
            return ()
        return (_stem(word),)
    if re.fullmatch(r"[0-9]+", word):
        return (word,)
    # Identifier-like: keep whole (separators folded to '_') plus its parts.
    whole = re.sub(r"[._\-/:+#]", "_", word)
    parts = [p for p in re.split(r"[._\-/:+#]", word) if p]
    terms = [whole]
    for part in parts:
        if part.isalpha():
            if part not in STOPWORDS_EN and len(part) > 1:
                terms.append(_stem(part))
        else:
            terms.append(part)
    return tuple(dict.fromkeys(terms))


def _cjk_terms(run: str) -> list[str]:
    jieba = get_jieba()
    words = [w for w in jieba.lcut_for_search(run) if w.strip()]
    return [w for w in words if w not in STOPWORDS_ZH]


def normalize(text: str) -> str:
    """NFKC (full-width -> half-width) and lower case."""
    return unicodedata.normalize("NFKC", text).lower()


def analyze(text: str) -> list[str]:
    """Text to BM25 terms, in order, duplicates kept (term frequency matters)."""
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(normalize(text)):
        cjk, latin = match.groups()
        if cjk:
            terms.extend(_cjk_terms(cjk))
        else:
            terms.extend(_latin_terms(latin))
    return terms


def query_terms(text: str) -> list[str]:
    """Distinct analysed terms of a query, in first-seen order."""
    return list(dict.fromkeys(analyze(text)))
