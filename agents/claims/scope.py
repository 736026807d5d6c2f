"""What a claim is scoped to, and how it is qualified: general features, no business's vocabulary.

Scope: audience (adults / children / members …), time (days, seasons, holidays, peak), tier (basic /
premium …) and the knowledge base's own names (plans, branches: capitalised words the articles use, minus
the names every article shares, e.g. the business's). Two claims scoped to different things never
conflict. Qualifiers: an explicitly past statement, a change announced "from <date>" still in the future,
a stated exception, and a claim that restricts ("only", "reserved for").
"""
from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass

from .values import DATE_RE

DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
DAY_ABBREVIATIONS = {d[:3]: d for d in DAYS} | {"tues": "tuesday", "thur": "thursday", "thurs": "thursday"}
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]
# Audience words by axis: two claims scoped to different values of one axis (adults / children) can both
# hold; values of different axes (members / teenagers) say nothing about each other.
AUDIENCE_AXES = {
    "age": {"adult": "adult", "adults": "adult", "child": "child", "children": "child", "kid": "child",
            "kids": "child", "junior": "child", "juniors": "child", "infant": "infant", "infants": "infant",
            "baby": "infant", "babies": "infant", "toddler": "infant", "toddlers": "infant", "teen": "teen",
            "teens": "teen", "teenager": "teen", "teenagers": "teen", "youth": "teen", "senior": "senior",
            "seniors": "senior", "pensioner": "senior", "pensioners": "senior"},
    "study": {"student": "student", "students": "student"},
    "membership": {"member": "member", "members": "member", "non-member": "nonmember", "non-members": "nonmember"},
    "customer": {"business": "business", "corporate": "business", "personal": "personal", "private": "personal",
                 "new": "new", "existing": "existing", "returning": "existing", "trade": "business"},
    "place": {"domestic": "domestic", "international": "international", "overseas": "international",
              "resident": "resident", "residents": "resident", "non-resident": "nonresident"},
}
# Words that name an audience only when a person noun follows ("business customers", not "business days").
NEEDS_PERSON_NOUN = {"business", "corporate", "personal", "private", "new", "existing", "returning", "trade",
                     "domestic", "international", "overseas"}
PERSON_NOUNS = {"customer", "customers", "client", "clients", "account", "accounts", "member", "members",
                "user", "users", "guest", "guests", "patient", "patients", "traveller", "travellers",
                "traveler", "travelers", "subscriber", "subscribers", "student", "students", "plan", "plans",
                "rate", "rates", "booking", "bookings", "order", "orders", "visitor", "visitors"}
TIER_WORDS = {"basic", "standard", "premium", "gold", "silver", "bronze", "platinum", "starter", "essential",
              "essentials", "lite", "annual", "monthly", "yearly", "off-peak", "peak", "express", "economy",
              "deluxe", "superior", "introductory", "promotional", "refurbished", "digital", "print", "business",
              "family", "student", "corporate", "late", "early", "extra", "additional", "priority", "private",
              "shared", "one-way", "round-trip", "exotic", "emergency", "out-of-hours", "after-hours", "same-day",
              "next-day", "overnight", "junior", "senior", "group", "trial"}
SPECIAL_CASE_WORDS = {"late", "early", "priority", "emergency", "out-of-hours", "after-hours", "same-day", "next-day",
                      "overnight", "express", "off-peak", "peak"}
HOLIDAY_WORDS = {"holiday", "holidays", "christmas", "easter", "thanksgiving", "festive", "summer", "winter",
                 "spring", "autumn", "half-term", "peak", "off-peak", "seasonal"}
# "replaces the price list of 1 March" names the old version: what it says of it is past.
PAST_RE = re.compile(r"\b(?:(?<!be )(?<!been )(?<!is )(?<!are )used to|previously|formerly|in the past|until recently|had been|were once|was once|"
                     r"replaces|replaced|supersedes|superseded)\b", re.I)
PAST_TENSE_RE = re.compile(r"\b(?:was|were|cost|charged|applied|offered)\b", re.I)
PAST_WHEN_RE = re.compile(r"\b(?:until|till|before|prior to|in|during)\s+(?:(?:early|late|mid)[- ])?(?:(?:19|20)\d\d|last year)\b",
                          re.I)
EXCEPTION_RE = re.compile(r"\b(?:except|unless|apart from|other than|excluding|with the exception of|"
                          r"does not apply|do not apply|exempt|however|(?<!sorry, )but)\b", re.I)
