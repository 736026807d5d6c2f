"""agents.claims.values: values of one kind are equal across units and formats, and comparable only when they
measure the same thing."""
from __future__ import annotations

import pytest

from agents.claims.value_extraction import extract_values
from agents.claims.values import AGE, CLOCK, DATE, MONEY, PHONE, QUANTITY, comparable, equal_values

from .support import only


@pytest.mark.parametrize("first, second, kind", [
    ("Report it within 72 hours.", "Report it within 3 days.", QUANTITY),
    ("The loan lasts 14 days.", "The loan lasts 2 weeks.", QUANTITY),
    ("A locker costs 10.00 EUR.", "A locker costs €10.", MONEY),
    ("Doors open at 9 am.", "Doors open at 09:00.", CLOCK),
    ("Your plan includes 1 GB of storage.", "Your plan includes 1000 MB of storage.", QUANTITY),
    ("Ring +44 161 496 0275 for help.", "Ring 0161 496 0275 for help.", PHONE),
    ("The sale ends on 3 March 2026.", "The sale ends on March 3, 2026.", DATE),
])
def test_the_same_value_in_other_units_or_formats_is_equal(first, second, kind):
    a, b = only(first, kind), only(second, kind)
    assert comparable(a, b) and equal_values(a, b)


@pytest.mark.parametrize("first, second, kind", [
    ("Report it within 48 hours.", "Report it within 3 days.", QUANTITY),
    ("A locker costs €10.", "A locker costs €12.", MONEY),
    ("Doors open at 9 am.", "Doors open at 09:30.", CLOCK),
])
def test_different_values_are_not_equal(first, second, kind):
    a, b = only(first, kind), only(second, kind)
    assert comparable(a, b) and not equal_values(a, b)


def test_prices_per_different_periods_are_not_comparable():
    assert not comparable(only("€30 a month", MONEY), only("€30 a year", MONEY))


@pytest.mark.parametrize("text", ["New orders carry a one-off setup fee of €45.", "Connection: €45 one-off",
                                  "A one-time charge of 45 euros applies."])
def test_a_one_off_charge_is_no_price_per_month(text):
    fee = only(text, MONEY)
    assert fee.key == ("EUR", 45.0, "once")
    assert not comparable(fee, only("€30 a month", MONEY), strict_period=False)


def test_how_often_is_counted_in_occasions_per_period():
    from agents.claims.values import comparable, equal_values

    def only(text):
        values = extract_values(text, year=2026)
        assert len(values) == 1, values
        return values[0]

    twice = only("You may bring a friend twice a month.")
    visits = only("You may bring a friend on up to 4 visits per calendar month.")
    two_visits = only("You may bring a friend on 2 visits a month.")
    weekly = only("You may bring a friend twice a week.")
    assert twice.key == ("occasion", 2.0, "month") and visits.key == ("occasion", 4.0, "month")
    assert comparable(twice, visits) and not equal_values(twice, visits) and equal_values(twice, two_visits)
    assert not comparable(twice, weekly)


@pytest.mark.parametrize("first, second, same", [
    ("Each tenant gets one parking permit.", "Each tenant gets two parking permits.", False),
    ("Four of our volunteers lead the walk.", "Four of the volunteers lead the walk.", True),
    ("Up to six of your guests may join.", "Up to five of your guests may join.", False),
])
def test_counts_said_in_number_words(first, second, same):
    a, b = only(first, "count"), only(second, "count")
    assert comparable(a, b) and equal_values(a, b) is same


@pytest.mark.parametrize("words, figures", [
    ("The desk closes at half past five.", "The desk closes at 17:30."),
    ("The desk opens at quarter to eight in the morning.", "The desk opens at 7.45 am."),
    ("The gates shut at eleven o'clock at night.", "The gates shut at 11 pm."),
])
def test_times_said_in_words(words, figures):
    a, b = only(words, CLOCK), only(figures, CLOCK)
    assert equal_values(a, b)


def test_an_age_range_gives_both_ends_comparable_only_with_another_range():
    ages = sorted(v.key for v in extract_values("The camp is for ages 7 to 11.", year=2026) if v.kind == AGE)
    assert ages == [(7.0, "range min"), (12.0, "range max")]
    other = [v for v in extract_values("The camp is for ages 8 to 11.", year=2026) if v.kind == AGE]
    first = [v for v in extract_values("The camp is for ages 7 to 11.", year=2026) if v.kind == AGE]
    assert comparable(first[0], other[0]) and not equal_values(first[0], other[0])
    assert not comparable(first[1], only("Children under 12 go free.", AGE))

