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


def test_seven_days_before_something_is_no_schedule_of_every_day():
    from agents.claims.scope import days_in

    assert days_in("Tickets go on sale seven days before the show.") == frozenset()
    assert len(days_in("We are open seven days a week.")) == 7


def test_a_percentage_quoted_as_a_contrast_is_of_the_same_kind():
    from agents.claims.values import extract_values

    values = extract_values("Members take 25% off every class instead of the usual 15%.", year=2026)
    assert [(v.text, v.unit) for v in values] == [("25%", "discount"), ("15%", "discount")]


@pytest.mark.parametrize("plural, singular", [("messages", "message"), ("changes", "change"), ("boxes", "box"),
                                              ("classes", "class"), ("lockers", "locker"), ("bikes", "bike")])
def test_a_plural_and_its_singular_share_a_stem(plural, singular):
    from agents.claims.analysis import stem

    assert stem(plural) == stem(singular)


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


@pytest.mark.parametrize("text, spelled", [
    ("Mon-Sat 09:00-19:00, Sun 12:00-16:00.", "Monday-Saturday 09:00-19:00, Sunday 12:00-16:00."),
    ("Open Tues to Sun: 9-5", "Open Tuesday to Sunday: 9-5"),
    ("Thurs 10:00-14:00", "Thursday 10:00-14:00"),
    # Words that begin like an abbreviation, and "Sat" / "Sun" outside a schedule, stay as written.
    ("Thus the Sun rose. Sat on the bench, Monty waited.", "Thus the Sun rose. Sat on the bench, Monty waited."),
])
def test_abbreviated_days_are_spelled_out_only_in_schedules(text, spelled):
    from agents.claims.scope import spell_out_days

    assert spell_out_days(text) == spelled


@pytest.mark.parametrize("text, age", [("You can join if you are over 65 or have a long-term illness.", (65.0, "min")),
                                       ("Customers who are over 70 get a free check.", (70.0, "min")),
                                       ("If you're under 18, a parent must sign.", (18.0, "max"))])
def test_an_age_said_of_you_or_of_who_is_admitted(text, age):
    assert only(text, AGE).key == age


def test_a_time_after_are_over_is_no_age():
    assert [v for v in extract_values("If you are over 30 minutes late we cancel.", year=2026) if v.kind == AGE] == []
