"""agents.claims.stance: polarity, modality, what a denial denies, and channels affirmed or denied.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import pytest

from agents.claims.stance import (
    channel_stances,
    channels,
    denied_of,
    denied_words,
    is_negative,
    modality,
    strip_negation,
)


def test_a_denial_inside_a_condition_is_not_what_the_claim_denies():

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

    assert channel_stances("Bring it to the front desk, not the drop box.") == (frozenset({"in_person"}), frozenset())
    # "not just" adds to the clause before it: both channels are affirmed.
    assert channel_stances("You can renew at the front desk, not just online.") == (frozenset({"in_person", "web"}), frozenset())


@pytest.mark.parametrize("text, expected", [
    ("You must show your membership card.", "required"),
    ("Booking a lane is optional.", "optional"),
    ("You don't need to book a lane.", "optional"),
    ("You must not book more than two lanes.", ""),  # a denial, not a requirement
    ("Lanes are by the east door.", ""),
])
def test_modality(text, expected):
    assert modality(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Book online or call us on the hotline.", {"web", "phone"}),
    ("Drop it at the front desk.", {"in_person"}),
    ("Post it to us, or send it by email.", {"post", "email"}),
    ("Lanes are by the east door.", set()),
])
def test_channels_name_where_or_how_something_is_done(text, expected):
    assert channels(text) == frozenset(expected)


def test_a_denial_counts_once_per_clause_and_two_cancel_out():
    assert is_negative("You cannot enter with a wristband.")
    assert not is_negative("You cannot enter without a wristband.")
    assert is_negative("Lanes are free on Mondays; shoes are not included.")  # one denying clause is enough


def test_without_its_denials_a_claim_reads_as_what_it_is_about():
    assert strip_negation("Deposits are non-refundable.") == "Deposits are refundable."
    assert strip_negation("You don't need to book a lane.") == "You book a lane."


def test_a_passive_denial_is_said_of_the_noun_phrase_before_it():
    assert denied_of("Outside drinks are not allowed in the hall.") == {"outside", "drinks"}
    assert denied_of("We don't serve drinks in the hall.") == frozenset()  # active: nothing it is said of
