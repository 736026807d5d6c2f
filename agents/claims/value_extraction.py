"""Reading the typed values out of a claim's text (agents.claims.values says what they are and when two are
equal or comparable): money with its period and role, free, percentages, clock times in figures and in words,
dates, phone numbers, e-mail and web addresses, ages, and quantities, durations and counts with their units."""
from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import replace

import dateparser
import phonenumbers
from price_parser import Price

from .values import (
    AGE,
    AGE_AFTER_RE,
    AGE_BEFORE_RE,
    CLOCK,
    CLOCK_RANGE_RE,
    CLOCK_RE,
    COUNT,
    COUNTING_WORDS,
    CURRENCY_CODES,
    DATE,
    DATE_RE,
    EMAIL,
    EMAIL_RE,
    FREE_PRICE_RE,
    FUNCTION_WORDS,
    HEDGE_BEFORE_RE,
    HOUR_WORDS,
    MINIMUM_AGE_RE,
    MINOR_UNIT_RE,
    MONEY,
    MONEY_RE,
    NON_CALENDAR_UNITS,
    NUMBER,
    NUMBER_WORD,
    ORDINAL_WORDS,
    PAST_YEAR_RE,
    PERCENT,
    PERCENT_RE,
    PERIOD_RE,
    PHONE,
    PHONE_REGIONS,
    QUANTITY,
    QUANTITY_RE,
    ROUND_THE_CLOCK_RE,
    THRESHOLD_BEFORE_RE,
    UNLIMITED,
    UNLIMITED_RE,
    URL,
    URL_RE,
    WORD_CLOCK_RE,
    Value,
    _number,
    _singular,
    _unit_of,
)

DURATION_BEFORE_RE = re.compile(r"\b(?:within|in|for|after|up to|at least|under|over|less than|more than|than|"
                                r"takes?|lasts?|only|about|around|roughly|nearly|almost|half)\s*$", re.I)
PERIOD_BEFORE_RE = re.compile(r"\b(?:(?:per|a|each)\s+(day|night|week|month|year|hour|visit|person)|"
                              r"(dai|night|week|month|year|hour)ly\s+\w+)\b[\s:|]*$", re.I)


# A charge made once ("a one-off setup fee of €65", "Setup fee (one-off): €65", "€20 one time") is no price per month.
ONCE_BEFORE_RE = re.compile(r"\bone[- ](?:off|time)\b[^.;\d]{0,24}$", re.I)
ONCE_AFTER_RE = re.compile(r"^\s*\(?one[- ](?:off|time)\b", re.I)


def _charge_period(text: str, end: int, start: int) -> str:
    """The period a price is charged per (_period_after), or "once" for a one-off charge."""
    if ONCE_AFTER_RE.match(text[end:end + 24]) or ONCE_BEFORE_RE.search(text[max(0, start - 40):start]):
        return "once"
    return _period_after(text, end, start)


def _period_after(text: str, end: int, start: int | None = None) -> str:
    """The period a value is given per: "€10 a month", or "Price per month: €10" (a table header)."""
    match = PERIOD_RE.match(text[end:end + 24])
    if match:
        return _singular(match.group(1))
    if start is not None:
        before = PERIOD_BEFORE_RE.search(text[max(0, start - 30):start])
        if before:  # "per month:" or "Monthly price:"
            return _singular(before.group(1) or {"dai": "day"}.get(before.group(2).lower(), before.group(2).lower()))
    return ""


def _money_role(text: str, start: int) -> str:
    """"threshold" for a condition ("orders over €50", "from £39"), else "amount"."""
    return "threshold" if THRESHOLD_BEFORE_RE.search(text[max(0, start - 24):start]) else "amount"


