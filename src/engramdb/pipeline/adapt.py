"""Query-adaptive channel weights: a dialogue context is not a focused question.

A focused question ("Where does Alice live?", a SciFact claim) names what it wants; BM25 on
its few terms is the strongest single channel, hence the default's lexical lean. An agent's
query is often the conversation as it stands — several chatty utterances, most of whose
words are not in the memory it needs. Each extra weak term adds BM25 noise while the
embedding of the whole context stays on topic, so the lexical lean becomes wrong. The
preset's ``[adapt]`` section moves the weights from the channels' own (at ``from_terms``
distinct analysed query terms or fewer) linearly to ``[adapt.weights]`` (at ``to_terms`` or
more). A dialogue context (two or more speaker turns, `text.dialogue`) is chatty whatever
its length, so with ``dialogue = true`` it takes ``[adapt.weights]`` in full even when it is
short. Measured in docs/BENCHMARKS.md ("Query-adaptive weights").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..text.dialogue import is_dialogue
from ..text.tokenize import query_terms


ADAPT_KEYS = ("from_terms", "to_terms", "weights", "dialogue")


@dataclass(frozen=True, slots=True)
class AdaptConfig:
    """Weights for long queries (and, with `dialogue`, for every dialogue context); empty
    `weights` means no adaptation."""

    from_terms: int = 12
    to_terms: int = 24
    weights: dict[str, float] = field(default_factory=dict)
    dialogue: bool = False

    @property
    def enabled(self) -> bool:
        return bool(self.weights)


@lru_cache(maxsize=256)
def query_length(query: str) -> int:
    """Distinct analysed terms (stemmed English words, jieba words for Chinese, no stopwords).

    Cached: recall (the feedback channel's weight) and fusion both ask for each query."""
    return len(set(query_terms(query)))


@lru_cache(maxsize=256)
def query_shape(query: str) -> tuple[int, bool]:
    """A query's distinct analysed terms, and whether it is a dialogue context."""
    return query_length(query), is_dialogue(query)


def adapted_weights(weights: dict[str, float], conf: AdaptConfig, terms: int,
                    dialogue: bool = False) -> tuple[dict[str, float], float]:
    """The channel weights for a query of `terms` distinct terms (a dialogue context or not),
    and how far (0..1) they moved from the channels' own towards ``conf.weights``."""
    if not conf.enabled:
        return dict(weights), 0.0
    if dialogue and conf.dialogue:
        share = 1.0
    elif terms <= conf.from_terms:
        return dict(weights), 0.0
    else:
        share = min(1.0, (terms - conf.from_terms) / max(1, conf.to_terms - conf.from_terms))
    out = dict(weights)
    for channel, target in conf.weights.items():
        if channel in out:
            out[channel] = round((1 - share) * out[channel] + share * target, 6)
    return out, round(share, 4)


def parse_adapt(section: dict[str, Any], channels: set[str], fail: Any) -> AdaptConfig:
    """`[adapt]` from a preset table; `fail(message)` returns the preset error to raise."""
    if not section:
        return AdaptConfig()
    unknown = set(section) - set(ADAPT_KEYS)
    if unknown:
        raise fail(f"[adapt] takes only {', '.join(ADAPT_KEYS)} (not {', '.join(sorted(unknown))})")
    dialogue = section.get("dialogue", False)
    if not isinstance(dialogue, bool):
        raise fail("adapt.dialogue must be true or false")
    low, high = section.get("from_terms", 12), section.get("to_terms", 24)
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10_000 for v in (low, high)) or high <= low:
        raise fail("adapt.from_terms and adapt.to_terms must be integers with from_terms < to_terms")
    weights = section.get("weights") or {}
    if not isinstance(weights, dict) or not weights:
        raise fail("[adapt.weights] must be a table of channel = weight")
    for channel, weight in weights.items():
        if channel not in channels:
            raise fail(f"adapt.weights.{channel}: the preset has no such channel")
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not 0 <= weight <= 100:
            raise fail(f"adapt.weights.{channel} must be a number from 0 to 100")
    return AdaptConfig(from_terms=low, to_terms=high, weights={k: float(v) for k, v in weights.items()},
                       dialogue=dialogue)
