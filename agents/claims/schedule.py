"""Clock times and weekly opening schedules.

A schedule is {weekday index 0-6: (open_minute, close_minute) or None for closed}.
"""
from __future__ import annotations

import re

from .text import DAY_NAMES, MONTH_NAMES

CLOCK = r"(?:\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}:\d{2}|noon|midday|midnight)"
RANGE_RE = re.compile(rf"(?:from\s+|between\s+)?(?P<a>{CLOCK})\s?(?:-|\u2013|to|until|and|till)\s?(?P<b>{CLOCK})", re.I)
ALL_DAY_RE = re.compile(r"\b24 hours a day\b|\b24/7\b|\bopen 24 hours\b|\b24-hour (?:faults |emergency |support )?line\b", re.I)
DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)s?"
DAYSPEC_RE = re.compile(
    rf"\b(?P<range>{DAY}\s?(?:-|\u2013|to)\s?{DAY})\b"
    rf"|\b(?P<list>{DAY}(?:\s?(?:,|and|&)\s?{DAY})*)\b"
    r"|(?P<every>every (?:single )?day|seven days a week|7 days a week|daily|all week)"
    r"|(?P<weekdays>every weekday|weekdays|on weekdays)"
    r"|(?P<weekend>weekends?)", re.I)
MONTH_RANGE_RE = re.compile(
    r"\b(?P<a>" + "|".join(MONTH_NAMES) + r")\s(?:-|\u2013|to|until|through)\s(?P<b>" + "|".join(MONTH_NAMES) + r")\b", re.I)


def clock_minutes(text: str) -> int:
    """'9 am' / '09:00' / 'noon' -> minutes after midnight."""
    t = text.lower().replace(".", ":").replace("a:m:", "am").replace("p:m:", "pm").strip()
    if t in ("noon", "midday"):
        return 12 * 60
    if t == "midnight":
        return 24 * 60
    m = re.match(r"(\d{1,2})(?::(\d{2}))?\s?(am|pm)?", t)
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if half == "pm" and hour != 12:
        hour += 12
    if half == "am" and hour == 12:
        hour = 0
    return hour * 60 + minute


def _day_index(token: str) -> int:
    token = token.lower()[:3]
    return [d[:3] for d in DAY_NAMES].index(token)


def days_of(match: re.Match) -> set[int]:
    if match.group("range"):
        a, b = re.split(r"\s?(?:-|\u2013|to)\s?", match.group("range"), maxsplit=1)
        i, j = _day_index(a), _day_index(b)
        return {d % 7 for d in range(i, j + 1 if j >= i else j + 8)}
    if match.group("list"):
        return {_day_index(t) for t in re.findall(DAY, match.group("list"), re.I)}
    if match.group("every"):
        return set(range(7))
    if match.group("weekdays"):
        return set(range(5))
    return {5, 6}


def months_of(text: str) -> frozenset[int]:
    """Months a statement is limited to ("April to October", "in summer"); empty = all year."""
    m = MONTH_RANGE_RE.search(text)
    if m:
        a = MONTH_NAMES.index(m.group("a").lower()) + 1
        b = MONTH_NAMES.index(m.group("b").lower()) + 1
        return frozenset(((a - 1 + k) % 12) + 1 for k in range((b - a) % 12 + 1))
    for season, months in {"summer": {6, 7, 8}, "winter": {12, 1, 2}}.items():
        if re.search(rf"\b{season}\b", text, re.I):
            return frozenset(months)
    return frozenset()


def parse_schedule(sentence: str) -> dict[int, tuple[int, int] | None]:
    """Weekday -> opening interval (or None = closed) stated in one sentence; {} when none."""
    ranges = [(m.start(), m.end(), (clock_minutes(m.group("a")), clock_minutes(m.group("b"))))
              for m in RANGE_RE.finditer(sentence)]
    if ALL_DAY_RE.search(sentence) and not ranges:
        all_day = ALL_DAY_RE.search(sentence)
        ranges = [(all_day.start(), all_day.end(), (0, 24 * 60))]
    specs = [m for m in DAYSPEC_RE.finditer(sentence)]
    schedule: dict[int, tuple[int, int] | None] = {}
    for spec in specs:
        after = sentence[spec.end(): spec.end() + 12].lower()
        before = sentence[max(0, spec.start() - 12): spec.start()].lower()
        if re.match(r"\s*:?\s*closed", after) or re.search(r"closed (on )?$", before):
            for d in days_of(spec):
                schedule[d] = None
            continue
        if re.match(r"\s*included", after):
            continue
        following = [r for r in ranges if r[0] >= spec.end()]
        preceding = [r for r in ranges if r[1] <= spec.start()]
        # A day list usually precedes its hours ("Saturday 09:00-17:00"); otherwise it trails them.
        target = None
        # "from 8 am to 8 pm Monday to Friday, and from 9 am ...": days right after their hours, with no break
        # in between, belong to those hours rather than to the next ones.
        trailing = preceding and not re.search(r"[,;.]", sentence[preceding[-1][1]: spec.start()]) and (
            not following or spec.start() - preceding[-1][1] < following[0][0] - spec.end())
        if trailing:
            target = preceding[-1]
        elif following and not any(s.start() > spec.end() and s.end() <= following[0][0] for s in specs):
            target = following[0]
        elif preceding:
            target = preceding[-1]
        if target:
            for d in days_of(spec):
                schedule.setdefault(d, target[2])
    if not specs and ranges and ALL_DAY_RE.search(sentence):
        schedule = {d: ranges[0][2] for d in range(7)}
    elif len(ranges) == 1 and not any(v == ranges[0][2] for v in schedule.values()) and (
            schedule or re.search(r"\bopen\b|\bhours\b", sentence, re.I)):
        # "November to March: 09:00-17:00, closed on Mondays": the hours hold on every other day.
        for d in range(7):
            schedule.setdefault(d, ranges[0][2])
    return schedule


def describe(schedule: dict[int, tuple[int, int] | None], day: int) -> str:
    name = DAY_NAMES[day].capitalize()
    slot = schedule[day]
    if slot is None:
        return f"{name} closed"
    return f"{name} {slot[0] // 60:02d}:{slot[0] % 60:02d}-{slot[1] // 60:02d}:{slot[1] % 60:02d}"