def _money(text: str, taken: list[tuple[int, int]]) -> list[Value]:
    out = []
    for match in MONEY_RE.finditer(text):
        price = Price.fromstring(match.group())
        if price.amount is None:
            continue
        symbol = (price.currency or "").strip().lower()
        currency = CURRENCY_CODES.get(symbol, symbol.upper() or "?")
        role = _money_role(text, match.start())
        period = _charge_period(text, match.end(), match.start())
        if PERIOD_RE.match(text[match.end():match.end() + 24]):  # "€10 a month": the period belongs to the price, it is no duration of its own
            taken.append((match.end(), match.end() + PERIOD_RE.match(text[match.end():match.end() + 24]).end()))

        out.append(Value(MONEY, (currency, round(float(price.amount), 2), period), match.start(), match.end(),
                         match.group(), unit=currency, role=role))
        taken.append(match.span())
    for match in MINOR_UNIT_RE.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in taken):
            continue
        # Pence are a pound's; cents could be a euro's or a dollar's, so they compare with any currency.
        currency = "GBP" if match.group(2).lower() in ("p", "pence") else "*"
        out.append(Value(MONEY, (currency, int(match.group(1)) / 100, _charge_period(text, match.end(), match.start())),
                         match.start(), match.end(), match.group(), unit=currency, role=_money_role(text, match.start())))
        taken.append(match.span())
    return out


COST_WORDS = frozenset({"fee", "fees", "charge", "charges", "cost", "commission", "interest", "toll", "duty", "tax",
                        "rent", "royalty", "postage", "delivery", "shipping"})


def _free(text: str) -> list[Value]:
    """"free", "at no cost", "complimentary": a price of zero, comparable with any amount."""
    out = []
    for match in FREE_PRICE_RE.finditer(text):
        compound = re.search(r"(\w+)-$", text[max(0, match.start() - 20):match.start()])
        if compound and compound.group(1).lower() not in COST_WORDS:
            continue  # "nut-free", "smoke-free": without something, not a price ("fee-free" is one)
        after = text[match.end():match.end() + 20].lower()
        if re.match(r"\s*(?:-|\u2013)?\s*(?:to|of|from|up|wi-?fi|parking|trial|text)\b", after) and "charge" not in match.group().lower():
            continue  # "free to use", "free of clutter", "free trial" are not prices
        out.append(Value(MONEY, ("*", 0.0, ""), match.start(), match.end(), match.group(), unit="*"))
    return out


CONTRASTED_RE = re.compile(r"\b(?:instead of|rather than|compared (?:to|with)|up from|down from|reduced from)\b", re.I)


def _percent_role(text: str, match: re.Match) -> str:
    """What a percentage is: a discount ("10% off"), a refund share, or another rate; only like compares."""
    around = text[max(0, match.start() - 30):match.end() + 20].lower()
    if re.search(r"\b(?:off|discount|save|saving|reduction)\b", around):
        return "discount"
    if re.search(r"\brefund", around):
        return "refund"
    return "rate"


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def _clock_minutes(token: str) -> int | None:
    lowered = token.lower().replace(".", ":").replace(" ", "")
    if lowered in ("noon", "midday"):
        return 12 * 60
    if lowered == "midnight":
        return 0
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(a:?m:?|p:?m:?)?", lowered)
    if not match:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    suffix = (match.group(3) or "").replace(":", "")
    if suffix.startswith("p") and hour < 12:
        hour += 12
    elif suffix.startswith("a") and hour == 12:
        hour = 0
    return hour * 60 + minute


@functools.lru_cache(maxsize=8192)
def _parse_date(text: str, year: int) -> dt.date | None:
    parsed = dateparser.parse(text, languages=["en"], settings={
        "PREFER_DAY_OF_MONTH": "first", "RELATIVE_BASE": dt.datetime(year, 1, 1), "DATE_ORDER": "DMY"})
    return parsed.date() if parsed else None


