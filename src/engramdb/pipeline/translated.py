"""The ``translated`` channel: BM25 over the query's terms translated into the other language.

An English question about a Chinese memory (or the reverse) shares no term with it, so the
lexical channel cannot see it, and multilingual-e5-small ranks same-language entries that
share the question's words above it (docs/BENCHMARKS.md, "Cross-lingual recall"). This
channel translates the analysed query terms through CC-CEDICT (`engramdb.text.bilingual`) and
runs the store's ordinary BM25 over the translations, with the search's namespace and filters.

It keeps only entries written in the *other* script than the question: a Chinese passage that
happens to contain "BBC" or "2019" is the lexical channel's business, not a cross-lingual
match (see `translated_search` for how this is checked cheaply), and dropping it makes the channel silent on monolingual data (CMRC 2018 was measured
worse with a channel that kept them). A query with no translatable term, or a weight of 0,
returns nothing and costs no store call.

The hits are not fused as a channel of their own but merged into the lexical channel's list,
each at ``scale`` (the preset's ``[channels.translated] weight``) times its BM25: z-scoring a
list that exists for every query lifted the other language's best match above the right
same-language answer (the dev set's same-language controls fell from 0.977 to 0.931 nDCG@10),
while on one BM25 scale a translation competes with the words themselves (0.977 kept). An
entry both lists found gets the sum, as BM25 sums over a query's terms: in a code-mixed
question ("Bob 喝什么") the name matches directly and 喝 through its translation "drink".
"""

from __future__ import annotations

from typing import Sequence

from ..store.base import Filters, Store
from ..text.bilingual import script, translate_query

__all__ = ["translated_search", "OVERSAMPLE"]

#: BM25 depth before the other-script cut, as a multiple of the channel's k.
OVERSAMPLE = 2


def translated_search(store: Store, text: str, k: int, namespace: str | None,
                      filters: Filters, scale: float = 1.0, *,
                      terms: Sequence[str] | None = None) -> list[tuple[int, float]]:
    """Top-k (rowid, BM25 x `scale`) of the other-script entries matching `text`'s translated terms.

    An English question's translations are Chinese words, which only Chinese text contains in
    practice, so its hits are taken as they come; a Chinese question's English translations
    also match Chinese entries that quote an English word, so those hits are read (``fetch``)
    and only English ones kept, from ``OVERSAMPLE`` x k candidates. `terms`: the translations
    of `text`, when the caller has them already (`translate_query`).
    """
    if scale <= 0:
        return []
    terms = translate_query(text) if terms is None else list(terms)
    if not terms:
        return []
    if script(text) == "en":
        return [(rowid, score * scale) for rowid, score in store.lexical(terms, k, namespace, filters)]
    rows = store.lexical(terms, k * OVERSAMPLE, namespace, filters)
    if not rows:
        return []
    entries = store.fetch([rowid for rowid, _ in rows])
    return [(rowid, score * scale) for rowid, score in rows
            if rowid in entries and script(entries[rowid].text) == "en"][:k]
