"""Checks on values that come from callers: one layer every entry point uses.

Each check raises `ValueError` with a message naming the field, so the caller (an `Entry`
being normalised, a filter, a file line) can prefix where it came from and raise
`InputError`. Everything is checked before the first write: the store only ever sees
values it can hold (valid Unicode, JSON without NaN, integers SQLite can bind).
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime, timezone
from typing import Any, Callable, TypeVar

from .errors import InputError

T = TypeVar("T")

MAX_ID_CHARS = 256  # ids and namespaces: room for a UUID, a path or a URL, not for a document
MAX_JSON_DEPTH = 32  # nesting of metadata objects and lists
INT64 = 2**63


def checked(check: Callable[..., T], *args: Any) -> T:
    """`check(*args)` with its `ValueError` raised as `InputError` (for a public call's arguments)."""
    try:
        return check(*args)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def shown(value: Any, limit: int = 20) -> str:
    """A value as an error message quotes it: its repr, cut to `limit` characters with "…" (an
    integer too long to print whole says how many digits it has)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 14_000 else 'over 4,000'} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_unicode(value: str, what: str) -> str:
    """`value` itself, if every backend can store it: UTF-8 (no lone surrogates) without NUL
    characters (PostgreSQL cannot store them in text; refused on every backend, before the
    first write, so a store can always move to another)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is not valid Unicode (a lone surrogate at position {exc.start})") from None
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL character (\\x00) at position {value.index(chr(0))}; "
                         "remove it (it cannot be stored)")
    return value


def check_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {_type(value)}")
    return check_unicode(value, what)


def check_optional_str(value: Any, what: str) -> str | None:
    """A string, or None (an empty string counts as none)."""
    if value is None or value == "":
        return None
    return check_str(value, what)


#: Unicode's explicit bidirectional embeddings, overrides and isolates.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_name(value: Any, what: str) -> str:
    """An id or a namespace: a non-empty string of at most `MAX_ID_CHARS`, no control characters."""
    text = check_str(value, what)
    if not text.strip():
        raise ValueError(f"{what} must not be empty")
    if len(text) > MAX_ID_CHARS:
        raise ValueError(f"{what} is {len(text)} characters long; the limit is {MAX_ID_CHARS}")
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in text):
        raise ValueError(f"{what} must not contain control characters")
    if any(ch in _BIDI_CONTROLS for ch in text):
        # They reorder how the name is shown ("rtl\u202ens" lists as "rtlsn"): a name that reads as another
        raise ValueError(f"{what} must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)")
    if "namespace" in what and text != text.strip():
        # " pad " was a namespace apart from "pad" (an all-spaces one was refused): a slip, not a name
        raise ValueError(f"{what} {text!r:.60} has spaces at its ends; give {text.strip()!r:.60}")
    return text


#: Ids an entry may not take: a URL path folds them away (`/v1/memories/..` is the collection's
#: parent, even spelled %2E%2E in a browser), so the HTTP API and the web page could never reach it.
DOT_SEGMENTS = (".", "..")


def check_entry_id(value: Any, what: str = "entry id") -> str:
    """A new entry's id: a name (`check_name`) that is not ``.`` or ``..``."""
    text = check_name(value, what)
    if text in DOT_SEGMENTS:
        raise ValueError(f"{what} must not be {text!r}: '.' and '..' cannot be addressed in a URL path "
                         "(/v1/memories/ID); choose another id")
    return text


def check_str_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of strings, not {_type(value)}")
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"{what} must be a list of strings (found {_type(item)})")
        check_unicode(item, what)
    return list(value)


