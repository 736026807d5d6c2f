"""Find typed values in one sentence and normalise them (units, formats, currencies).

Each finder returns `Value`s with offsets relative to the sentence it was given.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from .text import MONTH_NAMES, NUMBER_WORDS


@dataclass(frozen=True)
class Value:
    kind: str  # money | percent | duration | age | count | phone | email | url | date
    start: int
    end: int
    text: str
    amount: object  # normalised: float, (lo, hi) tuple, str or date
    unit: str = ""  # currency, duration base unit, "per day" period, ...
    approx: bool = False
    bound: str = ""  # "" exact | min | max | range
    extra: dict = field(default_factory=dict, hash=False, compare=False)


CURRENCY = {"€": "EUR", "£": "GBP", "$": "USD", "eur": "EUR", "euro": "EUR", "euros": "EUR",
            "gbp": "GBP", "pound": "GBP", "pounds": "GBP", "usd": "USD", "dollar": "USD", "dollars": "USD"}
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
MONEY_RE = re.compile(
    rf"(?P<sym>[€£$])\s?(?P<a>{NUM})|(?P<b>{NUM})\s?(?P<code>EUR|GBP|USD|euros?|pounds?|dollars?)\b", re.I)
PER_RE = re.compile(
    r"^\s*(?:/|per|a|an|each|for each(?: calendar)?|for (?:the|a) (?:whole|full)?\s*)\s*(?:(?:bike|person|adult|item|order|visit)\s+(?:per\s+)?)?"
    r"(?P<p>hour|day|week|month|year|mo|item|order|person|visit|night|km)\b", re.I)
APPROX_RE = re.compile(r"\b(about|around|approximately|approx\.?|roughly|usually|typically|normally|often|some|nearly|almost|~)\s*$", re.I)
WORDNUM = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
DURATION_RE = re.compile(
    rf"(?P<n1>\d+|{WORDNUM})(?:\s?(?:-|\u2013|to|and)\s?(?P<n2>\d+|{WORDNUM}))?[\s-]"
    r"(?P<u>business days?|working days?|calendar days?|minutes?|hours?|days?|nights?|weeks?|months?|years?)(?:'s?|s')?\b",
    re.I)
# "a 10-year warranty" states a duration; "a 45-minute appointment" only names a variant.
CLAIM_NOUN_RE = re.compile(r"\s(?:minimum |money-back |free |return |notice )?(warranty|guarantee|trial|window|notice|"
                           r"period|term|allowance|coverage|deadline|validity|grace)\b", re.I)
UNIT_HOURS = {"minute": 1 / 60, "hour": 1, "day": 24, "night": 24, "week": 168, "month": 730, "year": 8760}
AGE_MIN_RE = re.compile(
    r"\b(?:aged|age|at least|over the age of|minimum age(?: of| is)?)\s*(?P<n>\d{1,2})(?:\s*years?(?: old)?)?\s*(?:and|or)\s*(?:over|older|above)"
    r"|\b(?:aged\s*)?(?P<n2>\d{1,2})\s*(?:years? old\s*)?(?:and|or)\s*(?:over|older|above)"
    r"|\bat least (?P<n3>\d{1,2}) years? old|\b(?:from|aged) (?P<n4>\d{1,2}) onwards", re.I)
AGE_MAX_RE = re.compile(
    r"\b(?:under|below|younger than)\s*(?:the age of\s*)?(?P<n>\d{1,2})\b(?!\s*(?:kg|km|lb|%|minutes|hours|days))"
    r"|\buntil (?:their|his|her|the child's|your child's) (?P<n2>\d{1,2})(?:st|nd|rd|th) birthday", re.I)
PHONE_RE = re.compile(r"(?<![\d\w])(?:\+?\d{1,3}[\s-])?(?:\(\d{2,5}\)\s?)?\d{2,5}(?:[\s-]\d{2,5}){1,3}(?![\d\w])")
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL_RE = re.compile(r"\b(?:https?://)?(?:www\.)?[a-z0-9-]+\.(?:com|net|org|eu|co\.uk|io|de|fr)(?:/[\w/-]*)?", re.I)
COUNT_RE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s?(?P<u>TB|GB|kg|km|lb|items?|riders?|people|persons?|nights?)\b")
PERCENT_RE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s?%")
MONTHS = "|".join(m.capitalize() for m in MONTH_NAMES)
DATE_RE = re.compile(
    rf"(?:(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day,?\s)?"
    rf"(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s(?P<m1>{MONTHS})(?:,?\s(?P<y1>20\d\d))?"
    rf"|(?P<m2>{MONTHS})\s(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?:,\s?(?P<y2>20\d\d))?"
    rf"|(?P<m3>{MONTHS})\s(?P<y3>20\d\d))")
YEAR_RE = re.compile(r"\b(?:in|since|until|before|after|during)\s(?P<y>20\d\d)\b")


def _num(token: str) -> float:
    token = token.lower()
    if token in NUMBER_WORDS:
        return float(NUMBER_WORDS[token])
    return float(token.replace(",", ""))


def find_money(sentence: str) -> list[Value]:
    out = []
    for m in MONEY_RE.finditer(sentence):
        raw = m.group("a") or m.group("b")
        cur = CURRENCY[(m.group("sym") or m.group("code")).lower()]
        per = PER_RE.match(sentence[m.end(): m.end() + 40])
        period = per.group("p").lower() if per else ""
        period = "month" if period == "mo" else period
        before = sentence[max(0, m.start() - 25): m.start()].lower()
        bound = "max" if re.search(r"(up to|maximum( of)?|capped at|at most)\s*$", before) else (
            "min" if re.search(r"\b(at least|minimum( of)?|over|more than)\s*$", before) else "")
        out.append(Value("money", m.start(), m.end(), m.group(), round(_num(raw), 2), cur,
                         approx=bool(APPROX_RE.search(sentence[: m.start()])), bound=bound,
                         extra={"per": period}))
    return out


COMPOUND_RE = re.compile(r"\b(?P<h>\d+)\s?(?:hours?|hrs?|h)\s(?:and\s)?(?P<m>\d+)\s?(?:minutes?|mins?)\b", re.I)


def find_durations(sentence: str) -> list[Value]:
    out = []
    # "1 hour 35 minutes" is one duration, not "1 hour" and "35 minutes".
    compounds = [(m.start(), m.end()) for m in COMPOUND_RE.finditer(sentence)]
    for m in COMPOUND_RE.finditer(sentence):
        hours = int(m.group("h")) + int(m.group("m")) / 60
        approx = bool(APPROX_RE.search(sentence[: m.start()]))
        out.append(Value("duration", m.start(), m.end(), m.group(), (hours, hours), "hour", approx=approx))
    for m in DURATION_RE.finditer(sentence):
        if any(a <= m.start() < b for a, b in compounds):
            continue
        unit = m.group("u").lower().rstrip("s")
        adjectival = sentence[m.start("u") - 1] == "-" and not m.group("u").lower().endswith("s")
        if adjectival and not CLAIM_NOUN_RE.match(sentence[m.end():]):
            continue  # "a 45-minute appointment", "12-month contract": a qualifier, not a claim
        if unit.startswith(("business", "working")):
            base, factor = "workday", 1.0
        else:
            base, factor = "hour", UNIT_HOURS[unit.split()[-1]]
        if m.group("n1").lower() in ("a", "an") and m.group("n2") is None and base == "hour":
            # "per day", "a month" are rates, not durations: "a" only counts after a preposition.
            if not re.search(r"\b(within|for|in|after|of|than)\s*$", sentence[: m.start()], re.I):
                continue
        lo = _num(m.group("n1")) * factor
        hi = _num(m.group("n2")) * factor if m.group("n2") else lo
        before = sentence[: m.start()]
        approx = bool(APPROX_RE.search(before)) or lo != hi
        bound = "range" if lo != hi else ""
        if re.search(r"\b(at least|minimum( of)?|no less than|more than|over)\s*$", before, re.I):
            bound = "min"
        elif re.search(r"\b(within|up to|at most|no later than|maximum( of)?|less than|under)\s*$", before, re.I):
            bound = "max"
        out.append(Value("duration", m.start(), m.end(), m.group(), (lo, hi), base, approx=approx, bound=bound))
    return sorted(out, key=lambda v: v.start)


def find_ages(sentence: str) -> list[Value]:
    out = []
    for m in AGE_MIN_RE.finditer(sentence):
        n = next(g for g in (m.group("n"), m.group("n2"), m.group("n3"), m.group("n4")) if g)
        out.append(Value("age", m.start(), m.end(), m.group(), int(n), "years", bound="min"))
    for m in AGE_MAX_RE.finditer(sentence):
        if not re.search(r"\b(age|aged|child|children|kid|kids|rider|riders|patient|patients|birthday|people|persons|adult|year)",
                         sentence, re.I):
            continue
        n = m.group("n") or m.group("n2")
        out.append(Value("age", m.start(), m.end(), m.group(), int(n), "years", bound="max"))
    return out


def find_phones(sentence: str) -> list[Value]:
    out = []
    for m in PHONE_RE.finditer(sentence):
        digits = re.sub(r"\D", "", m.group())
        if len(digits) < 9 or re.fullmatch(r"(19|20)\d\d", digits[:4]) and " " not in m.group():
            continue
        out.append(Value("phone", m.start(), m.end(), m.group(), digits[-10:]))
    return out


def find_emails_urls(sentence: str) -> list[Value]:
    out = [Value("email", m.start(), m.end(), m.group(), m.group().lower()) for m in EMAIL_RE.finditer(sentence)]
    taken = [(v.start, v.end) for v in out]
    for m in URL_RE.finditer(sentence):
        if any(a <= m.start() < b for a, b in taken):
            continue
        out.append(Value("url", m.start(), m.end(), m.group(), m.group().lower().rstrip("/")))
    return out


# "up to 6 bicycles per booking": a limit on how many things one unit allows.
ALLOWANCE_RE = re.compile(rf"\b(?:up to|a maximum of|maximum of|at most|no more than)\s(?P<n>\d+|{WORDNUM})\s"
                          r"(?P<u>[a-z]+s)\s(?:per|for each|in each|on each|each)\s(?P<p>[a-z]+)\b", re.I)


def find_counts(sentence: str) -> list[Value]:
    out = []
    for m in ALLOWANCE_RE.finditer(sentence):
        thing = m.group("u").lower()
        thing = thing[:-1] if not thing.endswith("ss") else thing
        out.append(Value("count", m.start("n"), m.end(), m.group()[m.start("n") - m.start():], _num(m.group("n")),
                         f"{thing}/{m.group('p').lower()}", bound="max"))
    for m in COUNT_RE.finditer(sentence):
        if any(v.start <= m.start() < v.end for v in out):
            continue
        unit = m.group("u").lower().rstrip("s")
        before = sentence[max(0, m.start() - 25): m.start()].lower()
        bound = "max" if re.search(r"(up to|maximum( of)?|at most)\s*$", before) else (
            "min" if re.search(r"(at least|minimum( of)?|or more)\s*$", before) else "")
        out.append(Value("count", m.start(), m.end(), m.group(), float(m.group("n")), unit, bound=bound))
    for m in PERCENT_RE.finditer(sentence):
        out.append(Value("percent", m.start(), m.end(), m.group(), float(m.group("n")), "%"))
    return out


def find_dates(sentence: str, *, default_year: int) -> list[Value]:
    found = list(DATE_RE.finditer(sentence))
    years = [int(y) for m in found for y in (m.group("y1"), m.group("y2"), m.group("y3")) if y]
    out = []
    for i, m in enumerate(found):
        month_name = m.group("m1") or m.group("m2") or m.group("m3")
        month = MONTH_NAMES.index(month_name.lower()) + 1
        year_txt = m.group("y1") or m.group("y2") or m.group("y3")
        # "from 31 August to 30 September 2026": a date without a year takes the next stated year.
        later = [int(y) for n in found[i + 1:] for y in (n.group("y1"), n.group("y2"), n.group("y3")) if y]
        year = int(year_txt) if year_txt else (later[0] if later else (years[-1] if years else default_year))
        day_txt = m.group("d1") or m.group("d2")
        try:
            day = dt.date(year, month, int(day_txt)) if day_txt else dt.date(year, month, 1)
        except ValueError:
            continue
        out.append(Value("date", m.start(), m.end(), m.group(), day, "day" if day_txt else "month"))
    return out


def find_values(sentence: str, *, default_year: int) -> list[Value]:
    """All values of a sentence, earlier ones first; overlapping matches keep the more specific kind."""
    ordered = (find_emails_urls(sentence) + find_money(sentence) + find_dates(sentence, default_year=default_year)
               + find_phones(sentence) + find_ages(sentence) + find_durations(sentence) + find_counts(sentence))
    kept: list[Value] = []
    for v in ordered:
        if any(v.start < k.end and k.start < v.end for k in kept):
            continue
        kept.append(v)
    return sorted(kept, key=lambda v: v.start)
