"""What a closed `Memory` holds instead of its store: every use says the Memory is closed."""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import MemoryClosedError


class ClosedStore:
    """Stands in for a closed store: any attribute raises `MemoryClosedError` (instead of the driver's
    "connection has been closed"); ``close`` is a no-op, so closing twice is fine."""

    def __init__(self, path: str) -> None:
        self._path = path

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> NoReturn:
        raise MemoryClosedError(f"this Memory is closed (store {self._path}); open a new Memory to use it")

    def __repr__(self) -> str:
        return f"ClosedStore({self._path!r})"

    def __reduce__(self) -> Any:  # pragma: no cover - pickling a closed Memory is not supported either
        raise MemoryClosedError("this Memory is closed")
