"""The one mechanism that keeps driver errors from reaching a caller: a class decorator
wrapping every public method of a store, with each backend's own mapping."""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from ..errors import EngramError, StoreCorruptError

#: ``(store, driver exception) -> the Engram error to raise``
Mapper = Callable[[Any, Exception], EngramError]


def translating(driver_error: type[Exception], mapper: Mapper, unreadable: str) -> Callable[[type], type]:
    """A class decorator: every public method of the class raises Engram errors, never the
    driver's (`driver_error`, mapped by `mapper`). A row whose text is not UTF-8 or whose JSON
    does not parse — only damage or another program produces these — is a `StoreCorruptError`
    with `unreadable` (formatted with ``location`` and ``error``)."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except driver_error as exc:
                raise mapper(self, exc) from exc
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                location = getattr(self, "location", None) or getattr(self, "path", "?")
                raise StoreCorruptError(unreadable.format(location=location, error=type(exc).__name__)) from exc

        return wrapper

    def decorate(cls: type) -> type:
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and callable(value) and not isinstance(value, type):
                setattr(cls, name, wrap(value))
        return cls

    return decorate
