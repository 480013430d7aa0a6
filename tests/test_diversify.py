"""MMR selection on crafted candidates (hand-computed) and through a preset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engramdb import Memory
from engramdb.model import Candidate, Entry, Source
from engramdb.pipeline.diversify import mmr, similarity_matrix


def _cand(rowid: int, score: float, session: str, persons: list[str]) -> Candidate:
    entry = Entry(text=f"row {rowid}", persons=persons, source=Source(session_id=session)).normalized("ns")
    return Candidate(rowid=rowid, score=score, entry=entry)


def test_similarity_combines_cosine_source_and_names() -> None:
    pool = [_cand(1, 1.0, "s1", ["Ann"]), _cand(2, 0.9, "s1", ["Ann", "Bo"]), _cand(3, 0.1, "s2", [])]
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    sim = similarity_matrix(pool, vectors)
    # 1 vs 2: cosine 1, same session, names {ann} / {ann, bo} -> 0.6 + 0.25 + 0.15 * 0.5
    assert sim[0, 1] == pytest.approx(0.6 + 0.25 + 0.075)
    assert sim[0, 2] == pytest.approx(0.0)


def test_mmr_trades_relevance_for_variety() -> None:
    pool = [_cand(1, 1.0, "s1", ["Ann"]), _cand(2, 0.9, "s1", ["Ann"]), _cand(3, 0.5, "s2", ["Bo"])]
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    # relevance (min-max): 1 -> 1, 2 -> 0.8, 3 -> 0. sim(1,2) = 1, sim(1,3) = sim(2,3) = 0.
    # lambda 0.5, second pick: row 2 -> 0.5*0.8 - 0.5*1 = -0.1; row 3 -> 0.5*0 - 0 = 0 -> row 3.
    assert [c.rowid for c in mmr(pool, 2, 0.5, vectors)] == [1, 3]
    # lambda 0.9: row 2 -> 0.72 - 0.1 = 0.62 beats row 3 (0.0).
    assert [c.rowid for c in mmr(pool, 2, 0.9, vectors)] == [1, 2]
    assert [c.rowid for c in mmr(pool, 3, 1.0, vectors)] == [1, 2, 3]


def test_mmr_preset_spreads_results(mem: Memory, tmp_path: Path) -> None:
    mem.add([{"text": f"Ann talked about the garden, part {i}.", "source": {"session_id": "s1"}} for i in range(4)]
            + [{"text": "Ann's garden has tomatoes and basil.", "source": {"session_id": "s2"}}])
    plain = tmp_path / "plain.toml"
    plain.write_text('[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[fusion]\nmethod = "weighted"\n')
    diverse = tmp_path / "diverse.toml"
    diverse.write_text(plain.read_text() + "[diversify]\nmmr_lambda = 0.3\npool = 10\n")
    first = mem.search("Ann garden", k=2, preset=str(plain))
    spread = mem.search("Ann garden", k=2, preset=str(diverse))
    assert {h.entry.source.session_id for h in first} == {"s1"}
    assert {h.entry.source.session_id for h in spread} == {"s1", "s2"}
    diversify = next(s for s in spread.trace["stages"] if s["stage"] == "diversify")
    assert diversify["mmr_lambda"] == 0.3 and diversify["pool"] == 5 and diversify["moved"] >= 1
    assert "skipped" in next(s for s in first.trace["stages"] if s["stage"] == "diversify")


def test_cap_per_document_on_crafted_candidates() -> None:
    from engramdb.pipeline.group import cap, collapse

    def chunk(rowid: int, doc: str | None) -> Candidate:
        return Candidate(rowid=rowid, entry=Entry(text=f"c{rowid}", source=Source(doc_id=doc)).normalized("ns"))

    pool = [chunk(1, "a"), chunk(2, "a"), chunk(3, "b"), chunk(4, "a"), chunk(5, None), chunk(6, "a"), chunk(7, None)]
    assert [c.rowid for c in cap(pool, "doc", 2)] == [1, 2, 3, 5, 7]
    assert [c.rowid for c in collapse(pool, "doc")] == [1, 3, 5, 7]


def test_per_doc_preset_lets_other_documents_in(mem: Memory, tmp_path: Path) -> None:
    mem.add([{"text": f"Kyoto travel tips, part {i}: temples and tea.", "source": {"doc_id": "guide"}}
             for i in range(5)] + [{"text": "Kyoto tea houses worth a visit.", "source": {"doc_id": "blog"}}])
    base = '[channels.semantic]\nk = 10\n[channels.lexical]\nk = 10\n[fusion]\nmethod = "weighted"\n'
    capped = tmp_path / "capped.toml"
    capped.write_text(base + "[group]\nper_group = 2\n")
    plain = tmp_path / "plain.toml"
    plain.write_text(base)
    docs = [h.entry.source.doc_id for h in mem.search("Kyoto travel tips temples tea", k=3, preset=str(capped))]
    assert docs.count("guide") == 2 and "blog" in docs
    plain_docs = [h.entry.source.doc_id for h in mem.search("Kyoto travel tips temples tea", k=3, preset=str(plain))]
    assert plain_docs == ["guide", "guide", "guide"]
