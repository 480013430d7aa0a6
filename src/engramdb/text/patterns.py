"""Exact strings worth finding verbatim: identifiers, numbers and quoted phrases.

PingHybridSearch sends the whole query to ``LIKE '%query%'``, which only hits when an entry
contains the question word for word. We look instead for the parts of a query that are meant
literally — ``v2.3.1``, ``ERR_CONN_RESET``, ``ENG-1234``, ``5433``, ``"tram 28"``, ``《三体》`` —
and let the substring channel find entries containing them, fused like any other channel
rather than forced to the top.
"""

from __future__ import annotations

import re

from .tokenize import normalize

_QUOTED = re.compile(r"[\"“”「『《]([^\"“”「」『』《》]{2,80})[\"“”」』》]")
# An identifier (parts joined by separators) or a word with a digit. A match only starts where
# a run of [a-z0-9] starts: tried from inside a run it would end where the try from the run's
# start ended, so it could only repeat that one's failure, and retrying at every position of a
# long run is quadratic ("aaa…a" of 20,000 characters took seconds). The one start inside a run
# that can match is a non-ASCII digit ("v٣"), which \d covers and [a-z0-9] does not.
_TOKEN = re.compile(r"(?<![a-z0-9])(?:[a-z0-9]+(?:[._\-/:+#][a-z0-9]+)+|[a-z]*\d[a-z0-9]*)"
                    r"|(?<=[a-z0-9])(?![0-9])\d[a-z0-9]*")


def exact_patterns(query: str, max_patterns: int = 6) -> list[str]:
    """Lower-cased literal strings of `query`: quoted phrases, identifiers, numbers of 2+ digits."""
    text = normalize(query)
    found = [m.group(1).strip() for m in _QUOTED.finditer(text)]
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        has_separator = any(ch in token for ch in "._-/:+#")
        digits = sum(ch.isdigit() for ch in token)
        if has_separator or (digits and len(token) >= 2):
            found.append(token)
    return list(dict.fromkeys(p for p in found if p))[:max_patterns]
