"""What the database and a URL can hold, checked at the edge (API schemas, imports, console query
strings) so that bad input gets an error naming it instead of a 500 later, or a row nobody can read back.

Plain functions over values; the year range comes from settings (INPUT_TIMESTAMP_MIN/MAX_YEAR).
"""
from __future__ import annotations

import datetime as dt
import re

from django.conf import settings

# PostgreSQL `integer` (Django's IntegerField / PositiveIntegerField).
PG_INTEGER_MAX = 2**31 - 1
# PostgreSQL `bigint`: the widest OFFSET / LIMIT a query can carry.
PG_BIGINT_MAX = 2**63 - 1

# An id that travels in a URL path must come back unchanged: letters, digits and a few marks that
# need no escaping, never '/', '?', '#', '%', spaces or control characters, never "." or "..".
URL_SAFE_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.:@~+=-]*$"
_URL_SAFE_ID = re.compile(URL_SAFE_ID_PATTERN)

# NUL cannot be stored in PostgreSQL text, unpaired surrogates cannot be encoded as UTF-8, and other
# C0/C1 control characters are never meant in a question, title or id (they hide text in the console).
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# Multi-line text (replies, article bodies) may hold tabs, line breaks and page breaks (PDF text).
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


# The same rules as JSON Schema patterns (ECMA-262), so the API's OpenAPI document states what the server
# enforces (unpaired surrogates cannot travel in valid JSON, so they need no pattern).
_ONE_LINE_CHAR = r"[^\u0000-\u001f\u007f-\u009f]"
_MULTILINE_CHAR = r"[^\u0000-\u0008\u000e-\u001f\u007f-\u009f]"
ONE_LINE_TEXT_PATTERN = rf"^{_ONE_LINE_CHAR}*$"
MULTILINE_TEXT_PATTERN = rf"^{_MULTILINE_CHAR}*$"


def required_text_pattern(*, multiline: bool) -> str:
    """Text with no control characters and more than whitespace."""
    char = _MULTILINE_CHAR if multiline else _ONE_LINE_CHAR
    return rf"^{char}*[^\s\u0000-\u001f\u007f-\u009f]{char}*$"


def year_range_pattern(low: int, high: int) -> str:
    """A pattern for an ISO date-time string whose year is in [low, high] (four-digit years): whole decades
    as one alternative each, the rest year by year."""
    alternatives, year = [], low
    while year <= high:
        if year % 10 == 0 and year + 9 <= high:
            alternatives.append(f"{year // 10}\\d")
            year += 10
        else:
            alternatives.append(str(year))
            year += 1
    return f"^(?:{'|'.join(alternatives)})-"


def _describe(char: str) -> str:
    if char == "\x00":
        return "a NUL character"
    if "\ud800" <= char <= "\udfff":
        return f"an unpaired surrogate (U+{ord(char):04X})"
    return f"the control character U+{ord(char):04X}"


def text_problem(value: str, *, multiline: bool = False, required: bool = True) -> str | None:
    """Why `value` cannot be stored as text, or None. `required` text must hold more than whitespace."""
    found = (_CONTROL_MULTILINE if multiline else _CONTROL_ONE_LINE).search(value)
    if found:
        return f"contains {_describe(found.group())} at position {found.start()}"
    if required and not value.strip():
        return "is blank (only whitespace)"
    return None


def url_id_problem(value: str) -> str | None:
    """Why `value` cannot be used as an id in a URL path, or None."""
    if _URL_SAFE_ID.match(value):
        return None
    return (
        "must start with a letter, digit or '_' and hold only letters, digits and _ . : @ ~ + = - "
        "(it is used in URL paths)"
    )


def timestamp_problem(value: dt.datetime) -> str | None:
    """Why `value` is not a plausible time for this product to store, or None (years configurable)."""
    low, high = settings.INPUT_TIMESTAMP_MIN_YEAR, settings.INPUT_TIMESTAMP_MAX_YEAR
    outside = f"must be between the years {low} and {high} (got {value.isoformat()})"
    if not low <= value.year <= high:
        return outside
    if value.tzinfo is not None and not low <= value.astimezone(dt.timezone.utc).year <= high:
        return outside
    return None

