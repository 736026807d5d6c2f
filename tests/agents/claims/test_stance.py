"""agents.claims.stance: polarity, modality, what a denial denies, and channels affirmed or denied.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import pytest

from agents.claims.stance import channel_stances, channels, denied_of, denied_words, is_negative, modality, strip_negation


def test_a_denial_inside_a_condition_is_not_what_the_claim_denies():
    from agents.claims.stance import denied_words

    assert "bring" in denied_words("Riders cannot bring scooters on board.")
    assert denied_words("Riders who cannot show a pass pay the full fare.") == frozenset()
    assert denied_words("If you do not cancel in time, the deposit is kept.") == frozenset()


def test_what_a_denial_denies_first_is_its_verb_past_modals():
    from agents.claims.analysis import PREDICATE_FILLER, analyse_text
    from agents.claims.stance import denied_predicates

    assert denied_predicates("We don't offer walk-in repairs on watches.", PREDICATE_FILLER) == {"offer"}
    assert denied_predicates("You don't need to hand back your permit.", PREDICATE_FILLER) == {"hand"}
    assert denied_predicates("Vouchers cannot be exchanged; they are non-transferable.", PREDICATE_FILLER) == {
        "exchanged", "transferable"}
    (facts,) = analyse_text("Help", "We don't offer walk-in repairs on watches.", 2026)
    assert facts.denied_heads == {"offer"} and {"repair", "watch"} & facts.denied


def test_a_no_that_makes_a_compound_noun_denies_nothing():
    from agents.claims.stance import is_negative

    assert not is_negative("We charge the full lesson fee for no-shows.")
    assert is_negative("No pets are allowed in the cabins.")


def test_a_contrast_with_not_denies_only_what_follows_it():
    from agents.claims.stance import channel_stances

    assert channel_stances("Bring it to the front desk, not the drop box.") == (frozenset({"in_person"}), frozenset())
    # "not just" adds to the clause before it: both channels are affirmed.
    assert channel_stances("You can renew at the front desk, not just online.") == (frozenset({"in_person", "web"}), frozenset())
