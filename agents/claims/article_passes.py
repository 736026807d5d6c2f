"""Passes over two whole articles, beyond the aligned claim pairs: a phone number with two digits swapped, and
prices of one named thing worded too differently to align (or set apart by their pages' headings)."""
from __future__ import annotations

from .analysis import ClaimFacts
from .contradiction import Contradiction
from .scope import scopes_differ, scopes_uneven
from .subject import Relation, phrase_stems, relation, statement_subject
from .value_rules import value_subject
from .values import MONEY, PHONE, Value, comparable, equal_values


def _one_transposition(x: str, y: str) -> bool:
    """Equal but for two neighbouring characters swapped (0147 / 0174): the typo of a careless copy."""
    if len(x) != len(y) or x == y:
        return False
    diff = [i for i in range(len(x)) if x[i] != y[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and x[diff[0]] == y[diff[1]] and x[diff[1]] == y[diff[0]]


def transposed_contact(claims_a: list[ClaimFacts], claims_b: list[ClaimFacts]) -> Contradiction | None:
    """A phone number in one article that is another article's number with two digits swapped: one of the
    two is a mistyped copy, wherever in the articles they stand."""
    for a in claims_a:
        for x in (v for v in a.values if v.kind == PHONE):
            for b in claims_b:
                for y in (v for v in b.values if v.kind == PHONE):
                    if _one_transposition(x.key[0], y.key[0]):
                        return Contradiction("contact", 0.85, x.text, y.text, a, b)
    return None


SUBJECT_PASS_MIN_SIMILARITY = 0.35  # claims this far apart in wording can still price one named thing
SUBJECT_PASS_MIN_SHARED = 2
SUBJECT_PASS_CONFIDENCE = 0.6


def _page_subject(facts: ClaimFacts, value: Value) -> frozenset[str]:
    """What a price is of; a bare noun ("the course") on a page titled after one thing is that thing."""
    subject = value_subject(facts, value) or frozenset()
    if facts.claim.label or len(subject) != 1:
        return subject  # a claim that names nothing ("that's €20 a day") is not the page's headline price
    title = facts.claim.context.split(" \u2014 ", 1)[0]
    if title.rstrip().endswith("?") or statement_subject(title) is not None:
        return subject  # a question or a sentence names no one thing
    return phrase_stems(title) or subject


def same_subject_prices(claims_a, claims_b, similarity, scopes_a, scopes_b) -> Contradiction | None:
    """Prices of one named thing in claims worded too differently to align ("| Evening class | $40 |" and "The
    course costs $35" on a page titled "Evening class"): same currency and period, the same subject of at least
    two words, scopes that do not differ."""
    def prices(facts: ClaimFacts) -> list[Value]:
        return [v for v in facts.values if v.kind == MONEY and v.key[0] != "*" and v.role == "amount"]

    priced_b = [(j, b, prices(b)) for j, b in enumerate(claims_b) if prices(b)]
    best = None
    for i, a in enumerate(claims_a):
        prices_a = prices(a)
        if not prices_a:
            continue
        for j, b, prices_b in priced_b:
            if similarity[i, j] < SUBJECT_PASS_MIN_SIMILARITY or scopes_differ(scopes_a[i], scopes_b[j]):
                continue
            for x in prices_a:
                for y in prices_b:
                    if not comparable(x, y) or equal_values(x, y) or any(z.kind == MONEY and equal_values(x, z) for z in b.values):
                        continue
                    subject_x, subject_y = _page_subject(a, x), _page_subject(b, y)
                    if len(subject_x & subject_y) < SUBJECT_PASS_MIN_SHARED or relation(subject_x, subject_y) is not Relation.SAME:
                        continue
                    damping = 0.85 if scopes_uneven(scopes_a[i], scopes_b[j]) else 1.0
                    found = Contradiction("price", SUBJECT_PASS_CONFIDENCE * damping, x.text, y.text, a, b)
                    if best is None or found.confidence > best.confidence:
                        best = found
    return best