# What an exception names is left out of the claim's own audience: "not allowed, except baby food" is for everyone.
EXCEPTION_CLAUSE_RE = re.compile(r"\b(?:except|apart from|other than|excluding|with the exception of)\b[^;.]*", re.I)
STAFF_RE = re.compile(r"\b(?:members? of (?:staff|the team|our team)|staff members?|team members?)\b", re.I)
# Whether a price includes tax: "€228 including VAT" and a bare "€189" (ex VAT) can both be right.
TAX_WORDS = r"(?:vat|tax(?:es)?|gst|sales tax)"
TAX_INCLUDED_RE = re.compile(rf"\b(?:inc(?:l(?:ud(?:e|es|ing)|usive of)?)?\.?|with)\s+{TAX_WORDS}\b"
                             rf"|\b{TAX_WORDS}\s+(?:is\s+)?incl(?:uded|\.|\b)", re.I)
TAX_EXCLUDED_RE = re.compile(rf"\b(?:excl(?:ud(?:e|es|ing)|usive of)?\.?|plus|before|without|ex\.?|\+)\s*{TAX_WORDS}\b"
                             rf"|\b{TAX_WORDS}\s+(?:is\s+)?(?:excl(?:uded|\.|\b)|extra\b)", re.I)
# A sentence that dates the whole page: it opens with its validity ("Valid from …", "Effective 1 May …") or says it of
# the page's prices ("These prices apply from …"); rules that are valid for a while ("vouchers are valid for 12
# months") name something else.
PAGE_VALIDITY_RE = re.compile(r"^(?:valid|effective|in force|applies|applicable)\b"
                              r"|^(?:all |our |these |the )?(?:\w+ )?(?:prices|rates|fares|fees|charges|price list|list)"
                              r" (?:are |is )?(?:valid|apply|effective|in force)\b", re.I)
PAGE_VALIDITY_MAX_WORDS = 14
# "All prices include VAT at 20%.", "Prices below are plus VAT": said once for every price on the page.
PRICES = r"(?:prices|rates|fares|fees|charges|costs)"
PAGE_TAX_RE = re.compile(rf"\b(?:all|our|these|every)\s+(?:\w+\s+){{0,2}}{PRICES}\b"
                         rf"|\b{PRICES}\s+(?:below|above|shown|listed|here|on this page)\b", re.I)
# Whether a fare is for one way or there and back: "$190 return" and "$95 each way" can both be right.
ONE_WAY_RE = re.compile(r"\b(?:each way|one[- ]way|single (?:fare|ticket|journey|trip))\b", re.I)
RETURN_TRIP_RE = re.compile(r"\b(?:return (?:fare|ticket|journey|trip)|round[- ]trip|there and back)\b|\(return\)", re.I)
RESTRICTS_RE = re.compile(r"\b(?:only|exclusively|solely|restricted to|reserved for|limited to|just)\b", re.I)
FROM_DATE_RE = re.compile(r"\b(?:from|as of|starting|starts|effective|beginning|with effect from|will)\b", re.I)
WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]*")
# "late" and "early" also say when an action is done ("if you check out early", "open late on Fridays"): there they
# name no special case. Read per occurrence, a word standing last in its clause or before a preposition.
TIME_ADVERB_USE_RE = re.compile(r"(?<![\w-])(?:late|early)(?![\w-])(?=\s*(?:[.;:!?)]|$)|\s+(?:if|when|on|at|in|to|for|by|"
                                r"from|than|as|before|after|until|enough|so)\b)", re.I)
# A year or a season of two years standing alone ("prices 2031", "the 2030/31 season"), not inside a date or a number.
YEAR_SPAN_RE = re.compile(r"(?<![\d\u00a3\u20ac$.,:/\-])(?<!\d )((?:19|20)\d\d)(?:\s?[/\u2013\-]\s?((?:19|20)?\d\d))?(?![\d%])(?![.,:]\d)(?! \d)")
DAY_RANGE_RE = re.compile(r"\b([A-Za-z]{3,9})\.?\s*(?:-|\u2013|to|through|thru|until)\s*([A-Za-z]{3,9})\b")


def tax_said(text: str) -> frozenset[str]:
    """What a text says of tax on prices: "included", "excluded", both or neither."""
    return frozenset(name for name, pattern in (("included", TAX_INCLUDED_RE), ("excluded", TAX_EXCLUDED_RE))
                     if pattern.search(text))


def _statements(context: str) -> str:
    """A claim's context less the question it answers: "Do your prices include VAT?" says nothing of tax."""
    return " ".join(part for part in context.split("\u2014") if not part.strip().endswith("?"))