PHONE_MIN_DIGITS = 7
DIGIT_RE = re.compile(r"\d")
# The matchers' candidates are digit groups joined by at most four punctuation marks (x among them), then perhaps an
# extension: without an extension marker, a number with PHONE_MIN_DIGITS digits is such a run ("€1,250 from 1 May
# 2026" has seven digits and none).
PHONE_RUN_RE = re.compile(r"\d(?:(?:[^\w\n]|[xXｘー_]){0,4}\d){%d,}" % (PHONE_MIN_DIGITS - 1))
# An extension label after a digit, as the matchers read one (its digits count towards PHONE_MIN_DIGITS).
EXTENSION_MARK_RE = re.compile(r"\d[ \u00a0\t,]*(?:;ext=|e?xt|ｅ?ｘｔ|доб|anexo|[xｘ#＃~～]|int|ｉｎｔ)|[- ]\d{1,6}#", re.I)


@functools.lru_cache(maxsize=1024)
def _valid_national_elsewhere(raw: str) -> bool:
    """Whether one of PHONE_REGIONS reads `raw` as a valid national number of its own."""
    for region in PHONE_REGIONS:
        try:
            number = phonenumbers.parse(raw, region)
        except phonenumbers.NumberParseException:
            continue
        if number.country_code == phonenumbers.country_code_for_region(region) and phonenumbers.is_valid_number(number):
            return True
    return False


def _phones(text: str, taken: list[tuple[int, int]]) -> list[Value]:
    out: list[Value] = []
    if len(DIGIT_RE.findall(text)) < PHONE_MIN_DIGITS:
        return out  # no number of the text can have enough digits: the matchers (slow) are not run
    if not PHONE_RUN_RE.search(text) and not EXTENSION_MARK_RE.search(text):
        return out  # the digits are spread over numbers too short to be phone numbers
    for region in PHONE_REGIONS:
        own_code = phonenumbers.country_code_for_region(region)
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE):
            span = (match.start, match.end)
            if _overlaps(span, taken) or len(re.sub(r"\D", "", match.raw_string)) < PHONE_MIN_DIGITS:
                continue
            number = match.number
            if (number.country_code != own_code and "+" not in match.raw_string
                    and not phonenumbers.is_valid_number(number) and _valid_national_elsewhere(match.raw_string)):
                # Read through this region's international prefix written as digits, into no valid number, where
                # another region reads a valid national one: "0114 496 0283" is a UK number, not North America's
                # 011 + 44 + 960283. An invalid reading with no valid alternative stays (fictional numbers such as
                # "00 1 555 014 2231" are invalid too, and read right through the prefix).
                continue
            key = (str(number.national_number),)
            out.append(Value(PHONE, key, match.start, match.end, match.raw_string))
            taken.append(span)
    return out


def _hour(token: str) -> int:
    return HOUR_WORDS.get(token.lower()) or int(token)


def _word_clocks(text: str, taken: list[tuple[int, int]]) -> list[Value]:
    out: list[Value] = []
    for match in WORD_CLOCK_RE.finditer(text):
        if _overlaps(match.span(), taken):
            continue
        tail = (match.group("day") or text[match.end():match.end() + 30]).lower()
        morning = "morning" in tail
        evening = re.search(r"afternoon|evening|night", tail) is not None

        def minutes(hour: int, minute: int = 0) -> int:
            # Said without a part of the day, an hour before 7 is in the afternoon (opening hours, not dawn).
            if not morning and hour < 12 and (evening or hour < 7):
                hour += 12
            return hour * 60 + minute

        if match.group("part"):
            hour = _hour(match.group("hour"))
            minute = 30 if match.group("part").lower() == "half" else 15
            if match.group("rel").lower() == "to":
                hour, minute = (hour - 1) % 12 or 12, 60 - minute
            found = [(minutes(hour, minute), match.span())]
        elif match.group("oclock"):
            found = [(minutes(_hour(match.group("oclock"))), match.span())]
        elif match.group("first"):
            found = [(minutes(_hour(match.group("first"))), match.span("first")),
                     (minutes(_hour(match.group("second"))), match.span("second"))]
        else:
            found = [(minutes(_hour(match.group("single"))), match.span("single"))]
        for value, (start, end) in found:
            out.append(Value(CLOCK, (value,), start, end, text[start:end]))
        taken.append(match.span())
    return out


