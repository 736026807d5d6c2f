"""agents.claims.values: typed values convert across units and formats (parsed by maintained libraries)."""
from __future__ import annotations

import pytest

from agents.claims.values import AGE, CLOCK, DATE, MONEY, PHONE, QUANTITY, comparable, equal_values, extract_values


def only(text: str, kind: str):
    values = [v for v in extract_values(text, year=2026) if v.kind == kind]
    assert len(values) == 1, values
    return values[0]


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


def test_a_price_per_period_keeps_its_period_and_is_no_duration():
    values = extract_values("The plan is €30 a month.", year=2026)
    assert [(v.kind, v.key) for v in values] == [(MONEY, ("EUR", 30.0, "month"))]


def test_prices_per_different_periods_are_not_comparable():
    assert not comparable(only("€30 a month", MONEY), only("€30 a year", MONEY))


@pytest.mark.parametrize("text", ["New orders carry a one-off setup fee of €45.", "Connection: €45 one-off",
                                  "A one-time charge of 45 euros applies."])
def test_a_one_off_charge_is_no_price_per_month(text):
    fee = only(text, MONEY)
    assert fee.key == ("EUR", 45.0, "once")
    assert not comparable(fee, only("€30 a month", MONEY), strict_period=False)


def test_a_spending_threshold_is_a_condition_not_a_price():
    money = [v for v in extract_values("Delivery is free on orders over £40.", year=2026) if v.kind == MONEY]
    assert {v.role for v in money if v.key[1] == 40.0} == {"threshold"}


@pytest.mark.parametrize("text, age", [("Riders must be aged 14 or over.", 14.0), ("This class is 18+ only.", 18.0),
                                       ("Minimum age 21.", 21.0),
                                       ("Volunteers aged 60 or over with income under £900 travel free.", 60.0)])
def test_ages(text, age):
    assert only(text, AGE).key == (age, "min")


def test_free_is_a_price_of_zero():
    assert only("Parking is free for guests.", MONEY).key[1] == 0.0


def test_a_seasons_second_year_is_no_count():
    values = extract_values("The winter timetable 2026/27 starts on 9 November 2026.", year=2026)
    assert [(v.kind, v.text) for v in values] == [("date", "9 November 2026")]
    assert [v.kind for v in extract_values("Rooms sleep 2-4 guests.", year=2026)] == ["count"]


def test_a_percentage_quoted_as_a_contrast_is_of_the_same_kind():
    from agents.claims.values import extract_values

    values = extract_values("Members take 25% off every class instead of the usual 15%.", year=2026)
    assert [(v.text, v.unit) for v in values] == [("25%", "discount"), ("15%", "discount")]


def test_how_often_is_counted_in_occasions_per_period():
    from agents.claims.values import comparable, equal_values, extract_values

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


def test_a_compound_that_means_without_something_is_no_price():
    from agents.claims.values import extract_values

    assert extract_values("Every lunch on the menu is gluten-free.", year=2026) == []
    assert [v.key for v in extract_values("Transfers between accounts are fee-free.", year=2026)] == [("*", 0.0, "")]


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


def test_a_range_of_hours_in_words_gives_both_ends():
    values = [v.key for v in extract_values("Calls are taken from 7 to 10 in the evening.", year=2026) if v.kind == CLOCK]
    assert values == [(19 * 60,), (22 * 60,)]


@pytest.mark.parametrize("text, key", [
    ("Toddlers up to and including the age of 2 ride free.", (3.0, "max")),  # the same limit as "under 3"
    ("Toddlers under 3 ride free.", (3.0, "max")),
    ("Pupils ride free until their eleventh birthday.", (11.0, "max")),
    ("Entry from the age of 16.", (16.0, "min")),
])
def test_age_limits_said_in_other_ways(text, key):
    assert only(text, AGE).key == key


def test_an_age_range_gives_both_ends_comparable_only_with_another_range():
    ages = sorted(v.key for v in extract_values("The camp is for ages 7 to 11.", year=2026) if v.kind == AGE)
    assert ages == [(7.0, "range min"), (12.0, "range max")]
    other = [v for v in extract_values("The camp is for ages 8 to 11.", year=2026) if v.kind == AGE]
    first = [v for v in extract_values("The camp is for ages 7 to 11.", year=2026) if v.kind == AGE]
    assert comparable(first[0], other[0]) and not equal_values(first[0], other[0])
    assert not comparable(first[1], only("Children under 12 go free.", AGE))


def test_a_figure_before_of_is_no_count():
    assert [v for v in extract_values("Park on level 2 of the garage.", year=2026) if v.kind == "count"] == []


@pytest.mark.parametrize("text", ["A technician fits it: one of our engineers calls the day before.",
                                  "Deposit (one-off): £120", "One of the managers will call you back."])
def test_one_picking_a_member_or_naming_a_kind_is_no_count(text):
    assert [v for v in extract_values(text, year=2026) if v.kind == "count"] == []


def test_a_number_word_before_of_still_counts():
    count = only("Up to three of your children swim free.", "count")
    assert count.key[1] == 3.0


@pytest.mark.parametrize("text, amount, currency", [("50p per item", 0.5, "GBP"), ("20 pence a sheet", 0.2, "GBP"),
                                                    ("75 cents per page", 0.75, "*"), ("99\u00a2 each", 0.99, "*")])
def test_prices_in_a_minor_unit(text, amount, currency):
    [value] = extract_values(text, year=2026)
    assert (value.kind, value.key[0], value.key[1]) == (MONEY, currency, amount)


@pytest.mark.parametrize("text", ["1080p video", "Room 5c is upstairs", "Open until 5 p.m."])
def test_a_resolution_a_label_or_a_time_is_no_minor_unit_price(text):
    assert [v for v in extract_values(text, year=2026) if v.kind == MONEY] == []


@pytest.mark.parametrize("text, age", [("You can join if you are over 65 or have a long-term illness.", (65.0, "min")),
                                       ("Customers who are over 70 get a free check.", (70.0, "min")),
                                       ("If you're under 18, a parent must sign.", (18.0, "max"))])
def test_an_age_said_of_you_or_of_who_is_admitted(text, age):
    assert only(text, AGE).key == age


def test_a_time_after_are_over_is_no_age():
    assert [v for v in extract_values("If you are over 30 minutes late we cancel.", year=2026) if v.kind == AGE] == []
