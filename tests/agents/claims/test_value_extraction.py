"""agents.claims.value_extraction: typed values read out of text by maintained parsers (money, ages, counts,
times in words, minor units)."""
from __future__ import annotations

import pytest

from agents.claims import value_extraction
from agents.claims.value_extraction import extract_values
from agents.claims.values import AGE, CLOCK, MONEY, PHONE

from .support import only


def test_a_price_per_period_keeps_its_period_and_is_no_duration():
    values = extract_values("The plan is €30 a month.", year=2026)
    assert [(v.kind, v.key) for v in values] == [(MONEY, ("EUR", 30.0, "month"))]


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
    from agents.claims.value_extraction import extract_values

    values = extract_values("Members take 25% off every class instead of the usual 15%.", year=2026)
    assert [(v.text, v.unit) for v in values] == [("25%", "discount"), ("15%", "discount")]


def test_a_compound_that_means_without_something_is_no_price():
    from agents.claims.value_extraction import extract_values

    assert extract_values("Every lunch on the menu is gluten-free.", year=2026) == []
    assert [v.key for v in extract_values("Transfers between accounts are fee-free.", year=2026)] == [("*", 0.0, "")]


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


@pytest.mark.parametrize("text, said, seconds", [
    ("The ferry to the lighthouse takes one and a half hours.", "one and a half hours", 5400),
    ("The guided walk lasts 1 hour 35 minutes.", "1 hour 35 minutes", 5700),
    ("The kayak tour runs just over an hour and a half.", "an hour and a half", 5400),
    ("A full service takes 2 hours and 10 minutes.", "2 hours and 10 minutes", 7800),
])
def test_a_length_of_time_said_in_parts_is_one_value(text, said, seconds):
    [duration] = [v for v in extract_values(text, year=2026) if v.unit == "[time]"]
    assert (duration.text, duration.key[1]) == (said, seconds)


def test_two_lengths_of_time_apart_by_a_comma_stay_two():
    text = "Shuttles run every 2 hours, 30 minutes after the first tram."
    assert [v.key[1] for v in extract_values(text, year=2026) if v.unit == "[time]"] == [7200, 1800]


def test_a_hedged_length_of_time_is_an_estimate_equal_within_a_tenth():
    from agents.claims.values import equal_values

    def duration(text):
        [value] = [v for v in extract_values(text, year=2026) if v.unit == "[time]"]
        return value

    estimate = duration("The glacier hike takes just over an hour and a half.")
    assert estimate.approximate and not duration("The glacier hike takes 95 minutes.").approximate
    assert equal_values(estimate, duration("The glacier hike takes 1 hour 35 minutes."))
    assert not equal_values(estimate, duration("The glacier hike takes 2 hours."))
    # exact on both sides: 90 against 95 minutes differ
    assert not equal_values(duration("It takes 90 minutes."), duration("It takes 95 minutes."))


@pytest.mark.parametrize("text, national", [
    ("Ring the depot on +44 (0)20 7946 0018 before noon.", "2079460018"),
    ("Bookings: 0161-496-0772.", "1614960772"),
    ("Call +44 117 496 0283 ext. 214 for the workshop.", "1174960283"),
    ("Our desk (555) 014-2231 x12 answers until 6 pm.", "5550142231"),
    # UK area codes starting 011 are not North America's international prefix 011 ...
    ("Call 0117 496 0283 ext. 214 for the workshop.", "1174960283"),
    ("The studio is on 0114 496 0283.", "1144960283"),
    # ... which, followed by a country code and a whole number, still is one
    ("From the US dial 011 44 117 496 0283.", "1174960283"),
    ("From abroad dial 00 44 161 496 0772.", "1614960772"),
    # fictional ranges (invalid to the parser) written after a prefix still read as with "+"
    ("From the US dial 011 44 7700 900123.", "7700900123"),
    ("From the US dial 011 44 7700 900123 ext. 21.", "7700900123"),
    ("From Europe dial 00 1 555 014 2231.", "5550142231"),
    ("From Australia dial 0011 1 555 014 2231 ext. 21.", "5550142231"),
])
def test_phone_numbers_are_read_in_every_common_layout(text, national):
    phones = [v for v in extract_values(text, year=2026) if v.kind == PHONE]
    assert [v.key[0] for v in phones] == [national]


def test_short_numbers_with_many_digits_between_them_are_not_given_to_the_phone_matchers(monkeypatch):
    # Seven digits in all, but no run of them long enough to dial and no extension label: the (slow) matchers
    # could find nothing, so they are not run.
    def no_matcher(*args, **kwargs):
        raise AssertionError("the phone matchers ran")

    monkeypatch.setattr(value_extraction.phonenumbers, "PhoneNumberMatcher", no_matcher)
    values = extract_values("From 1 May 2026 a locker costs €12 for 30 days.", year=2026)
    assert [v.kind for v in values if v.kind == PHONE] == [] and values
    with pytest.raises(AssertionError, match="matchers ran"):
        extract_values("Call 0117 496 0283 after 9 am.", year=2026)