@dataclass(frozen=True)
class PageScope:
    """What an article says once for everything on it: tax on its prices ("All prices include VAT") and the years
    it is valid for ("Valid from 1 January 2025 to 31 December 2025", "These prices apply from 1 January 2026")."""

    tax: frozenset[str] = frozenset()
    years: frozenset[str] = frozenset()


def page_scope(claims) -> PageScope:
    """The PageScope of an article from its claims, each (text, the dates it states)."""
    taxes: set[str] = set()
    years: set[str] = set()
    for text, dates in claims:
        if PAGE_TAX_RE.search(text):
            taxes |= tax_said(text)
        if dates and PAGE_VALIDITY_RE.search(text) and len(text.split()) <= PAGE_VALIDITY_MAX_WORDS:
            first, last = min(dates).year, max(dates).year
            # "1 April 2025 to 31 March 2026" is one season, as years_in reads "2025/26".
            years.add(str(first) if first == last else f"{first}/{last % 100:02d}" if last == first + 1
                      else f"{first}-{last}")
    return PageScope(tax=frozenset(taxes) if len(taxes) == 1 else frozenset(), years=frozenset(years))


def _day(word: str) -> str | None:
    lowered = word.lower().rstrip(".")
    if lowered.endswith("s") and lowered[:-1] in DAYS:
        lowered = lowered[:-1]
    return lowered if lowered in DAYS else DAY_ABBREVIATIONS.get(lowered)


WEEKDAYS_RE = re.compile(r"\bweekdays?\b", re.I)
WEEKENDS_RE = re.compile(r"\bweekends?\b", re.I)
EVERY_DAY_RE = re.compile(r"\b(?:daily|every day|(?:seven|7) days a week)\b", re.I)
CLAUSE_SPLIT_RE = re.compile(r"[,;]|\band\b")
CLOSED_RE = re.compile(r"\bclosed\b", re.I)


@functools.lru_cache(maxsize=32768)
def days_in(text: str) -> frozenset[str]:
    """Days named in `text`, day ranges expanded ("Mon-Fri" = five days). Cached: claims and their words are
    read again for every pair they are compared in."""
    days: set[str] = set()
    for match in DAY_RANGE_RE.finditer(text):
        first, last = _day(match.group(1)), _day(match.group(2))
        if first and last:
            i, j = DAYS.index(first), DAYS.index(last)
            days.update(DAYS[i:j + 1] if i <= j else DAYS[i:] + DAYS[:j + 1])
    for word in WORD_RE.findall(text):
        day = _day(word)
        if day:
            days.add(day)
    if WEEKDAYS_RE.search(text):
        days.update(DAYS[:5])
    if WEEKENDS_RE.search(text):
        days.update(DAYS[5:])
    if EVERY_DAY_RE.search(text):
        days.update(DAYS)
    return frozenset(days)


# A capitalised day abbreviation; "Sat" and "Sun" are words too, so only where a schedule uses them: after a
# range dash or "to", or before a dash, a time (or its masked placeholder) or a colon.
DAY_ABBREVIATION_RE = re.compile(r"\b(?:(Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri)\b\.?|(?<=-)(Sat|Sun)\b\.?|(?<=\u2013)(Sat|Sun)\b\.?|"
                                 r"(?<=to )(Sat|Sun)\b\.?|(Sat|Sun)\.?(?=\s*(?:\d|-|\u2013|:|a time\b)))")


def spell_out_days(text: str) -> str:
    """"Mon-Sat 09:00-19:00, Sun 12:00-16:00" as "Monday-Saturday …, Sunday …": the sentence model reads
    abbreviated schedules like written-out ones only when they are spelled the same."""
    return DAY_ABBREVIATION_RE.sub(lambda m: DAY_ABBREVIATIONS[m.group(m.lastindex).lower()].capitalize(), text)


NAME_ANYWHERE_RE = re.compile(r"\b([A-Z][a-zA-Z0-9'\-]+)")
NAME_INSIDE_SENTENCE_RE = re.compile(r"(?<=[a-z0-9,;:(] )([A-Z][a-zA-Z0-9'\-]+)")


