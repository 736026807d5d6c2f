"""Qualifiers that decide whether two claims are about the same thing at the same time.

Names (plans, branches, products), periods (months/seasons, holidays), explicit past statements, and an
article-level effective date that may still lie in the future.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from agents.types import ArticleText

from . import normalise
from .schedule import RANGE_RE, months_of
from .text import DAY_NAMES, MONTH_NAMES, STOPWORDS, Span, clause_bounds, content_tokens

HOLIDAY_RE = re.compile(r"\b(public holidays?|bank holidays?|holiday|christmas|easter|new year'?s?|good friday|"
                        r"boxing day|thanksgiving|24 december|25 december|26 december|31 december|1 january)\b", re.I)
HOLIDAY_INCLUDED_RE = re.compile(r"holidays?\s+(included|too|as well)|including (most )?(public|bank) holidays", re.I)
PAST_LEFT_RE = re.compile(r"\b(was|were|used to|previously|formerly|originally|old|previous|earlier)\b[^;:()]*$", re.I)
CHANGE_FROM_RE = re.compile(r"\b(moved|changed|increased|decreased|rose|went up|reduced|raised|extended|replac\w*)\b[^.;]*\bfrom\s*$", re.I)
EFFECTIVE_RE = re.compile(r"\b(effective|valid from|valid for all \w+ starting on or after|as of|apply to all \w+ from)\s+$", re.I)
TITLE_EFFECTIVE_RE = re.compile(r"(\(|\b(effective|valid|as of)\s)(from\s)?$", re.I)
NAME_RE = re.compile(r"\b[A-Z][a-zA-Z'\-]+(?:\s\d+)?")
NOT_NAMES = set(d.capitalize() for d in DAY_NAMES + MONTH_NAMES) | {
    "Update", "Updated", "New", "Good", "Great", "Yes", "No", "Please", "Our", "We", "You", "Your", "The",
    "Tel", "Phone", "Email", "Mon", "Fri", "Sat", "Sun", "ET", "VAT", "PDF", "FAQ", "Mbps", "TB", "GB", "Note", "Opening", "Hours"}


def _effective_date(text: str, now: dt.date, *, title: bool = False) -> dt.date | None:
    for d in normalise.find_dates(text, default_year=now.year):
        if EFFECTIVE_RE.search(text[max(0, d.start - 45): d.start]) or (
                title and TITLE_EFFECTIVE_RE.search(text[max(0, d.start - 16): d.start])):
            return d.amount
    return None


@dataclass
class Context:
    """Article-wide facts the sentence-level rules need."""

    title: str
    body: str
    spans: list[Span]
    lowercase_words: set[str]
    proper_words: set[str] = field(default_factory=set)
    title_names: frozenset = frozenset()
    future: bool = False  # the whole article only takes effect after `now`
    default_per: str = ""  # "Monthly prices" at the top of a price list
    _index: dict = field(default_factory=dict)

    def _previous(self, span: Span) -> list[Span]:
        i = self.spans.index(span)
        return list(reversed(self.spans[:i]))

    def line_label(self, span: Span) -> str:
        """The sentence before `span` on the same line ("Market Street practice - ... . Tel 0161 ...")."""
        prev = self._previous(span)
        if prev and "\n" not in self.body[prev[0].end: span.start]:
            return prev[0].text
        return ""

    def lead_for(self, span: Span) -> str:
        """Nearby earlier non-schedule sentences: the heading a bare schedule line belongs to."""
        if not is_bare(span.text):
            return ""
        taken = []
        for prev in self._previous(span)[:6]:
            if RANGE_RE.search(prev.text):
                continue
            taken.append(prev.text)
            if names_in(prev.text, self) or len(taken) == 3:
                break
        return " ".join(taken)

    def list_lead(self, span: Span) -> str:
        """For a list item ("- €50 for city bikes"), the line introducing the list."""
        i = self.spans.index(span)
        while i > 0 and re.match(r"\s*([-\u2022*]|\d+\.)\s", self.body[self.spans[i].start - 2: self.spans[i].start + 2] + " ") is None:
            if not self.spans[i].text.startswith(("-", "\u2022", "*")):
                return ""
            i -= 1
        for prev in reversed(self.spans[:i + 1]):
            if prev.text.rstrip().endswith(":"):
                return prev.text
            if not prev.text.startswith(("-", "\u2022", "*")):
                return ""
        return ""

    def subject_text(self, span: Span) -> str:
        return span.text + " " + self.lead_for(span)


def proper_words_of(text: str) -> set[str]:
    """Capitalised words inside a sentence ("a Saver ticket"): names wherever they start a sentence."""
    return {m.group(1) for m in re.finditer(r"[a-z,;&)][ \t]+([A-Z][a-zA-Z'\-]+)", text)}


def article_context(article: ArticleText, spans: list[Span], *, now: dt.date,
                    known_names: frozenset = frozenset()) -> Context:
    ctx = Context(title=article.title, body=article.body, spans=spans,
                  lowercase_words=set(re.findall(r"\b[a-z][a-z'\-]+\b", article.body)))
    # Names written mid-sentence in this article, its title or the other retrieved articles.
    ctx.proper_words = proper_words_of(article.body) | proper_words_of(article.title) | set(known_names)
    ctx.title_names = names_in(article.title, ctx)
    effective = _effective_date(article.title, now, title=True) or (spans and _effective_date(spans[0].text, now)) or None
    ctx.future = bool(effective and effective > now)
    head = article.title + " " + (spans[0].text if spans else "")
    ctx.default_per = next((per for per, pat in (("month", r"\bmonthly\b|per month"), ("day", r"\bdaily\b|per day"))
                            if re.search(pat, head, re.I)), "")
    return ctx


def names_in(text: str, ctx: Context) -> frozenset:
    """Proper names (plans, branches, products) in `text`, lowercased; "Fibre 500" keeps its number."""
    names = set()
    for m in NAME_RE.finditer(text):
        word = m.group().split()[0]
        if word in NOT_NAMES or word.rstrip("s") in NOT_NAMES or word.lower() in STOPWORDS:
            continue
        starts_sentence = re.search(r"(^|[.!?:\-\u2013(\"\n])\s*$|^\s*(\d+(\.\d+)*\.?|[-*\u2022])\s+$", text[: m.start()])
        followed_by_name = re.match(r"\s(\d|[A-Z])", text[m.start() + len(word):])
        if starts_sentence and word not in ctx.proper_words and not followed_by_name:
            continue
        names.add(re.sub(r"\s+", " ", m.group().lower()))
    # "12-month contract", "30-minute appointment": sizes that make a different product
    names.update(m.group().lower() for m in re.finditer(r"\b\d+-(?:minute|hour|day|week|month|year|night)\b", text, re.I))
    return frozenset(names)


def is_bare(sentence: str) -> bool:
    """A schedule line with nothing but days and times ("Friday: 09:00-14:00 (...)")."""
    without_notes = re.sub(r"\([^)]*\)", " ", sentence)
    return not content_tokens(RANGE_RE.sub(" ", without_notes)) - {"closed", "every", "single", "to", "week", "daily"}


def periods_in(text: str) -> tuple[frozenset, bool]:
    """(months the statement is limited to, whether it is about holidays or one specific day)."""
    holiday = bool(HOLIDAY_RE.search(text)) and not HOLIDAY_INCLUDED_RE.search(text)
    if not holiday:
        for d in normalise.find_dates(text, default_year=2000):
            before = text[max(0, d.start - 20): d.start].lower()
            if d.unit == "day" and not re.search(r"\b(from|since|as of|until|till|before|after|effective|on or after)\s*$", before):
                holiday = True  # "24 December: 09:00-13:00" is about that one day
    return months_of(text), holiday


def past_marker(sentence: str, start: int, end: int, *, now: dt.date) -> bool:
    """The value at sentence[start:end] is explicitly stated as no longer valid."""
    c_start, _ = clause_bounds(sentence, start)
    paren_open = sentence.rfind("(", 0, start)
    if paren_open > sentence.rfind(")", 0, start):
        c_start = max(c_start, paren_open)
    left = sentence[c_start:start]
    if PAST_LEFT_RE.search(left) or CHANGE_FROM_RE.search(sentence[:start]):
        return True
    clause_end = clause_bounds(sentence, start)[1]
    next_paren = sentence.find("(", end)
    if next_paren != -1:
        clause_end = min(clause_end, next_paren)
    clause = sentence[c_start:clause_end]
    for d in normalise.find_dates(clause, default_year=now.year):
        before = clause[max(0, d.start - 12): d.start].lower()
        if re.search(r"\b(until|till|up to)\s*$", before) and d.amount < now and d.start != start - c_start:
            return True
    return False