def extract_values(text: str, *, year: int) -> list[Value]:
    """Every typed value in `text`, none overlapping another; `year` completes dates written without one."""
    taken: list[tuple[int, int]] = []
    values: list[Value] = []
    for match in EMAIL_RE.finditer(text):
        values.append(Value(EMAIL, (match.group().lower().rstrip("."),), *match.span(), match.group()))
        taken.append(match.span())
    for match in URL_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            key = re.sub(r"^(?:https?://)?(?:www\.)?", "", match.group().lower()).rstrip("/.")
            values.append(Value(URL, (key,), *match.span(), match.group()))
            taken.append(match.span())
    values += _money(text, taken)
    previous: Value | None = None
    for match in PERCENT_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            number = _number(re.match(NUMBER, match.group()).group())
            role = _percent_role(text, match)
            if previous is not None and CONTRASTED_RE.search(text[previous.end:match.start()]):
                role = previous.unit  # "60% off instead of our usual 50%": the usual rate is a discount too
            previous = Value(PERCENT, (number,), *match.span(), match.group(), unit=role)
            values.append(previous)
            taken.append(match.span())
    for match in DATE_RE.finditer(text):
        if _overlaps(match.span(), taken):
            continue
        parsed = _parse_date(match.group(), year)
        if parsed:
            has_year = bool(re.search(r"\d{4}|/\d{2}\b", match.group()))
            has_day = bool(re.search(r"\b\d{1,2}(?:st|nd|rd|th)?\b(?![/-]?\d{3})", match.group()))
            key = (parsed.year if has_year else None, parsed.month, parsed.day if has_day else None)
            values.append(Value(DATE, key, *match.span(), match.group()))
            taken.append(match.span())
    for match in ROUND_THE_CLOCK_RE.finditer(text):
        if not _overlaps(match.span(), taken):  # "open 24 hours" is the schedule 00:00-24:00
            values += [Value(CLOCK, (0,), *match.span(), match.group()), Value(CLOCK, (1440,), *match.span(), match.group())]
            taken.append(match.span())
    values += _word_clocks(text, taken)
    for match in CLOCK_RANGE_RE.finditer(text):
        # "7 to 10:30 am": the first end borrows the second's am/pm when it is earlier on the clock.
        if _overlaps(match.span(), taken):
            continue
        end = _clock_minutes(match.group("end"))
        start = _clock_minutes(match.group("start") + match.group("end_suffix"))
        if start is not None and end is not None and start > end:
            start = _clock_minutes(match.group("start") + "am")
        if start is not None and end is not None:
            values += [Value(CLOCK, (start,), match.start("start"), match.end("start"), match.group("start")),
                       Value(CLOCK, (end,), match.start("end"), match.end("end"), match.group("end"))]
            taken.append(match.span())
    for match in CLOCK_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            minutes = _clock_minutes(match.group())
            if minutes is not None:
                values.append(Value(CLOCK, (minutes,), *match.span(), match.group()))
                taken.append(match.span())
    values += _phones(text, taken)
    values += [replace(v, approximate=True) if v.kind == QUANTITY and HEDGE_BEFORE_RE.search(text[:v.start]) else v
               for v in _durations_joined(text, _quantities(text, taken))]
    values += [v for v in _free(text) if not _overlaps((v.start, v.end), taken)]
    values += [Value(UNLIMITED, ("*",), *m.span(), m.group()) for m in UNLIMITED_RE.finditer(text)
               if not _overlaps(m.span(), taken)]
    return sorted(values, key=lambda v: v.start)


