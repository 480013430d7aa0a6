"""Grouping: collapse several chunks of one source into its best one, or cap them per source."""

from __future__ import annotations

from ..errors import InputError
from ..model import Candidate, Entry

GROUP_KEYS = ("doc", "path", "session")


def group_key(entry: Entry, by: str) -> str | None:
    src = entry.source
    if by == "doc":
        return src.doc_id or src.path
    if by == "path":
        return src.path
    if by == "session":
        return src.session_id
    raise InputError(f"group_by must be one of {', '.join(GROUP_KEYS)}, not {by!r}")


def collapse(candidates: list[Candidate], by: str) -> list[Candidate]:
    """Keep the first (best) candidate per group; entries without a group key stay as they are."""
    return cap(candidates, by, 1)


def cap(candidates: list[Candidate], by: str, per_group: int) -> list[Candidate]:
    """Keep at most `per_group` candidates per group, in order (Molore keeps 3 chunks per
    document in its deep pool); entries without a group key are never capped."""
    counts: dict[str, int] = {}
    out: list[Candidate] = []
    for cand in candidates:
        assert cand.entry is not None
        key = group_key(cand.entry, by)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
            if counts[key] > per_group:
                continue
        out.append(cand)
    return out
