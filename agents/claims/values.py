"""Typed values in a claim, made comparable across formats: the kinds of value, a Value (its kind, a key that
compares across formats, its span in the claim, unit, role), the units and number words they are read with, and
when two values are equal (72 hours = 3 days, €10 = 10.00 EUR, 9 am = 09:00) or comparable at all. Reading them
out of text, with maintained parsers (price-parser, pint, dateparser, phonenumbers), is value_extraction's job.
Each value keeps its span in the claim so it can be masked for alignment and quoted in explanations.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import pint

# Kinds of value; each is one fact about what can be compared with what.
MONEY, QUANTITY, PERCENT, CLOCK, DATE, PHONE, EMAIL, URL, AGE, COUNT, UNLIMITED = (
    "money", "quantity", "percent", "clock", "date", "phone", "email", "url", "age", "count", "unlimited")
UNLIMITED_RE = re.compile(r"\b(?:unlimited|as (?:many|much) as you (?:like|want)|no (?:limit|cap)|uncapped)\b", re.I)

CURRENCY_CODES = {"€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "£": "GBP", "gbp": "GBP",
                  "$": "USD", "usd": "USD", "us$": "USD", "chf": "CHF", "kr": "SEK", "sek": "SEK", "nok": "NOK",
                  "dkk": "DKK", "cad": "CAD", "c$": "CAD", "aud": "AUD", "a$": "AUD", "nzd": "NZD", "¥": "JPY",
                  "jpy": "JPY", "inr": "INR", "₹": "INR", "zł": "PLN", "pln": "PLN"}
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "eighteen": 18, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45,
                "fifty": 50, "sixty": 60, "ninety": 90, "a hundred": 100, "half an": 0.5, "a half": 0.5,
                "a couple of": 2, "a single": 1, "a": 1, "an": 1}
ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
                 "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
                 "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
                 "twentieth": 20, "twenty-first": 21}
# Number words that count things ("two meetings"); "a"/"an" are articles far more often than counts.
COUNTING_WORDS = {w for w, n in NUMBER_WORDS.items() if n >= 1 and " " not in w and w not in ("a", "an")}
# Units people write that pint does not define, or defines as something else ("min" is minutes here).
UNIT_ALIASES = {"hrs": "hour", "hr": "hour", "h": "hour", "mins": "minute", "min": "minute", "secs": "second",
                "sec": "second", "wks": "week", "wk": "week", "yrs": "year", "yr": "year", "mo": "month",
                "mos": "month", "kilos": "kilogram", "kilo": "kilogram", "kgs": "kilogram", "lbs": "pound",
                "litres": "liter", "litre": "liter", "gig": "gigabyte", "gigs": "gigabyte",
                "mbps": "megabit / second", "gbps": "gigabit / second", "kbps": "kilobit / second",
                "miles": "mile", "metres": "meter", "metre": "meter", "cm": "centimeter", "mm": "millimeter",
                "km": "kilometer", "kg": "kilogram", "g": "gram", "gb": "gigabyte", "mb": "megabyte",
                "tb": "terabyte", "kb": "kilobyte", "ml": "milliliter", "l": "liter", "oz": "ounce",
                "ft": "foot", "in": None}
# The units a support article measures things in; pint parses far more ("bag" is a unit of mass there).
MEASURING_UNITS = {"second", "minute", "hour", "day", "week", "fortnight", "month", "year", "byte", "bit", "gram",
                   "meter", "liter", "mile", "foot", "inch", "yard", "pound", "ounce", "stone"}
# Day counts that are not calendar days do not convert into them.
NON_CALENDAR_UNITS = {"business day", "working day", "school day", "banking day", "weekday", "night",
                      "session", "visit", "class", "lesson", "ride", "trip", "journey", "stay"}
PERIOD_RE = re.compile(r"^\s*(?:per|a|an|each|every|/)\s*(?:calendar\s+)?(day|night|week|month|year|hour|visit|person|guest|"
                       r"adult|child|order|booking|item|bag|passenger|ticket|session|class|lesson|pet|room|"
                       r"vehicle|car|household|member|user|seat|device|line|account)s?\b", re.I)
AGE_BEFORE_RE = re.compile(r"(?:aged?|ages|age of|over|under|older than|younger than|at least|minimum age(?: of)?|"
                           r"from the age of|up to the age of)\s*$", re.I)
AGE_AFTER_RE = re.compile(r"^\s*(?:\+|years? old|years? of age|and (?:over|older|above|under|younger)|or (?:over|"
                          r"older|under|younger)|-year-olds?|s\b)", re.I)
THRESHOLD_BEFORE_RE = re.compile(r"(?:over|above|more than|at least|minimum(?: of)?|from|start(?:s|ing)? at|orders? of|spend(?:ing)?|"
                                 r"exceeding|under|below|less than|up to)\s*$", re.I)
FUNCTION_WORDS = {"with", "and", "the", "for", "from", "per", "are", "was", "were", "has", "have", "had", "but",
                  "not", "into", "onto", "than", "then", "that", "this", "who", "which", "when", "where", "will"}
PAST_YEAR_RE = re.compile(r"\b(?:1[6-9]|20)\d{2}\b")

NUMBER = r"(?:\d{1,3}(?:[,\u202f ]\d{3})+|\d+)(?:[.,]\d+)?"
NUMBER_WORD = "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True))
CURRENCY = r"(?:€|£|\$|US\$|C\$|A\$|¥|₹|\b(?:EUR|GBP|USD|CHF|SEK|NOK|DKK|CAD|AUD|NZD|JPY|INR|PLN)\b)"
MONEY_RE = re.compile(
    rf"{CURRENCY}\s?{NUMBER}(?:\s?(?:-|\u2013|to)\s?{CURRENCY}?\s?{NUMBER})?"
    rf"|{NUMBER}\s?(?:{CURRENCY}|\b(?:euros?|pounds|dollars|kr|zł)\b)", re.I)
# Prices in a currency's minor unit: "50p per item", "20 pence", "99¢", "75 cents" (two digits at most: "1080p" is
# a screen resolution; "5 p.m." a time; a bare "c" too often a label: "room 5c").
MINOR_UNIT_RE = re.compile(r"(?<![\w.,])(\d{1,2})\s?(p|pence|\u00a2|cents?)(?![\w\u00a3$\u20ac]|\.\s?m\b)", re.I)
PERCENT_RE = re.compile(rf"{NUMBER}\s?(?:%|per ?cent\b)", re.I)
CLOCK_RE = re.compile(r"\b(?:[01]?\d|2[0-3])(?:[:.][0-5]\d)?\s?(?:a\.?m\.?|p\.?m\.?)(?![a-z])|\b(?:[01]?\d|2[0-3]):[0-5]\d\b"
                      r"|\b(?:noon|midday|midnight)\b", re.I)
MONTHS = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
DATE_RE = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTHS}\.?(?:,?\s+\d{{4}})?\b"
    rf"|\b{MONTHS}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"
    rf"|\b{MONTHS}\s+\d{{4}}\b", re.I)
ROUND_THE_CLOCK_RE = re.compile(r"\b(?:open|staffed|available|answered|runs?)\s+(?:24 hours(?: a day)?|24/7|"
                                r"around the clock|round the clock|day and night)|\b24/7\b", re.I)
CLOCK_RANGE_RE = re.compile(r"\b(?P<start>(?:[01]?\d|2[0-3])(?:[:.][0-5]\d)?)\s*(?:-|\u2013|to|till|until)\s*"
                            r"(?P<end>(?:[01]?\d|2[0-3])(?:[:.][0-5]\d)?\s?(?P<end_suffix>[ap]\.?m\.?))", re.I)
MINIMUM_AGE_RE = re.compile(r"\b(?:minimum age|age limit|min\. age)\s*(?:of|is|:)?\s*(\d{1,2})\b|\bat least (\d{1,2}) years\b",
                            re.I)
HOUR_WORDS = {w: n for w, n in NUMBER_WORDS.items() if isinstance(n, int) and 1 <= n <= 12 and " " not in w
              and w not in ("a", "an")}
HOUR = rf"(?:1[0-2]|0?[1-9]|{'|'.join(sorted(HOUR_WORDS, key=len, reverse=True))})"
# Times said in words: "half past four", "quarter to nine", "ten o'clock", "between 8 and 9 in the morning".
WORD_CLOCK_RE = re.compile(
    rf"\b(?:(?P<part>half|quarter)\s+(?P<rel>past|to)\s+(?P<hour>{HOUR})|(?P<oclock>{HOUR})\s+o'?\s?clock"
    rf"|(?P<first>{HOUR})\s+(?:and|to|till|until|-|\u2013)\s+(?P<second>{HOUR})(?=\s+in\s+the\s+(?:morning|afternoon|evening))"
    rf"|(?P<single>{HOUR})(?=\s+in\s+the\s+(?:morning|afternoon|evening)))\b"
    r"(?P<day>\s+in\s+the\s+(?:morning|afternoon|evening)|\s+at\s+night)?", re.I)
EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s)]+|\b[\w-]+\.(?:com|org|net|io|co\.uk|eu|app)(?:/[^\s)]*)?\b", re.I)
QUANTITY_RE = re.compile(rf"(?<![\w.])({NUMBER}|(?:{NUMBER_WORD})\b)(?:\s?-\s?|\s)?([A-Za-z][A-Za-z-]*(?:\s(?:day|days))?)", re.I)
PHONE_REGIONS = ("US", "GB", "IE", "DE", "FR", "AU", "NL", "ES", "IT")


@dataclass(frozen=True)
class Value:
    kind: str
    key: tuple  # comparable: equal keys mean the same value, whatever the format
    start: int
    end: int
    text: str
    unit: str = ""  # what is counted or measured ("bag", "[time]", "EUR")
    role: str = "amount"  # amount | threshold (a condition: "orders over €50") | min | max (ages)
    approximate: bool = False  # said with a hedge ("about 40 minutes", "just over an hour and a half")


# "free", "at no cost", "complimentary": a price of zero.
FREE_PRICE_RE = re.compile(r"\b(?:free of charge|for free|at no (?:extra |additional )?(?:cost|charge)|no charge|"
                           r"(?:do not|don't|won't|will not|never) charge|without charge|complimentary|free)\b", re.I)

# A quantity said with one of these just before it is an estimate, equal to another within APPROXIMATE_TOLERANCE.
HEDGE_BEFORE_RE = re.compile(r"\b(?:about|around|roughly|approximately|approx\.|nearly|almost|some|circa|"
                             r"(?:just|a little|slightly) (?:over|under|more than|less than))\s*$", re.I)
APPROXIMATE_TOLERANCE = 0.1
EXACT_TOLERANCE = 0.025  # rounding between units (1 month ~ 30 days)


def _number(text: str) -> float | None:
    lowered = text.lower().strip()
    if lowered in NUMBER_WORDS:
        return float(NUMBER_WORDS[lowered])
    cleaned = re.sub(r"[\u202f ,](?=\d{3}\b)", "", lowered).replace(",", ".")
    try:
        return float(Decimal(cleaned))
    except InvalidOperation:
        return None


@functools.lru_cache(maxsize=1)
def _units() -> pint.UnitRegistry:
    return pint.UnitRegistry()


@functools.lru_cache(maxsize=4096)
def _unit_of(word: str) -> tuple[str, float] | None:
    """(dimension, factor to base units) of a unit word, or None when it is not a unit."""
    lowered = word.lower()
    alias = UNIT_ALIASES.get(lowered, lowered)
    if alias is None or len(lowered) < 1:
        return None
    if re.fullmatch(r"(?:[a-z]{1,2})", alias) and alias not in {"h", "g", "l"}:
        return None  # two-letter words ("at", "of") are never units here
    try:
        quantity = _units().Quantity(1, alias)
        if " " not in alias and not any(unit in MEASURING_UNITS for _, unit, _ in _units().parse_unit_name(alias)):
            return None
    except Exception:  # pint raises several error types for "not a unit"
        return None
    base = quantity.to_base_units()
    dimension = str(base.dimensionality)
    if dimension == "dimensionless" and str(base.units) == "bit":
        dimension = "[information]"
    elif dimension == "dimensionless":
        return None
    return dimension, float(base.magnitude)


def _singular(word: str) -> str:
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        return w[:-1]
    return w


def equal_values(a: Value, b: Value) -> bool:
    """The same value in any format: keys match, or quantities within rounding (1 month ~ 30 days), or within
    APPROXIMATE_TOLERANCE when either is an estimate."""
    if a.key == b.key:
        return True
    if a.kind == QUANTITY and a.key[0] == b.key[0] and a.key[2] == b.key[2]:
        low, high = sorted((a.key[1], b.key[1]))
        tolerance = APPROXIMATE_TOLERANCE if a.approximate or b.approximate else EXACT_TOLERANCE
        return high > 0 and (high - low) / high < tolerance
    if a.kind == MONEY:
        # "$59 per order" and "the $59 fee": one price, the period said once.
        same_currency = a.key[0] == b.key[0] or "*" in (a.key[0], b.key[0])
        return same_currency and a.key[1] == b.key[1] and (a.key[2] == b.key[2] or "" in (a.key[2], b.key[2]))
    if a.kind == DATE:
        return all(x == y or None in (x, y) for x, y in zip(a.key, b.key))
    return False


def comparable(a: Value, b: Value, *, strict_period: bool = True) -> bool:
    """Two values that measure the same thing (same currency, dimension, counted noun, period). With
    `strict_period=False` a period stated on one side only ("€175 a month" / "€189") does not matter."""
    if a.kind != b.kind or a.role != b.role:
        return False

    def same_period(x: str, y: str) -> bool:
        return x == y or (not strict_period and "" in (x, y))

    if a.kind == MONEY:
        same_currency = a.key[0] == b.key[0] or "*" in (a.key[0], b.key[0])
        return same_currency and (same_period(a.key[2], b.key[2]) or "*" in (a.key[0], b.key[0]))
    if a.kind in (QUANTITY, COUNT):
        return a.key[0] == b.key[0] and same_period(a.key[2], b.key[2])
    if a.kind == AGE:
        return a.key[1] == b.key[1]
    if a.kind == PERCENT:
        return a.unit == b.unit
    return True