@functools.lru_cache(maxsize=16384)
def proper_names(text: str, *, first_words: bool = False) -> frozenset[str]:
    """Capitalised words that do not start a sentence (or any, with `first_words`, for titles and
    headings): the names a text uses (plans, branches, brands). Cached, as days_in."""
    names = set()
    for match in (NAME_ANYWHERE_RE if first_words else NAME_INSIDE_SENTENCE_RE).finditer(text):
        word = match.group(1)
        if not _day(word) and not days_in(word) and word.lower() not in MONTHS and not word.isupper():  # "Sundays", "Mon-Fri"
            names.add(word)
    return frozenset(names)


@dataclass(frozen=True)
class Scope:
    audience: frozenset[str]
    days: frozenset[str]
    periods: frozenset[str]  # seasons, holidays, months, peak
    tiers: frozenset[str]
    names: frozenset[str]
    past: bool
    future_from: dt.date | None
    has_exception: bool
    restricts: bool
    special_case: bool = False  # the claim itself says "late", "early", "emergency" …
    tax: frozenset[str] = frozenset()  # "included" / "excluded": what the claim says of tax on its prices
    # The tax was said by the heading or once for the whole page, not by the claim: a page that says prices include
    # tax is set apart only from one that says they do not, never from one that does not say.
    tax_inherited: bool = False
    trip: frozenset[str] = frozenset()  # "one way" / "return": what a fare is for
    days_closed: frozenset[str] = frozenset()
    years: frozenset[str] = frozenset()  # the years or seasons a claim or its heading is said for ("2030/31")
    heading_names: frozenset[str] = frozenset()  # the set's known names in the claim's heading: what its page is about


@functools.lru_cache(maxsize=16384)
def years_in(text: str) -> frozenset[str]:
    """Years and two-year seasons a text is said for, full dates left out ("1 March 2026" is a day, not a year)."""
    text = DATE_RE.sub(" ", text)
    out = set()
    for match in YEAR_SPAN_RE.finditer(text):
        first, second = match.group(1), match.group(2)
        out.add(f"{first}/{second[-2:]}" if second and int(second[-2:]) == (int(first) + 1) % 100 else first)
    return frozenset(out)


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD_RE.findall(text)]


@functools.lru_cache(maxsize=16384)
def _categories(piece: str, heading: bool) -> tuple[frozenset, frozenset, frozenset, frozenset, frozenset]:
    """What a claim or its heading says of audience, days, periods, tiers and names (every proper name: the set's
    known names are picked by the caller). Cached: a claim is scoped again in every set that retrieves it."""
    audience_words = _words(STAFF_RE.sub(" ", EXCEPTION_CLAUSE_RE.sub(" ", piece)))
    audience = set()
    for position, word in enumerate(audience_words):
        following = audience_words[position + 1] if position + 1 < len(audience_words) else ""
        if word in NEEDS_PERSON_NOUN and following not in PERSON_NOUNS:
            continue
        audience.update(f"{axis}:{values[word]}" for axis, values in AUDIENCE_AXES.items() if word in values)
    words = _words(piece)
    periods = frozenset(w for w in words if w in HOLIDAY_WORDS)
    tiers = frozenset(w for w in _words(TIME_ADVERB_USE_RE.sub(" ", piece)) if w in TIER_WORDS)
    return frozenset(audience), days_in(piece), periods, tiers, frozenset(proper_names(piece, first_words=heading))


def claim_scope(text: str, context: str, *, known_names: frozenset[str], dates: list[dt.date],
                context_dates: list[dt.date], calendar_days: list[str], now: dt.date,
                page: PageScope = PageScope()) -> Scope:
    """The scope of a claim; a category the claim leaves open is taken from its heading/title.
    `page`: what the article says once for all its claims (page_scope), for claims that say nothing of it.
    `calendar_days`: the particular days the claim names ("24 December"), which scope it like a season."""
    # A heading scopes the claims under it by name (a branch page) too; a name that starts the claim ("Gold
    # members …") scopes it only when nothing else names a scope. Only the set's known names count.
    names = (_categories(text, False)[4] & known_names or _categories(context, True)[4] & known_names
             or (proper_names(text[:text.find(" ")], first_words=True) & known_names if " " in text else frozenset()))
    return _claim_scope(text, context, tuple(dates), tuple(context_dates), tuple(calendar_days), now, page, names,
                        _categories(context, True)[4] & known_names)