def check_json_scalar(value: Any, what: str) -> Any:
    """A JSON scalar a filter can compare with: string, finite number, 64-bit integer, bool, null."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -INT64 <= value < INT64:
            raise ValueError(f"{what}: integer out of the 64-bit range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{what}: {value} is not a JSON number (NaN and Infinity are not allowed)")
        return value
    if isinstance(value, str):
        return check_unicode(value, what)
    raise ValueError(f"{what} must be a string, number, true, false or null, not {_type(value)}")


def check_json_object(value: Any, what: str) -> dict[str, Any]:
    """A JSON object of JSON values: string keys, finite numbers, 64-bit integers, valid
    Unicode, nested at most `MAX_JSON_DEPTH` deep. Iterative, so depth cannot blow the stack."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a JSON object, not {_type(value)}")
    stack: list[tuple[Any, str, int]] = [(value, what, 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    raise ValueError(f"{where} keys must be strings, not {_type(key)}")
                check_unicode(key, f"{where} key")
                stack.append((item, f"{where}.{key}", depth + 1))
        elif isinstance(node, (list, tuple)):
            for index, item in enumerate(node):
                stack.append((item, f"{where}[{index}]", depth + 1))
        else:
            check_json_scalar(node, where)
    return value


def normalize_timestamp(value: str | datetime | None, what: str = "timestamp") -> str | None:
    """Return an ISO 8601 timestamp in UTC, or None.

    Timezone rule: an aware value is converted to UTC; a naive value (no offset) is taken
    to *be* UTC. Conversations usually carry local wall-clock times with no zone, and
    treating them as UTC keeps "8 May 2023, 1:56 pm" on 8 May whatever the machine's zone.
    Date-only strings ("2023-05-08") mean midnight of that day. Times whose UTC value falls
    outside the years 1–9999 (``9999-12-31T23:59:59-05:00``) are refused.
    """
    aware = aware_timestamp(value, what)
    return aware.astimezone(timezone.utc).isoformat(timespec="seconds") if aware else None


_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")
_LONG_YEAR = re.compile(r"[+-]?(\d{5,})-\d{2}(?:-\d{2})?(?:[T ]|$)")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?", re.DOTALL)
# A time of day datetime reads (13:56, 13:56:00, 13:56:00.123), before a zone.
_CLOCK = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{1,6})?)?")


def _why_not_a_time(text: str) -> str:
    """Why ``text`` is no time ``datetime.fromisoformat`` reads: a date that does not exist, a year or month
    alone (a period, not a time: which instant was meant is the caller's to say), or not ISO 8601 at all."""
    if any(ch.isdigit() and not ch.isascii() for ch in text):  # ２０２４-０３-１４ (a CJK input method's digits)
        return "has digits other than 0-9 (full-width or another script's): write them as 0-9, e.g. 2023-05-08"
    if (year := _LONG_YEAR.match(text)) is not None:  # 10000-01-01: ISO's form, past datetime's years
        return f"has year {year[1]}, out of range (years 1 to 9999)"
    if (period := _YEAR_MONTH.fullmatch(text)) is not None:
        start = f"{period[1]}-{period[2] or '01'}-01"
        return f"is a {'month' if period[2] else 'year'}, not a time: give a day, e.g. {start}"
    if (day := _DATE.fullmatch(text)) is not None:
        try:
            date(int(day[1]), int(day[2]), int(day[3]))
        except ValueError as exc:
            return f"is not a date that exists ({exc})"
        try:
            datetime.fromisoformat(text[10:].replace(" ", "T", 1).replace("T", "2000-01-01T", 1))
        except ValueError:
            # The time of day is fine and what follows it is not: a zone's name or an offset past ±24:00.
            clock = _CLOCK.match(text[11:])
            if clock is not None and text[11 + clock.end():].strip():
                return (f"has a time zone it cannot read ({text[11 + clock.end():].strip()!r}): give an offset, "
                        "e.g. 2023-05-08T13:56:00-08:00, or Z for UTC")
            return "has no such time of day (e.g. 2023-05-08T13:56:00)"
    return "is not ISO 8601 (e.g. 2023-05-08T13:56:00)"


def aware_timestamp(value: str | datetime | None, what: str = "timestamp") -> datetime | None:
    """The same reading as `normalize_timestamp`, to the second, but keeping the value's own
    UTC offset: what a relative time ("yesterday", "上周") said at that moment means depends on
    the speaker's calendar, not UTC's. Storage uses the UTC form."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        check_unicode(value, what)
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            shown = value if len(value) <= 40 else value[:37] + "..."
            raise ValueError(f"{what} {shown!r} {_why_not_a_time(text)}") from None
    else:
        raise ValueError(f"{what} must be ISO 8601 text (e.g. 2023-05-08T13:56:00), not {_type(value)}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        dt.astimezone(timezone.utc).timestamp()
    except (OverflowError, ValueError, OSError):
        raise ValueError(f"{what} {dt.isoformat()} is out of range (years 1 to 9999 in UTC)") from None
    return dt.replace(microsecond=0)


def json_or_text(raw: str, scalars_only: bool = False) -> Any:
    """A command-line value: its JSON reading (``3``, ``true``, ``null``, ``[1, 2]``) when it is
    valid, finite JSON (only a scalar if `scalars_only`), else the text itself (``NaN``,
    ``1e999`` and 5,000-digit numbers stay text)."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
        check_json_object({"v": value}, "value")
    except (ValueError, RecursionError):
        return raw
    if scalars_only and isinstance(value, (dict, list)):
        return raw
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def env_int(name: str, default: int) -> int:
    """A positive whole number from the environment variable `name` (unset or empty: `default`);
    anything else is an `InputError` naming the variable."""
    import os

    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"${name} must be a whole number, not {raw!r:.40}") from None
    if value < 1:
        raise InputError(f"${name} must be at least 1")
    return value
