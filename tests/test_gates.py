"""Relevance gates on crafted candidates."""

from __future__ import annotations

from engramdb.model import Candidate, ChannelScore, Entry
from engramdb.pipeline.gates import GateConfig


def _cand(rowid: int, score: float, text: str, cosine: float | None = None, lexical: float | None = None) -> Candidate:
    channels = {}
    if cosine is not None:
        channels["semantic"] = ChannelScore(rank=1, score=cosine)
    if lexical is not None:
        channels["lexical"] = ChannelScore(rank=1, score=lexical)
    return Candidate(rowid=rowid, score=score, channels=channels, entry=Entry(text=text).normalized("ns"))


QUERY = "staging database port password rotation"
POOL = [
    _cand(1, 2.0, "The staging database port is 5433.", cosine=0.8, lexical=9.0),          # relative 1.0
    _cand(2, 1.0, "Rotate the staging database password every month.", cosine=0.5, lexical=4.0),  # 0.6
    _cand(3, 0.0, "A long page that mentions the port once.", cosine=0.3, lexical=0.5),    # 0.2
    _cand(4, -0.5, "Database backups run nightly.", cosine=0.62),                           # 0.0, vector only
    _cand(5, -0.5, "预发环境数据库端口和密码轮换说明", cosine=0.7),                           # 0.0, Chinese
]


def ids(kept: list[Candidate]) -> list[int]:
    return [c.rowid for c in kept]


def test_no_floors_keep_everything() -> None:
    assert not GateConfig().active and ids(GateConfig().apply(POOL, QUERY)) == [1, 2, 3, 4, 5]


def test_relative_floor_is_scale_free() -> None:
    assert ids(GateConfig(min_relative=0.5).apply(POOL, QUERY)) == [1, 2]
    doubled = [_cand(c.rowid, c.score * 10, c.entry.text) for c in POOL]
    assert ids(GateConfig(min_relative=0.5).apply(doubled, QUERY)) == [1, 2]


def test_keyword_coverage_exempts_from_the_score_floor() -> None:
    # Row 3 covers only "port"; row 2 covers staging, database, password: 3 distinct terms.
    gate = GateConfig(min_relative=0.7, keyword_exempt=3)
    assert ids(gate.apply(POOL, QUERY)) == [1, 2]
    assert ids(GateConfig(min_relative=0.7).apply(POOL, QUERY)) == [1]


def test_weak_vector_and_weak_keywords_are_dropped() -> None:
    gate = GateConfig(min_cosine=0.6, min_keyword_hits=2)
    # 3: cosine 0.3 and one term -> out; 4: cosine 0.62 -> in on its vector; 2: 0.5 but 3 terms -> in.
    assert ids(gate.apply(POOL, QUERY)) == [1, 2, 4, 5]
    # Without min_keyword_hits, any non-semantic channel counts as keyword evidence.
    assert ids(GateConfig(min_cosine=0.75).apply(POOL, QUERY)) == [1, 2, 3]


def test_cross_lingual_candidates_pass_on_their_cosine() -> None:
    strict = GateConfig(min_relative=0.5, min_cosine=0.6)
    assert ids(strict.apply(POOL, QUERY)) == [1, 2]
    # Row 5 (Chinese, no keyword overlap, cosine 0.7 >= 0.6) is let through; row 4 (English) is not.
    assert ids(GateConfig(min_relative=0.5, min_cosine=0.6, cross_lingual=True).apply(POOL, QUERY)) == [1, 2, 5]


def test_store_term_coverage_matches_the_text(mem) -> None:  # type: ignore[no-untyped-def]
    """The gate reads coverage from the store's term index; it must agree with the text."""
    from engramdb.text.tokenize import query_terms

    texts = [c.entry.text for c in POOL]
    ids_ = mem.add(texts)
    rowids = {e.id: r for r, e in mem.store.fetch(list(range(1, 20))).items()}
    terms = query_terms(QUERY)
    coverage = mem.store.term_coverage(terms, [rowids[i] for i in ids_])
    by_text = [len(set(terms) & set(query_terms(t))) for t in texts]
    assert [coverage[rowids[i]] for i in ids_] == by_text
    assert by_text[:2] == [3, 4] and mem.store.term_coverage(terms, [10_000]) == {10_000: 0}
    # The gate gives the same verdict with the index's coverage as with the text's.
    gate = GateConfig(min_cosine=0.55, min_keyword_hits=3, keyword_exempt=3, min_relative=0.5)
    pool = [Candidate(rowid=rowids[i], score=c.score, channels=c.channels, entry=c.entry) for i, c in zip(ids_, POOL)]
    from_index = gate.apply(pool, QUERY, mem.store.term_coverage(terms, [c.rowid for c in pool]))
    assert ids(from_index) == ids(gate.apply(pool, QUERY))
