"""A pass over two whole articles, beyond the aligned claim pairs: a phone number with two digits swapped."""
from __future__ import annotations

from .analysis import ClaimFacts
from .contradiction import Contradiction
from .values import PHONE


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
