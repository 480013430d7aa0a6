"""Relevance gates: which fused candidates are good enough to show at all (Molore's design).

* ``min_score``: an absolute floor on the fused score;
* ``min_relative``: a floor on the fused score min-max normalised over the candidates, so it
  means "this far below the best" whatever the fusion's scale (Molore's relative water line);
* ``min_cosine`` / ``min_keyword_hits``: absolute signals — a candidate whose vector *and*
  keyword evidence are both weak is dropped (keyword evidence = how many distinct query terms
  the entry contains; without ``min_keyword_hits``, being found by any non-semantic channel);
* ``keyword_exempt``: an entry covering this many distinct query terms passes the score
  floors (long documents dilute BM25; coverage, not raw hits, is the evidence);
* ``cross_lingual``: an entry in another script than the question (Chinese question, English
  note) has no keyword signal by nature; it passes on its cosine alone.

A search whose gates pass nothing retries once (CRAG-style, see `stages.GateStage`) with the
``retry_*`` floors in place of ``min_relative``/``min_keyword_hits`` — Molore relaxes to 0.2
and 2 — or, without them, with no gates at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from ..model import Candidate
from ..text.tokenize import query_terms

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _script(text: str) -> str:
    return "cjk" if len(_CJK.findall(text)) * 3 >= len(text.strip()) else "latin"


@dataclass(frozen=True, slots=True)
class GateConfig:
    """The floors of one preset; all unset (the default) lets everything through."""

    min_score: float | None = None
    min_relative: float | None = None
    min_cosine: float | None = None
    min_keyword_hits: int | None = None
    keyword_exempt: int | None = None
    cross_lingual: bool = False
    retry_min_relative: float | None = None
    retry_min_keyword_hits: int | None = None

    def relaxed(self) -> "GateConfig | None":
        """The gates of the retry round: the ``retry_*`` floors, or None (no gates) if unset."""
        if self.retry_min_relative is None and self.retry_min_keyword_hits is None:
            return None
        return replace(self, min_relative=self.retry_min_relative, min_keyword_hits=self.retry_min_keyword_hits,
                       retry_min_relative=None, retry_min_keyword_hits=None)

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.min_score, self.min_relative, self.min_cosine, self.min_keyword_hits))

    def apply(self, fused: Sequence[Candidate], query: str, coverage: dict[int, int] | None = None
              ) -> list[Candidate]:
        """Keep the candidates that pass. ``coverage`` maps rowid to the number of distinct query
        terms the entry contains (the store's index knows it); without it, the attached entries'
        text is analysed here (slower on long text)."""
        if not fused:
            return []
        terms = set(query_terms(query))
        query_script = _script(query)
        top, bottom = max(c.score for c in fused), min(c.score for c in fused)
        span = top - bottom
        kept: list[Candidate] = []
        for c in fused:
            text = c.entry.text if c.entry is not None else ""
            if not terms:
                covered = 0
            elif coverage is not None:
                covered = coverage.get(c.rowid, 0)
            else:
                covered = len(terms & set(query_terms(text)))
            semantic = c.channels.get("semantic")
            cosine = semantic.score if semantic is not None else None
            strong_vector = cosine is not None and (self.min_cosine is None or cosine >= self.min_cosine)
            cross = (self.cross_lingual and covered == 0 and cosine is not None and strong_vector
                     and _script(text) != query_script)
            if self.min_cosine is not None or self.min_keyword_hits is not None:
                if self.min_keyword_hits is not None:
                    strong_keywords = covered >= self.min_keyword_hits
                else:
                    strong_keywords = bool(set(c.channels) - {"semantic"})
                if not strong_vector and not strong_keywords:
                    continue
            exempt = cross or (self.keyword_exempt is not None and covered >= self.keyword_exempt)
            relative = (c.score - bottom) / span if span else 1.0
            if not exempt and ((self.min_score is not None and c.score < self.min_score)
                               or (self.min_relative is not None and relative < self.min_relative)):
                continue
            kept.append(c)
        return kept