AGE_PLUS_RE = re.compile(r"\b(\d{1,2})\s?\+(?!\d)|\b(over|under)[- ](\d{1,2})s\b", re.I)
# "children under 12", "until their 16th birthday": an age limit said of people, with no "aged" or "years".
PERSON_AGE_RE = re.compile(r"\b(?:children|child|kids?|babies|infants|toddlers|teens|teenagers|young people|people|"
                           r"anyone|guests|members|drivers|riders|passengers|students|visitors|pupils|patients|customers|"
                           r"(?:you|who|they)(?:'re|\s+are))\s+"
                           r"(under|below|over|above)\s+(\d{1,2})\b(?![.,]?\d|\s*(?:%|kg|g|lbs?|km|miles?|m|cm|months?|weeks?|"
                           r"days?|hours?|minutes?|pounds|euros|dollars|people|guests|items)\b)", re.I)
BIRTHDAY_RE = re.compile(r"\b(?:until|up to|before)\s+(?:their|your|the child's|his or her|her|his|the)\s+"
                         rf"(?:(\d{{1,2}})(?:st|nd|rd|th)|({'|'.join(ORDINAL_WORDS)}))\s+birthday", re.I)
# "up to and including the age of 4" (a last age admitted: below the next one), "until the age of 12".
AGE_OF_RE = re.compile(r"\b(up to and including|up to|until|under|below|over|above|from)\s+(?:the\s+)?age\s+(?:of\s+)?"
                       r"(\d{1,2})\b(?!\s*(?:%|months?|weeks?|days?))", re.I)
# "ages 4 to 12", "aged 4-12": both ends of an admitted range.
AGE_RANGE_RE = re.compile(r"\b(?:ages?|aged)\s+(\d{1,2})\s*(?:-|\u2013|to)\s*(\d{1,2})\b(?!\s*(?:%|months?|weeks?))", re.I)
# "three of their children": a count of a thing named after "of".
# Number words only: a figure before "of" is more often a label ("level 1 of the car park"); and not "one", which
# picks a member of a group ("one of our engineers calls you"), not how many.
OF_COUNT_RE = re.compile(rf"\b({'|'.join(sorted(COUNTING_WORDS - {'one'}, key=len, reverse=True))})\s+of\s+"
                         r"(?:their|your|our|the|his|her|its|these|those)\s+([a-z][a-z-]{2,})\b", re.I)


# How often something may be done: "twice a month", "3 times per week" (occasions per period, like "4 visits a month").
FREQUENCY_RE = re.compile(rf"\b(?:(once|twice)|({NUMBER}|{NUMBER_WORD}) times)\s+(?:a|an|per|each|every)\s+(?:calendar\s+)?"
                          r"(day|week|month|year)\b", re.I)
OCCASION_UNITS = {"visit", "time", "occasion"}  # counted occasions, whatever the word


# One length of time said in parts: "1 hour 35 minutes", "2 hours and 10 minutes", "an hour and a half", "one and a
# half hours" are each one value (read apart they were two values, an hour, or half an hour).
DURATION_JOIN_RE = re.compile(r"\s+(?:and\s+)?", re.I)  # no comma: "every 2 hours, 30 minutes after ..."
AND_A_HALF_AFTER_RE = re.compile(r"\s+and\s+a\s+half\b", re.I)
WHOLE_AND_BEFORE_RE = re.compile(rf"(?<![\w.])({NUMBER}|{NUMBER_WORD})\s+and\s+$", re.I)


