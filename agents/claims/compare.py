"""Comparing two aligned claims: first what settles the pair outright (a name swapped in a copied sentence, a
template line on each product's own page, one thing kept in two named places, scopes that differ), then every
rule family in FAMILIES on the pair, each in its own module (value_rules, denial_rules, places); the
strongest finding, damped by exceptions and uneven scopes, is the pair's."""
from __future__ import annotations

from collections.abc import Callable

from .analysis import ClaimFacts
from .contradiction import AlignedPair, Contradiction, Finding
from .denial_rules import (
    crossed_channel_finding,
    denial_finding,
)
from .near_copy import NAME_SWAP_CONFIDENCE, near_copy_difference, own_page_names, template_siblings
from .places import (
    PLACE_STRENGTH,
    RESTRICTION_STRENGTH,
    two_places,
    widened_channels,
)
from .scope import Scope, pages_named_apart, scopes_differ, scopes_uneven
from .subject import Relation, relation, statement_subject
from .value_rules import (
    TAX_UNSAID_DAMPING,
    value_finding,
)


def _widened_finding(p: AlignedPair) -> Finding | None:
    """"Only at the office" against "by video or at either office"."""
    widened = widened_channels(p.a, p.b, similarity=p.similarity)
    return None if widened is None or p.statements_apart else ("procedure", RESTRICTION_STRENGTH, *widened)


# The rule families read on every aligned claim pair, by name; the strongest finding is the pair's.
FAMILIES: tuple[tuple[str, Callable[[AlignedPair], Finding | None]], ...] = (
    ("values", value_finding),
    ("denial", denial_finding),
    ("crossed channel", crossed_channel_finding),
    ("widened channels", _widened_finding),
)


def compare_claims(a: ClaimFacts, b: ClaimFacts, *, similarity: float, scope_a: Scope, scope_b: Scope) -> Contradiction | None:
    near_copy = near_copy_difference(a, b)
    if near_copy is not None and near_copy[3]:
        if own_page_names(a, b, near_copy):
            return None  # own_page_siblings
        # The same sentence with only a name swapped: the name is what the copies disagree on, not a scope.
        return Contradiction(near_copy[0], NAME_SWAP_CONFIDENCE, near_copy[1], near_copy[2], a, b)
    if template_siblings(a, b):
        return None
    places = two_places(a, b, similarity=similarity, scope_a=scope_a, scope_b=scope_b)
    if places is not None:  # one thing kept in two named places: the names are what differs, not a scope
        return Contradiction("procedure", PLACE_STRENGTH, *places, a, b)
    if pages_named_apart(scope_a, scope_b, a.claim.with_heading, b.claim.with_heading) or scopes_differ(scope_a, scope_b):
        return None
    damping = 1.0
    if scope_a.has_exception or scope_b.has_exception:
        damping *= 0.8
    if scopes_uneven(scope_a, scope_b):
        damping *= 0.85
    if scope_a.tax != scope_b.tax and not (scope_a.tax_inherited or scope_b.tax_inherited):
        damping *= TAX_UNSAID_DAMPING
    pair = AlignedPair(
        a=a, b=b, similarity=similarity, scope_a=scope_a, scope_b=scope_b,
        overlap=len(a.content & b.content) / max(1, len(a.content | b.content)),
        statements_apart=relation(statement_subject(a.claim.text), statement_subject(b.claim.text)) is Relation.DIFFERENT,
        near_copy=near_copy)
    found = []
    for _, family in FAMILIES:
        hit = family(pair)
        if hit is not None:
            ctype, strength, said_a, said_b = hit
            found.append(Contradiction(ctype, damping * strength, said_a, said_b, a, b))
    return max(found, key=lambda c: c.confidence, default=None)
