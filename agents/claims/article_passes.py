"""Passes over two whole articles, beyond the aligned claim pairs: a phone number with two digits swapped, and
two numbers for one named place."""
from __future__ import annotations

from .analysis import ClaimFacts, content_stems
from .contradiction import Contradiction
from .scope import proper_names, scopes_differ
from .value_rules import own_head
from .values import (
    PHONE,
    Value,
    equal_values,
)


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


NAMED_CONTACT_CONFIDENCE = 0.6


def named_contacts(claims_a, claims_b, scopes_a, scopes_b, *, known_names: frozenset[str]) -> Contradiction | None:
    """Two phone numbers given for one named place or service, in claims worded too differently to align ("… ring
    Elm Yard on <number>" / "Elm Yard: <another number>"): each claim names the same names of the knowledge base's
    own (a branch, a service; not the business's name) and nothing else, the words next to each number name no
    other purpose ("Elm Yard travel clinic: <number>" is another line), neither claim gives the other's number, and
    their scopes do not differ. Not e-mail addresses: a business keeps one per purpose, often without saying which."""
    def phones(facts: ClaimFacts) -> list[Value]:
        return [v for v in facts.values if v.kind == PHONE]

    def names(facts: ClaimFacts) -> frozenset[str]:
        return frozenset(proper_names(facts.claim.text, first_words=True) & known_names)

    def purpose(facts: ClaimFacts, value: Value) -> frozenset[str]:
        return own_head(facts, value) - content_stems(" ".join(names(facts)))

    def named(claims) -> list[tuple[int, ClaimFacts, list[Value], frozenset[str]]]:
        return [(i, f, phones(f), names(f)) for i, f in enumerate(claims) if phones(f) and names(f)]

    named_b = named(claims_b)
    for i, a, phones_a, names_a in named(claims_a):
        for j, b, phones_b, names_b in named_b:
            if names_b != names_a or scopes_differ(scopes_a[i], scopes_b[j]):
                continue
            if any(equal_values(x, y) for x in phones_a for y in phones_b):
                continue  # one number both give: the other is another line, not a contradiction
            for x in phones_a:
                for y in phones_b:
                    if purpose(a, x) == purpose(b, y):
                        return Contradiction("contact", NAMED_CONTACT_CONFIDENCE, x.text, y.text, a, b)
    return None