def _durations_joined(text: str, values: list[Value]) -> list[Value]:
    def is_time(value: Value) -> bool:
        return value.kind == QUANTITY and value.unit == "[time]"

    def per_unit(value: Value) -> float | None:
        unit = _unit_of(value.text.split()[-1])
        return unit[1] if unit else None

    joined: list[Value] = []
    for value in sorted(values, key=lambda v: v.start):
        unit_seconds = per_unit(value) if is_time(value) else None
        if unit_seconds and value.text.lower().startswith("a half"):
            whole = WHOLE_AND_BEFORE_RE.search(text[:value.start])
            number = _number(whole.group(1)) if whole else None
            if number is not None:  # "one and a half hours"
                value = replace(value, start=whole.start(), text=text[whole.start():value.end],
                                key=(value.key[0], round((number + 0.5) * unit_seconds, 6), value.key[2]))
        half = AND_A_HALF_AFTER_RE.match(text, value.end) if unit_seconds else None
        if half:  # "an hour and a half"
            value = replace(value, end=half.end(), text=text[value.start:half.end()],
                            key=(value.key[0], round(value.key[1] + unit_seconds / 2, 6), value.key[2]))
        before = joined[-1] if joined else None
        if (before is not None and is_time(before) and is_time(value) and before.key[1] > value.key[1]
                and DURATION_JOIN_RE.fullmatch(text[before.end:value.start])):
            joined[-1] = replace(before, end=value.end, text=text[before.start:value.end],
                                 key=(before.key[0], round(before.key[1] + value.key[1], 6), value.key[2]))
            continue
        joined.append(value)
    return joined


