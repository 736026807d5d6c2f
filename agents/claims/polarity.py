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
from .text import Span, content_tokens, normalise_phrases, overlap, split_sentences

# predicate -> (pattern on normalised text, finding type, shared topic words needed)
PREDICATES = {
    "refund": (r"\brefund(?:ed|able|s)?\b", "policy", 2),
    "return": (r"\breturn(?:ed|able)?\b|\bfinal sale\b|\byours to keep\b", "policy", 2),
    "eligible": (r"\beligible\b|\bqualif(?:y|ies)\b|\bcan (?:also |still )?apply\b|\bcovers? every\b", "eligibility", 2),
    "online": (r"\bonline\b|\bin the app\b|\b(?:the )?\w+ app\b", "procedure", 2),
    "inperson": (r"\binperson\b|\b(?:pop|come|drop) (?:in|into|by)\b|\bat reception\b", "procedure", 2),
    "dropbox": (r"\bdropbox\b", "procedure", 1),  # a facility: naming it is the topic
}
NEGATION_RE = re.compile(r"\b(not|no|never|cannot|can't|won't|don't|doesn't|isn't|aren't|unable|no longer)\b|\bnon-$")
ALWAYS_NEGATIVE = {"final sale", "yours to keep"}  # "final sale" = cannot be returned; "yours to keep" = no return
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


def _stances_in(article: ArticleText, ctx, spans: list[Span], index: int) -> list[Stance]:
    span = spans[index]
    out = []
    for c_start, c_end in _clauses(span.text):
        raw = span.text[c_start:c_end]
        if PAST_RE.search(raw.lower()) or STATED_EXCEPTION_RE.search(span.text.lower()):
            continue
        clause = normalise_phrases(raw)
        exception = EXCEPTION_RE.search(clause)
        main = clause[: exception.start()] if exception else clause
        for predicate, (pattern, ftype, _) in PREDICATES.items():
            m = re.search(pattern, main)
            if not m:
                continue
            before = main[max(0, m.start() - 45): m.start()]
            negative = bool(NEGATION_RE.search(before)) or m.group() in ALWAYS_NEGATIVE or bool(
                re.match(r"\s+(?:is |are )?(?:not|never)\b", main[m.end():]))
            topic = content_tokens(re.sub(pattern, " ", main))
            if len(topic) < 3 and index > 0:
                # "Cash refunds are not given for weather." leans on the sentence before it.
                topic |= content_tokens(spans[index - 1].text)
            out.append(Stance(
                ref=article.ref, predicate=predicate, positive=not negative, topic=frozenset(topic),
                exceptions=frozenset(content_tokens(exception.group(2)) if exception else ()),
                names=names_in(raw, ctx), sentence=span, ftype=ftype))
    return out


def extract_stances(article: ArticleText, *, now: dt.date) -> list[Stance]:
    spans = split_sentences(article.body)
    ctx = article_context(article, spans, now=now)
    if ctx.future:
        return []
    return [s for i in range(len(spans)) for s in _stances_in(article, ctx, spans, i)]


def best_polarity_conflict(stances_a: list[Stance], stances_b: list[Stance]):
    """The best-matching pair of opposite stances on the same predicate and topic, if any."""
    best = None
    for sa in stances_a:
        for sb in stances_b:
            if sa.predicate != sb.predicate or sa.positive == sb.positive or names_clash(sa.names, sb.names):
                continue
            if (sa.topic & sb.exceptions) or (sb.topic & sa.exceptions):
                continue  # a rule and its stated exception
            shared = sa.topic & sb.topic
            needed = PREDICATES[sa.predicate][2]
            if len(shared) < needed or overlap(set(sa.topic), set(sb.topic)) < 0.3:
                continue
            score = (len(shared), overlap(set(sa.topic), set(sb.topic)))
            if best is None or score > best[0]:
                pos, neg = (sa, sb) if sa.positive else (sb, sa)
                what = f"{pos.ref} says {sa.predicate} applies, {neg.ref} says it does not"
                best = (score, sa, sb, what)
    return None if best is None else best[1:]
