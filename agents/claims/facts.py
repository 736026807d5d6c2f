"""Typed facts extracted from one article: value + the attribute it is about + its qualifiers."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from agents.types import ArticleText

from . import normalise, schedule
from .qualifiers import Context, article_context, names_in, past_marker, periods_in
from .text import GENERAL_CONTACT, Span, clause_bounds, content_tokens, split_sentences

# Which finding type a value kind reports as, unless the attribute says otherwise.
KIND_TYPE = {"money": "price", "percent": "price", "phone": "contact", "email": "contact", "url": "contact",
             "date": "date", "duration": "quantity", "count": "quantity", "age": "eligibility", "schedule": "hours"}
# Dates that end or start something a customer relies on; other dates are only qualifiers.
EVENT_DATE_RE = re.compile(r"\b(withdraw|ends?|ending|closes?|expires?|deadline|runs?|extended|have until|"
                           r"last day|switch(?:ed)?[- ]off|launch|starts?|begins?)\b", re.I)


@dataclass(frozen=True)
class Fact:
    ref: str
    kind: str
    ftype: str
    value: object
    display: str
    topic: frozenset
    names: frozenset
    months: frozenset
    holiday: bool
    unit: str
    bound: str
    approx: bool
    past: bool
    sentence: Span
    phones: frozenset = frozenset()


MONEY_ROLES = [
    ("deposit", r"deposit"), ("credit", r"\bcredit|compensat"), ("refund", r"refund"),
    ("discount", r"% off|discount|\bsave\b"), ("liability", r"liable|replacement value|most you(?:'ll)? pay|excess"),
    ("penalty", r"\blate\b|non-return|\bfine\b|penalt|termination|restocking|call-out"),
]
MAILBOX_WORDS = {"info", "hello", "contact", "enquiries", "enquiry", "mail", "email", "noreply", "no", "reply", "admin", "office"}
ANCHOR_BEFORE_RE = re.compile(r"(?:'s?|s')?\s*(?:\w+\s){0,2}?(?:before|prior|ahead|in advance|notice|earlier than)\b", re.I)
MAX_RE = re.compile(r"(up to|maximum( of)?|capped at|at most|the most you(?:'ll)? pay|no more than)\b", re.I)
MIN_RE = re.compile(r"\b(at least|minimum( of)?|more than)\s*$", re.I)


def _window(sentence: str, values: list, index: int) -> tuple[str, str]:
    """(left, right) text that describes value `index`: its clause, cut at the neighbouring values."""
    v = values[index]
    c_start, c_end = clause_bounds(sentence, v.start)
    left = max([c_start] + [w.end for w in values[:index]])
    right = min([c_end] + [w.start for w in values[index + 1:]])
    # "Fibre 500 - €36.90/month", "White Glove - ...: $149": the line's label names the value.
    sep = re.search(r":\s|\s[-\u2013]\s", sentence)
    label = sentence[: sep.start()] if sep and sep.start() < v.start and sep.start() < left else ""
    # After the value only its own phrase counts ("€20 for the whole day", not "and e-bikes are €42").
    tail = re.split(r",|;|\(|\s(?:and|or|but)\s|\s[-\u2013]\s", sentence[v.end: max(right, v.end)])[0]
    return label + " " + sentence[left: v.start], tail


def _money_role(text: str) -> str:
    return next((role for role, pattern in MONEY_ROLES if re.search(pattern, text, re.I)), "")


def _names(kind: str, window: str, sentence: str, ctx: Context) -> frozenset:
    """Qualifying names; a contact line falls back on the page title ("Harbourfront branch"), an event date
    on its whole sentence and the title ("Spring Sale extended!")."""
    if kind == "date":
        return names_in(sentence, ctx) | ctx.title_names
    return names_in(window, ctx) or (ctx.title_names if kind in ("phone", "email", "url") else frozenset())


def _value_facts(article: ArticleText, ctx: Context, span: Span, now: dt.date) -> list[Fact]:
    text = span.text
    values = normalise.find_values(text, default_year=(article.updated_at or now).year)
    facts: list[Fact] = []
    sentence_phones = frozenset(v.amount for v in values if v.kind == "phone")
    previous = {"topic": frozenset(), "role": "", "per": ctx.default_per, "bound": ""}
    lead = ctx.list_lead(span)
    for i, v in enumerate(values):
        left, right = _window(text, values, i)
        window = left + " " + right
        topic = frozenset(content_tokens(window))
        unit, bound = v.unit, v.bound
        if v.kind == "money":
            role = _money_role(left) or _money_role(text[: v.start] + " " + lead)
            if MAX_RE.search(left) or MAX_RE.search(text[: v.start]) and previous["bound"] == "max":
                bound = "max"
            elif MIN_RE.search(left):
                bound = "min"
            if not topic - names_in(window, ctx):
                topic = topic | previous["topic"]  # "E-bike: €13 per hour / €48 per day"
            per = v.extra.get("per") or previous["per"]
            previous = {"topic": topic, "role": role, "per": per, "bound": bound}
            unit = f"{v.unit}/{per}/{role}"
        if v.kind in ("phone", "email", "url"):
            # A contact value is named by the few words right before it ("roadside line on", "Faults:").
            label = text.split(":", 1)[0] if ":" in text[: v.start] else ""
            near = " ".join(re.findall(r"[\w'-]+", left)[-5:])
            topic = frozenset(content_tokens(label + " " + near) - GENERAL_CONTACT)
            if not topic and not label and not near.strip():
                topic = frozenset(content_tokens(ctx.line_label(span)) - GENERAL_CONTACT)
            if v.kind == "email":
                # "lostproperty@", "groups@" name a department; "Email X with the date, the route and ..." says
                # what the address is for.
                local = set(re.split(r"[._+-]", str(v.amount).split("@")[0].lower()))
                after = text[v.end: clause_bounds(text, v.start)[1]]
                topic = topic | frozenset((local | content_tokens(after)) - GENERAL_CONTACT - MAILBOX_WORDS)
        if v.kind == "duration":
            # "48 hours before departure" is a notice period; "within 48 hours" an elapsed time.
            unit = f"{v.unit}/{'before' if ANCHOR_BEFORE_RE.match(text[v.end:]) else 'span'}"
        past = past_marker(text, v.start, v.end, now=now) or ctx.future
        if v.kind == "date":
            before = text[max(0, v.start - 30): v.start].lower()
            if re.search(r"\b(from|since|as of|effective|valid|after|update[d]?)\s*$", before) or not EVENT_DATE_RE.search(text):
                continue  # a qualifier or a publication date, not a claimed event date
            starts = re.search(r"\b(from|starts?|begins?|opens?|launch\w*)\b[^,;]{0,25}$", before)
            unit = "start" if starts and not re.search(r"\bto\s*$", before) else "end"
        months = periods_in(text)[0] if v.kind in ("money", "schedule") else frozenset()
        facts.append(Fact(
            ref=article.ref, kind=v.kind, ftype=KIND_TYPE[v.kind], value=v.amount, display=v.text,
            topic=topic, names=_names(v.kind, window, text, ctx),
            months=months,
            holiday=periods_in(text)[1] and v.kind != "date", unit=unit, bound=bound, approx=v.approx, past=past, sentence=span, phones=sentence_phones))
    return facts


def _schedule_facts(article: ArticleText, ctx: Context, spans: list[Span], now: dt.date) -> list[Fact]:
    facts = []
    for span in spans:
        sched = schedule.parse_schedule(span.text)
        if not sched:
            continue
        subject = ctx.subject_text(span)
        phones = frozenset(v.amount for v in normalise.find_phones(subject))
        months, holiday = periods_in(span.text + " " + ctx.lead_for(span))
        if not months:
            months = schedule.months_of(article.title)
        facts.append(Fact(
            ref=article.ref, kind="schedule", ftype="hours", value=tuple(sorted(sched.items())), display=span.text,
            topic=frozenset(content_tokens(subject)), names=names_in(subject, ctx) or ctx.title_names,
            months=months, holiday=holiday, unit="", bound="", approx=False,
            past=past_marker(span.text, 0, len(span.text), now=now) or ctx.future, sentence=span, phones=phones))
    return facts


def extract_facts(article: ArticleText, *, now: dt.date, known_names: frozenset = frozenset()) -> list[Fact]:
    spans = split_sentences(article.body)
    ctx = article_context(article, spans, now=now, known_names=known_names)
    facts: list[Fact] = []
    for span in spans:
        facts.extend(_value_facts(article, ctx, span, now))
    facts.extend(_schedule_facts(article, ctx, spans, now))
    return facts
