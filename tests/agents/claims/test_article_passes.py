"""agents.claims.article_passes: passes over whole articles beyond the aligned claim pairs.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.article_passes import transposed_contact

from .support import claim as _claim
from .support import found, pair


def test_prices_of_one_named_thing_compare_however_differently_worded(vectors):
    table = "| Course | Lessons per week | Price per week |\n|---|---|---|\n| Evening pottery | 3 | $40 |\n| Life drawing | 2 | $30 |"
    page = ("Shape clay on the wheel with a potter who has taught for twenty years; beginners welcome. "
            "The course costs $35 per week, and you can stay for anything from 1 to 10 weeks.")
    same = pair(table, page, first_title="Course fees 2026", second_title="Evening pottery")
    assert [f.type for f in found(same, vectors)] == ["price"]
    other = pair(table, page, first_title="Course fees 2026", second_title="Weekend ceramics")
    assert found(other, vectors) == []


def test_a_copied_price_sentence_under_two_differently_named_pages_still_conflicts(vectors):
    # The headings name different things ("Kiosk Fares", "Web Fares"), which sets the aligned claims
    # apart; the price of one named thing is compared across the whole articles all the same.
    copies = pair("A return crossing to Skellin Isle costs £14.", "A return crossing to Skellin Isle costs £17.",
                  first_title="Kiosk Fares", second_title="Web Fares")
    assert [f.type for f in found(copies, vectors)] == ["price"]


def test_a_phone_number_with_two_neighbouring_digits_swapped_is_a_mistyped_copy():
    desk = _claim("Call the booking desk on 0117 496 0382.")[0]
    swapped = _claim("Bookings: 0117 496 0328.")[0]
    far_apart = _claim("Bookings: 0117 496 0283.")[0]  # the same digits, but not one swap of neighbours
    hit = transposed_contact([desk], [swapped])
    assert (hit.type, hit.said_a, hit.said_b) == ("contact", "0117 496 0382", "0117 496 0328")
    assert transposed_contact([desk], [far_apart]) is None
    assert transposed_contact([desk], [desk]) is None  # the same number agrees
