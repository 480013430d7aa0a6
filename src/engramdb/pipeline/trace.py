"""A per-search record of what every stage did: inputs, candidates, scores and timings."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator


class Trace:
    """Collects stages in order; `to_dict()` is what `--json` and `--explain` show.

    ``info`` holds what applies to the whole search (preset, stage order, namespace, filters).
    """

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}
        self.stages: list[dict[str, Any]] = []

    @contextmanager
    def stage(self, name: str, **info: Any) -> Iterator[dict[str, Any]]:
        record: dict[str, Any] = {"stage": name, **info}
        # Appended on entry, so a stage that recalls again (gate retry, reflection) comes
        # before the stages it runs.
        self.stages.append(record)
        start = time.perf_counter()
        try:
            yield record
        finally:
            record["ms"] = round((time.perf_counter() - start) * 1000, 3)

    def to_dict(self) -> dict[str, Any]:
        """The search-wide info and the stage records (the caller adds ``total_ms``)."""
        return {**self.info, "stages": self.stages}
