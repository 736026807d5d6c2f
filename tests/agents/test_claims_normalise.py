"""Format and unit normalisation used by the claim detector (pure, no DB)."""
import datetime as dt

from agents.claims.normalise import find_ages, find_dates, find_durations, find_money, find_phones, find_values
from agents.claims.schedule import clock_minutes, parse_schedule


def test_money_symbol_and_code_normalise_to_the_same_amount():
    [a] = find_money("Entry costs €10 per visit.")
    [b] = find_money("Entry costs 10.00 EUR per visit.")
    assert (a.amount, a.unit, a.extra["per"]) == (b.amount, b.unit, b.extra["per"]) == (10.0, "EUR", "visit")


def test_money_keeps_its_period_and_thousands():
    [m] = find_money("The studio rents for £1,250 a month.")
    assert m.amount == 1250.0 and m.unit == "GBP" and m.extra["per"] == "month"


def test_weeks_and_days_are_the_same_duration():
    [weeks] = find_durations("Returns are accepted within 2 weeks.")
    [days] = find_durations("Returns are accepted within 14 days.")
    assert weeks.amount == days.amount == (336.0, 336.0)


def test_approximate_duration_is_marked():
    [d] = find_durations("Delivery takes about 3 days.")
    assert d.approx and d.amount == (72.0, 72.0)


def test_adjectival_duration_is_a_qualifier_unless_it_names_a_warranty():
    assert find_durations("Book a 45-minute session.") == []
    [w] = find_durations("Every bike has a 3-year warranty.")
    assert w.amount == (3 * 8760.0, 3 * 8760.0)


def test_business_days_are_not_calendar_days():
    [d] = find_durations("Refunds take 5 business days.")
    assert d.unit == "workday"


def test_clock_formats():
    assert clock_minutes("9 am") == clock_minutes("09:00") == 540
    assert clock_minutes("noon") == 720
    assert clock_minutes("5:30 pm") == clock_minutes("17:30") == 1050


def test_weekly_schedule_with_closed_day():
    sched = parse_schedule("Monday to Friday 08:00-18:00, Saturday 10 am-4 pm, Sunday closed.")
    assert sched[0] == sched[4] == (480, 1080)
    assert sched[5] == (600, 960)
    assert sched[6] is None


def test_ages_min_and_max():
    [adult] = find_ages("Drivers must be aged 21 or over.")
    [child] = find_ages("Children under 5 travel free.")
    assert (adult.amount, adult.bound) == (21, "min")
    assert (child.amount, child.bound) == (5, "max")


def test_dates_in_both_orders_and_phone_digits():
    [a] = find_dates("The offer ends on 3 May 2027.", default_year=2027)
    [b] = find_dates("The offer ends on May 3, 2027.", default_year=2027)
    assert a.amount == b.amount == dt.date(2027, 5, 3)
    [p] = find_phones("Call 0203 555 7788 today.")
    assert p.amount == "2035557788"


def test_values_are_found_in_order_without_overlaps():
    kinds = [v.kind for v in find_values("Email hi@pinecrest.example or pay $20 by 1 June 2027.", default_year=2027)]
    assert kinds == ["email", "money", "date"]
