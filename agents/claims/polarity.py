"""Polarity claims: the same predicate asserted on one side and denied on the other.

"refundable" / "non-refundable", "can be returned" / "cannot be returned", "can apply" / "not eligible",
"online" / "can't be arranged online", "drop box" / "no drop boxes".
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from agents.types import ArticleText

from .compare import names_clash
from .qualifiers import article_context, names_in
from .scope import strong_topic
from .text import Span, content_tokens, normalise_phrases, overlap, split_sentences

# predicate -> (pattern on normalised text, finding type, shared topic words needed)
PREDICATES = {
    "refund": (r"\brefund(?:ed|able|s)?\b", "policy", 2),
    # "return to your car", "4 return sailings", "a return ticket" are not about sending goods back.
    "return": (r"(?<!\d )\breturn(?:ed|able)?\b(?!\s+(?:to|journeys?|trips?|tickets?|sailings?|fares?|flights?|legs?|"
               r"crossings?)\b)|\bfinal sale\b|\byours to keep\b", "policy", 2),
    "eligible": (r"\beligible\b|\bqualif(?:y|ies)\b|\bcan (?:also |still )?apply\b|\bcovers? every\b", "eligibility", 2),
    "online": (r"\bonline\b|\bin the app\b|\b(?:the )?\w+ app\b", "procedure", 2),
    "inperson": (r"\binperson\b|\b(?:pop|come|drop) (?:in|into|by)\b|\bat reception\b", "procedure", 2),
    "dropbox": (r"\bdropbox\b", "procedure", 1),  # a facility: naming it is the topic
    "allowed": (r"\b(?:allowed|permitted|welcome|accepted|prohibited|banned|forbidden)\b", "policy", 2),
}
NEGATION_RE = re.compile(r"\b(not|no|never|cannot|can't|won't|don't|doesn't|isn't|aren't|unable|no longer|without)\b|\bnon-$")
# A negation only reaches the predicate within its own phrase: "at no extra cost and a full refund" is positive.
NEGATION_SCOPE_RE = re.compile(r"[,;]|\b(?:and|or)\s+(?=(?:a|an|the|your|request|get|receive|claim|ask|choose)\b)")
AFTER_NEGATION_RE = re.compile(r"\s+(?:is |are |was |were |has |have |will |can |may |do |does )?(?:not|never)\b|\s+cannot\b")
ALWAYS_NEGATIVE = {"final sale", "yours to keep", "prohibited", "banned", "forbidden"}
# "the rules for refunds": a plural noun after a preposition names the topic, it asserts nothing.
MENTION_RE = re.compile(r"\b(?:for|of|about|on|regarding)\s+$")
ELLIPSIS_RE = re.compile(r"^\s*(?:and\s+)?so (?:can|do|does|are|is|may|will)\b")  # "final sale" = cannot be returned; "yours to keep" = no return
EXCEPTION_RE = re.compile(r"\b(unless|except|other than|apart from)\b(.*)$")
# "Unlike our other deposits, whitening deposits are non-refundable": the sentence states its own exception.
STATED_EXCEPTION_RE = re.compile(r"\b(unlike|in contrast to|except for|with the exception of)\b")
PAST_RE = re.compile(r"\b(used to|previously|formerly|in the past)\b")
CLAUSE_RE = re.compile(r";|,\s(?:and|but|while|whereas|so|because)\s|\.\s")


@dataclass(frozen=True)
class Stance:
    ref: str
    predicate: str
    positive: bool
    topic: frozenset
    exceptions: frozenset
    names: frozenset
    sentence: Span
    ftype: str


def _clauses(text: str) -> list[tuple[int, int]]:
    cuts = [0] + [m.end() for m in CLAUSE_RE.finditer(text)] + [len(text)]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _negative(main: str, m: re.Match) -> bool:
    before = main[max(0, m.start() - 45): m.start()]
    cuts = list(NEGATION_SCOPE_RE.finditer(before))
    if cuts:
        before = before[cuts[-1].end():]
    return bool(NEGATION_RE.search(before)) or m.group() in ALWAYS_NEGATIVE or bool(AFTER_NEGATION_RE.match(main[m.end():]))


def _stances_in(article: ArticleText, ctx, spans: list[Span], index: int) -> list[Stance]:
    span = spans[index]
    out = []
    lead = ""  # clauses without a predicate of their own: the subject of the next one ("Owners of X, and Y, are not")
    previous: Stance | None = None
    for c_start, c_end in _clauses(span.text):
        raw = span.text[c_start:c_end]
        if PAST_RE.search(raw.lower()) or STATED_EXCEPTION_RE.search(span.text.lower()):
            continue
        clause = normalise_phrases(raw)
        if previous and ELLIPSIS_RE.match(clause):
            # "X can apply, and so can Y": the same predicate, asserted for Y.
            out.append(Stance(ref=article.ref, predicate=previous.predicate, positive=previous.positive,
                              topic=frozenset(content_tokens(clause)), exceptions=frozenset(),
                              names=names_in(raw, ctx), sentence=span, ftype=previous.ftype))
            continue
        exception = EXCEPTION_RE.search(clause)
        main = clause[: exception.start()] if exception else clause
        found = False
        for predicate, (pattern, ftype, _) in PREDICATES.items():
            m = re.search(pattern, main)
            if not m or (m.group().endswith("s") and MENTION_RE.search(main[: m.start()])):
                continue
            found = True
            topic = content_tokens(lead + " " + re.sub(pattern, " ", main)) - {"non"}  # "non-refundable"
            names = names_in(lead + " " + raw, ctx)
            if len(topic) < 3 and not names and index > 0:
                # "Cash refunds are not given for weather." leans on the sentence before it, and on its names;
                # "Saver tickets are non-refundable." names its subject.
                topic |= content_tokens(spans[index - 1].text)
                names = names_in(spans[index - 1].text, ctx)
            if not topic:
                continue  # a heading ("Refunds")
            previous = Stance(
                ref=article.ref, predicate=predicate, positive=not _negative(main, m), topic=frozenset(topic),
                exceptions=frozenset(content_tokens(exception.group(2)) if exception else ()),
                names=names, sentence=span, ftype=ftype)
            out.append(previous)
        lead = "" if found else lead + " " + raw
    return out


def extract_stances(article: ArticleText, *, now: dt.date, known_names: frozenset = frozenset()) -> list[Stance]:
    spans = split_sentences(article.body)
    ctx = article_context(article, spans, now=now, known_names=known_names)
    if ctx.future:
        return []
    return [s for i in range(len(spans)) for s in _stances_in(article, ctx, spans, i)]


def _shared(sa: Stance, sb: Stance) -> tuple[int, float]:
    """(shared subject words, overlap) of two stances; weak words and one-sided names say nothing.
    A name both sides share that is all one side says ("Saver tickets are non-refundable") is the subject."""
    common = sa.names & sb.names
    if common and (not strong_topic(sa.topic, sa.names, keep_audience=True)
                   or not strong_topic(sb.topic, sb.names, keep_audience=True)):
        return 2, 1.0
    # Names stay in: "custom sofas" on one side is "Custom Sofa Builder" on the other. A place both sides name
    # ("Porthaven Ferry Terminal") is one piece of evidence, however many words it has.
    a, b = strong_topic(sa.topic, frozenset(), keep_audience=True), strong_topic(sb.topic, frozenset(), keep_audience=True)
    common_words = {w for n in common for w in content_tokens(n, drop_generic=False)}
    shared = len((a & b) - common_words) + (1 if (a & b) & common_words else 0)
    return shared, overlap(set(a), set(b))


def _matches(sa: Stance, sb: Stance) -> tuple[int, float] | None:
    if sa.predicate != sb.predicate or names_clash(sa.names, sb.names):
        return None
    if (sa.topic & sb.exceptions) or (sb.topic & sa.exceptions):
        return None  # a rule and its stated exception
    shared, score = _shared(sa, sb)
    if shared < PREDICATES[sa.predicate][2] or score < 0.3:
        return None
    return shared, score


def _also_states(stance: Stance, others: list[Stance], against: tuple[int, float]) -> bool:
    """The other article also says what `stance` says, about a case at least as close: it states the rule and
    its exception itself ("pets are not allowed in the lounge ... assistance dogs are welcome everywhere")."""
    return any(o.positive == stance.positive and (m := _matches(stance, o)) is not None and m >= against
               for o in others)


def best_polarity_conflict(stances_a: list[Stance], stances_b: list[Stance]):
    """The best-matching pair of opposite stances on the same predicate and topic, if any."""
    best = None
    for sa in stances_a:
        for sb in stances_b:
            if sa.positive == sb.positive:
                continue
            score = _matches(sa, sb)
            if score is None or _also_states(sa, stances_b, score) or _also_states(sb, stances_a, score):
                continue
            if best is None or score > best[0]:
                pos, neg = (sa, sb) if sa.positive else (sb, sa)
                what = f"{pos.ref} says {sa.predicate} applies, {neg.ref} says it does not"
                best = (score, sa, sb, what)
    return None if best is None else best[1:]