@functools.lru_cache(maxsize=32768)
def _claim_scope(text: str, context: str, dates: tuple[dt.date, ...], context_dates: tuple[dt.date, ...],
                 calendar_days: tuple[str, ...], now: dt.date, page: PageScope, names: frozenset[str],
                 heading_names: frozenset[str] = frozenset()) -> Scope:
    """claim_scope once its names are chosen. Cached: a claim is scoped again in every set that retrieves it,
    and only its names depend on the set."""
    own = _categories(text, False)
    inherited = _categories(context, True)
    # A heading scopes the claims under it by day or tier ("Saturday:", "Premium plan"); audiences and seasons
    # are said in the claim itself.
    days = own[1] or inherited[1]
    periods = (own[2] | frozenset(f"day:{d}" for d in calendar_days)) or inherited[2]
    tiers = own[3] or inherited[3]
    own_tax = tax_said(text)
    inherited_tax = frozenset() if own_tax else tax_said(_statements(context)) or page.tax
    future = [d for d in dates if d > now] if FROM_DATE_RE.search(text) else []
    if not future and FROM_DATE_RE.search(context):  # "Price changes from 1 April" heads the whole page
        future = [d for d in context_dates if d > now]
    return Scope(audience=own[0], days=days, periods=periods, tiers=tiers, names=names, heading_names=heading_names,
                 past=bool(PAST_RE.search(text)) or bool(PAST_TENSE_RE.search(text) and (
                     PAST_WHEN_RE.search(text) or any(d < now for d in dates))),
                 future_from=min(future) if future else None,
                 has_exception=bool(EXCEPTION_RE.search(text)), restricts=bool(RESTRICTS_RE.search(text)),
                 special_case=bool(own[3] & SPECIAL_CASE_WORDS),
                 tax=own_tax or inherited_tax,
                 tax_inherited=not own_tax and bool(inherited_tax),
                 trip=frozenset(name for name, pattern in (("one way", ONE_WAY_RE), ("return", RETURN_TRIP_RE))
                                if pattern.search(text)),
                 years=years_in(text) or years_in(context) or page.years,
                 days_closed=frozenset(d for clause in CLAUSE_SPLIT_RE.split(text)
                                       if CLOSED_RE.search(clause) for d in days_in(clause)))


def scopes_differ(a: Scope, b: Scope) -> bool:
    """Different audiences, days, periods, tiers or names: both claims can hold."""
    if a.days and b.days and not a.days & b.days:
        return True  # overlapping days are compared ("daily" includes Saturday)
    for mine, theirs in ((a.periods, b.periods), (a.tiers, b.tiers), (a.names, b.names)):
        if mine and theirs and not mine & theirs:
            return True
    if a.years and b.years and not a.years & b.years:
        return True  # a price list for one year and one for the next, or two seasons ("2030/31", "2031/32")
    if a.trip and b.trip and a.trip != b.trip:
        return True  # a one-way fare and a return fare
    if a.tax != b.tax and a.tax and b.tax:
        return True
    if a.tax != b.tax and "included" in a.tax | b.tax and not (a.tax_inherited or b.tax_inherited):
        # A price with tax and one without are different figures. "$40 an hour plus tax" against a bare "$35 per
        # hour" is compared: prices are quoted before tax or the text does not say.
        return True
    if a.special_case != b.special_case:
        return True  # "late check-out" is a special case of "check-out", not another claim about it
    for axis in AUDIENCE_AXES:
        mine = {x for x in a.audience if x.startswith(axis + ":")}
        theirs = {x for x in b.audience if x.startswith(axis + ":")}
        if mine and theirs and mine != theirs:
            return True
    if a.past != b.past:
        return True
    return (a.future_from is None) != (b.future_from is None)


def scopes_uneven(a: Scope, b: Scope) -> bool:
    """One claim is qualified where the other is not: a likelier rule-and-special-case than a conflict."""
    return any(bool(x) != bool(y) for x, y in ((a.audience, b.audience), (a.days, b.days), (a.periods, b.periods),
                                                (a.tiers, b.tiers), (a.names, b.names)))


def mentions(text: str, name: str) -> bool:
    """`name` appears in `text` as a whole name (not inside a longer word; a name ending in "." included)."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def pages_named_apart(a: Scope, b: Scope, said_a: str, said_b: str) -> bool:
    """Each claim's heading names a thing (a route, a branch, a product) that the other claim, its heading included,
    never mentions: two pages about two named things, even when their headings share a name ("Elm Quay – Harbour"
    and "Elm Quay – North Point" are two routes). `said_a` / `said_b`: each claim with its heading."""
    only_a, only_b = a.heading_names - b.heading_names, b.heading_names - a.heading_names
    return (bool(only_a) and bool(only_b) and not any(mentions(said_b, name) for name in only_a)
            and not any(mentions(said_a, name) for name in only_b))
