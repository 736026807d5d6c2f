"""agents.claims.article_passes: passes over whole articles beyond the aligned claim pairs.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.article_passes import transposed_contact

from .support import claim as _claim


def test_a_phone_number_with_two_neighbouring_digits_swapped_is_a_mistyped_copy():
    desk = _claim("Call the booking desk on 0117 496 0382.")[0]
    swapped = _claim("Bookings: 0117 496 0328.")[0]
    far_apart = _claim("Bookings: 0117 496 0283.")[0]  # the same digits, but not one swap of neighbours
    hit = transposed_contact([desk], [swapped])
    assert (hit.type, hit.said_a, hit.said_b) == ("contact", "0117 496 0382", "0117 496 0328")
    assert transposed_contact([desk], [far_apart]) is None
    assert transposed_contact([desk], [desk]) is None  # the same number agrees
