"""agents.claims.article_passes: passes over whole articles beyond the aligned claim pairs.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import datetime as dt

from agents.claims.article_passes import NAMED_CONTACT_CONFIDENCE, transposed_contact
from agents.types import ArticleText

from .support import claim as _claim
from .support import found, pair


def test_two_numbers_for_one_named_place_conflict_however_differently_worded(vectors):
    # Three articles, so that the place's name is the knowledge base's own, not the business's (named on most pages).
    unrelated = ArticleText(ref="kb-3", title="Gift cards", body="Gift cards are sold in any amount from $10.",
                            updated_at=dt.date(2026, 2, 1))
    call = ("Prescriptions are ready two hours after you order them. If one is missing, the team at Elm Yard will chase it "
            "for you: ring 0161 496 0720.")
    listed = "Opening times and numbers.\n\nElm Yard: 0161 496 0755"
    same = [*pair(call, listed, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    # Found by the pass for numbers of one named place (its confidence), not by claims that align.
    assert [(f.refs, f.type, f.confidence) for f in found(same, vectors)] == [
        (("kb-1", "kb-2"), "contact", NAMED_CONTACT_CONFIDENCE)]
    other_line = "Opening times and numbers.\n\nElm Yard travel clinic: 0161 496 0755"
    another_purpose = [*pair(call, other_line, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(another_purpose, vectors) == []
    other_place = "Opening times and numbers.\n\nBirch Lane: 0161 496 0755"
    different = [*pair(call, other_place, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(different, vectors) == []
    both_numbers = "Opening times and numbers.\n\nElm Yard: 0161 496 0755 or 0161 496 0720"
    agreeing = [*pair(call, both_numbers, first_title="Repeat prescriptions", second_title="Contact us"), unrelated]
    assert found(agreeing, vectors) == []


def test_a_phone_number_with_two_neighbouring_digits_swapped_is_a_mistyped_copy():
    desk = _claim("Call the booking desk on 0117 496 0382.")[0]
    swapped = _claim("Bookings: 0117 496 0328.")[0]
    far_apart = _claim("Bookings: 0117 496 0283.")[0]  # the same digits, but not one swap of neighbours
    hit = transposed_contact([desk], [swapped])
    assert (hit.type, hit.said_a, hit.said_b) == ("contact", "0117 496 0382", "0117 496 0328")
    assert transposed_contact([desk], [far_apart]) is None
    assert transposed_contact([desk], [desk]) is None  # the same number agrees