def _quantities(text: str, taken: list[tuple[int, int]]) -> list[Value]:
    out = []
    for match in FREQUENCY_RE.finditer(text):
        amount = {"once": 1.0, "twice": 2.0}.get((match.group(1) or "").lower()) or _number(match.group(2) or "")
        if amount is not None and not _overlaps(match.span(), taken):
            out.append(Value(QUANTITY, ("occasion", amount, match.group(3).lower()), *match.span(), match.group(),
                             unit="occasion"))
            taken.append(match.span())
    for match in MINIMUM_AGE_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            amount = float(match.group(1) or match.group(2))
            out.append(Value(AGE, (amount, "min"), *match.span(), match.group(), role="min"))
            taken.append(match.span())
    for match in PERSON_AGE_RE.finditer(text):
        span = match.span(2)
        if not _overlaps(span, taken):
            role = "max" if match.group(1).lower() in ("under", "below") else "min"
            out.append(Value(AGE, (float(match.group(2)), role), *span, match.group(2), role=role))
            taken.append(span)
    for match in BIRTHDAY_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            amount = float(match.group(1) or ORDINAL_WORDS[match.group(2).lower()])
            out.append(Value(AGE, (amount, "max"), *match.span(), match.group(), role="max"))
            taken.append(match.span())
    for match in AGE_RANGE_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            # A range names who a thing is for, often one offer among several, not an admission limit:
            # its ends compare only with another range's ends. The upper end is the last age admitted.
            out += [Value(AGE, (float(match.group(1)), "range min"), *match.span(1), match.group(1), role="range min"),
                    Value(AGE, (float(match.group(2)) + 1, "range max"), *match.span(2), match.group(2),
                          role="range max")]
            taken.append(match.span())
    for match in AGE_OF_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            bound = match.group(1).lower()
            role = "min" if bound in ("over", "above", "from") else "max"
            amount = float(match.group(2)) + (1 if bound == "up to and including" else 0)
            out.append(Value(AGE, (amount, role), *match.span(), match.group(), role=role))
            taken.append(match.span())
    for match in OF_COUNT_RE.finditer(text):
        if not _overlaps(match.span(), taken):
            noun = _singular(match.group(2))
            out.append(Value(COUNT, (noun, _number(match.group(1)), ""), *match.span(), match.group(), unit=noun))
            taken.append(match.span())
    for match in AGE_PLUS_RE.finditer(text):
        if _overlaps(match.span(), taken):
            continue
        role = "max" if (match.group(2) or "").lower() == "under" else "min"
        amount = float(match.group(1) or match.group(3))
        out.append(Value(AGE, (amount, role), *match.span(), match.group(), role=role))
        taken.append(match.span())
    for match in QUANTITY_RE.finditer(text):
        if _overlaps(match.span(), taken):
            continue
        amount = _number(match.group(1))
        if amount is None:
            continue
        word = match.group(2)
        singular = _singular(word.split()[0]) if " " not in word else _singular(word)
        before = text[max(0, match.start() - 30):match.start()]
        after = text[match.end():match.end() + 25]
        is_digit = bool(re.match(r"\d", match.group(1)))
        span = match.span()
        if is_digit and len(match.group(1)) == 2 and re.search(r"\b(?:1[5-9]|20)\d\d[/\-\u2013]$", text[:match.start(1)]):
            continue  # the second half of "2026/27" or "2025-26": a season's years, not an amount
        # Ages: "aged 16", "16+", "over 18s", "18 years old".
        if is_digit and (AGE_BEFORE_RE.search(before) and singular in {"year", "yr", "and", "or", "+"}
                         or AGE_AFTER_RE.match(text[match.start(1) + len(match.group(1)):][:20])
                         and singular in {"year", "and", "or", "+", "s"}):
            # "aged 60 or over with a pension under $900": the words at the age say which bound it is.
            said = AGE_AFTER_RE.match(text[match.start(1) + len(match.group(1)):][:20])
            bound = re.search(r"over|older|above|\+|under|younger", said.group() if said else "", re.I)
            if bound:
                role = "max" if bound.group().lower() in ("under", "younger") else "min"
            else:
                role = "max" if re.search(r"under|younger|up to", before + after, re.I) else "min"
            out.append(Value(AGE, (amount, role), match.start(), match.end(1), match.group(1), role=role))
            taken.append(span)
            continue
        if singular in NON_CALENDAR_UNITS or " " in word and _singular(word) in NON_CALENDAR_UNITS:
            unit = _singular(word)
            unit = "occasion" if unit in OCCASION_UNITS else unit
            out.append(Value(QUANTITY, (unit, amount, _period_after(text, match.end())), *span, match.group(), unit=unit))
            taken.append(span)
            continue
        unit = _unit_of(word.split()[0])
        if (not is_digit and match.group(1).lower() in {"a", "an"}
                and not DURATION_BEFORE_RE.search(before)):
            continue  # "8 sailings a day", "£5 an hour": a rate's period, not a length of time
        if unit is not None and (is_digit or word.lower().split()[0] not in {"a", "an"}):
            dimension, factor = unit
            period = _period_after(text, match.end())
            out.append(Value(QUANTITY, (dimension, round(amount * factor, 6), period), *span, match.group(),
                             unit=dimension))
            taken.append(span)
            continue
        if is_digit and PAST_YEAR_RE.fullmatch(match.group(1)):
            # A bare year ("founded in 1885") is a date that names only its year.
            end = match.start(1) + 4
            out.append(Value(DATE, (int(match.group(1)), None, None), match.start(1), end, match.group(1)))
            taken.append((match.start(1), end))
            continue
        counting = is_digit or match.group(1).lower() in COUNTING_WORDS
        if not is_digit and amount == 1 and text[match.end(1):match.start(2)].strip() == "-":
            continue  # "one-off", "one-time", "one-way": an adjective of kind, not one of something
        # "two review meetings": after a number word the plural may come one word later (the first noun names
        # what is counted). Figures keep the stricter reading: typed counts are not yet scoped by page title,
        # so sibling pages' "6 return trips" / "9 return trips" must stay to the near-copy comparison.
        next_word = re.match(r"\s([a-z]+)", after)
        plural_ok = (amount == 1 or word.lower().endswith("s") or word.lower() in {"people", "children", "staff"}
                     or not is_digit and bool(next_word and next_word.group(1).endswith("s")
                                              and next_word.group(1) not in FUNCTION_WORDS))
        if counting and plural_ok and re.fullmatch(r"[a-z][a-z-]{2,}", word.lower()) and word.lower() not in FUNCTION_WORDS:
            out.append(Value(COUNT, (singular, amount, _period_after(text, match.end())), *span, match.group(),
                             unit=singular))
            taken.append(span)
    return out


