"""Dates written in article text: effective dates ("as of 1 October 2025") and end dates ("until 2024").

Executable rules reason about *content* dates, which often differ from the `updated_at` metadata:
a page edited in April to add a bike route still quotes last year's prices. Only dates attached to
an explicit marker count; a bare "Updated March 2026" says when someone touched the page, not from
when its statements hold, so it is deliberately not an effective date.
"""
from __future__ import annotations

import calendar
import datetime as dt
import re

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+)?"
_ORD = r"(?:st|nd|rd|th)?"

# One alternation, most specific first, so "1 March 2026" is not read as "March 2026".
_DATE = (
    r"(?P<date>"
    r"\d{4}-\d{2}-\d{2}"
    rf"|{_WEEKDAY}\d{{1,2}}{_ORD}\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|{_WEEKDAY}{_MONTH}\s+\d{{1,2}}{_ORD},?\s+\d{{4}}"
    rf"|{_MONTH}\s+\d{{4}}"
    r"|(?:19|20)\d{2}(?![\d-])"
    r")"
)

# Markers that say "this statement holds from that date on".
_EFFECTIVE_MARKER = (
    r"\b(?P<marker>effective(?:\s+from|\s+as\s+of|\s+on)?|with\s+effect\s+from|as\s+(?:of|from)"
    r"|valid\s+from|in\s+force\s+from|appl(?:y|ies)\s+from|starting(?:\s+on|\s+from)?"
    r"|on\s+or\s+after|since|from)"
)
_EFFECTIVE_RE = re.compile(_EFFECTIVE_MARKER + r"\s+(?:the\s+)?" + _DATE, re.IGNORECASE)
# A bare year after the loose markers is too often about something else ("family-run since 1998",
# "customers from 2020"): only the formal markers may carry a year alone.
_LOOSE_MARKERS = {"since", "from", "starting", "starting on", "starting from"}
_YEAR_ONLY = re.compile(r"\d{4}")

# "moved from 31 August 2026 to ...", "up from March 2025": `from` names the old state there.
_FROM_OLD_VALUE = re.compile(
    r"\b(?:moved|changed|switched|increased|decreased|reduced|raised|rose|fell|went|up|down|cut|postponed|brought\s+forward)\s*$",
    re.IGNORECASE,
)

# "1 April 2025 to 31 March 2026", "13 December 2025 - 12 April 2026", "from 1 May 2026 until 30 September 2026",
# "between 1 June 2026 and 31 August 2026": a text saying for which period it holds.
_PERIOD_RE = re.compile(
    r"(?:\bbetween\s+)?" + _DATE.replace("(?P<date>", "(?P<start>")
    + r"\s*(?:-|\u2013|\u2014|\bto\b|\buntil\b|\btill\b|\bthrough\b|\band\b)\s*(?:the\s+)?"
    + _DATE.replace("(?P<date>", "(?P<end>"),
    re.IGNORECASE,
)

_UNTIL_RE = re.compile(r"\b(?:until|till|up\s+to\s+and\s+including|through)\s+(?:the\s+)?" + _DATE, re.IGNORECASE)


def parse_text_date(text: str, *, end_of_period: bool = False) -> dt.date | None:
    """One date as written; a month or a year alone means its first day (or its last, for an end)."""
    cleaned = re.sub(r"[,.]", " ", text.strip().lower())
    cleaned = re.sub(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", " ", cleaned)
    cleaned = re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", cleaned)
    cleaned = re.sub(r"\bof\b", " ", cleaned)
    tokens = cleaned.split()
    try:
        if len(tokens) == 1 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", tokens[0]):
            return dt.date.fromisoformat(tokens[0])
        if len(tokens) == 1 and tokens[0].isdigit():
            year = int(tokens[0])
            return dt.date(year, 12, 31) if end_of_period else dt.date(year, 1, 1)
        if len(tokens) == 2 and tokens[0] in _MONTHS:
            year, month = int(tokens[1]), _MONTHS[tokens[0]]
            day = calendar.monthrange(year, month)[1] if end_of_period else 1
            return dt.date(year, month, day)
        if len(tokens) == 3 and tokens[1] in _MONTHS:
            return dt.date(int(tokens[2]), _MONTHS[tokens[1]], int(tokens[0]))
        if len(tokens) == 3 and tokens[0] in _MONTHS:
            return dt.date(int(tokens[2]), _MONTHS[tokens[0]], int(tokens[1]))
    except ValueError:
        return None
    return None


def effective_dates(text: str) -> list[dt.date]:
    """Every date the text marks as the start of validity ("effective 1 January 2026", "since 2024")."""
    found: list[dt.date] = []
    for match in _EFFECTIVE_RE.finditer(text):
        marker = re.sub(r"\s+", " ", match.group("marker").lower())
        if marker == "from" and _FROM_OLD_VALUE.search(text[: match.start()]):
            continue
        if marker in _LOOSE_MARKERS and _YEAR_ONLY.fullmatch(match.group("date")):
            continue
        date = parse_text_date(match.group("date"))
        if date is not None:
            found.append(date)
    return found


def in_force_effective_date(text: str, *, now: dt.date) -> dt.date | None:
    """The most recent explicit effective date that is not in the future; None when there is none.

    A future date ("from 1 September", read in April) is a statement not yet in force, so it cannot
    make the text current today.
    """
    dates = [date for date in effective_dates(text) if date <= now]
    return max(dates) if dates else None


def announces_future_change_only(text: str, *, now: dt.date) -> bool:
    """The text states effective dates, all still in the future: what it says may not hold yet."""
    dates = effective_dates(text)
    return bool(dates) and all(date > now for date in dates)


def end_dates(text: str) -> list[dt.date]:
    """Dates the text gives as the end of something ("until 28 February 2026", "until 2024")."""
    found = []
    for match in _UNTIL_RE.finditer(text):
        date = parse_text_date(match.group("date"), end_of_period=True)
        if date is not None:
            found.append(date)
    return found


def validity_periods(text: str) -> list[tuple[dt.date, dt.date]]:
    """Periods the text gives as from one date to another ("1 April 2025 to 31 March 2026"), start first.

    Only two full calendar dates (or months) make a period: a bare year on either side says too little."""
    found = []
    for match in _PERIOD_RE.finditer(text):
        if _YEAR_ONLY.fullmatch(match.group("start")) or _YEAR_ONLY.fullmatch(match.group("end")):
            continue
        start = parse_text_date(match.group("start"))
        end = parse_text_date(match.group("end"), end_of_period=True)
        if start is not None and end is not None and start <= end:
            found.append((start, end))
    return found


def period_not_over(text: str, *, now: dt.date) -> tuple[dt.date, dt.date] | None:
    """A period the text states that has not ended by `now` (in force today, or still to come), if any."""
    return next(((start, end) for start, end in validity_periods(text) if now <= end), None)
