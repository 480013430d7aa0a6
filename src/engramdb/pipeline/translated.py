"""The ``translated`` channel: BM25 over the query's terms translated into the other language.

An English question about a Chinese memory (or the reverse) shares no term with it, so the
lexical channel cannot see it, and multilingual-e5-small ranks same-language entries that
share the question's words above it (docs/BENCHMARKS.md, "Cross-lingual recall"). This
channel translates the analysed query terms through CC-CEDICT (`engramdb.text.bilingual`) and
runs the store's ordinary BM25 over the translations, with the search's namespace and filters.
A query with no translatable term returns nothing and costs no store call.
"""

from __future__ import annotations

from ..store.base import Filters, Store
from ..text.bilingual import translate_query

__all__ = ["translated_search"]


def translated_search(store: Store, text: str, k: int, namespace: str | None,
                      filters: Filters) -> list[tuple[int, float]]:
    """Top-k (rowid, BM25) of the entries matching `text`'s other-language terms."""
    terms = translate_query(text)
    if not terms:
        return []
    return store.lexical(terms, k, namespace, filters)
