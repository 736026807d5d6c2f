"""agents.claims.scope: what a claim is scoped to (audience, days, tiers, names, years, tax) and when two
scopes set claims apart. Some cases go through the whole detector, where a heading or a title does the scoping.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import datetime as dt

import pytest

from agents.claims.scope import (
    PageScope,
    claim_scope,
    days_in,
    page_scope,
    proper_names,
    scopes_differ,
    scopes_uneven,
    tax_said,
    years_in,
)

from .support import NOW, found, pair
from .support import claim as _claim


def test_price_lists_of_two_seasons_do_not_conflict(vectors):
    articles = pair("| Pass | Price |\n|---|---|\n| Adult day pass | €61 |", "Adult day pass: €58.",
                    first_title="Pass prices, winter 2026/27", second_title="Pass prices 2025/26")
    assert found(articles, vectors) == []
    same_season = pair(articles[0].body, articles[1].body, first_title="Pass prices, winter 2026/27",
                       second_title="Pass prices for the 2026-27 season")
    assert [f.type for f in found(same_season, vectors)] == ["price"]


def test_a_heading_scopes_the_claims_under_it(vectors):
    articles = pair("Quarry Lane branch\nWe open at 08:00 on weekdays.\n\nAt Quarry Lane we open weekdays at 08:00.",
                    "Mill Cross branch\nWe open at 09:30 on weekdays.\n\nAt Mill Cross we open weekdays at 09:30.",
                    first_title="Quarry Lane branch", second_title="Mill Cross branch")
    assert found(articles, vectors) == []


def test_a_name_that_opens_a_claim_scopes_it_when_nothing_else_does(vectors):
    # The heading makes the first claim about one fare; the second claim's opening word names another.
    articles = pair("Cancellations made less than 24 hours before departure are not refunded.",
                    "Rover tickets can be cancelled for a full refund until 2 hours before departure. "
                    "We sell Thrift and Rover tickets online.",
                    first_title="Refunds on a Thrift ticket", second_title="Cancelling a booking")
    assert found(articles, vectors) == []
    unnamed = pair(articles[0].body, "Tickets can be cancelled for a full refund until 2 hours before departure.",
                   first_title="Refunds", second_title="Cancelling a booking")
    assert [f.refs for f in found(unnamed, vectors)] == [("kb-1", "kb-2")]


def test_a_table_cells_row_label_scopes_it_as_its_own_words(vectors):
    from agents.claims.scope import scopes_differ

    cell, cell_scope = _claim("| Pass | Entry times |\n|---|---|\n| Off-peak pass | weekdays 10:00-15:00 |", title="Passes")
    hours, hours_scope = _claim("Monday to Friday: 07:00-21:00", title="Opening hours")
    assert "off-peak" in cell_scope.tiers and scopes_differ(cell_scope, hours_scope)
    articles = pair("| Pass | Entry times |\n|---|---|\n| Off-peak pass | weekdays 10:00-15:00 |",
                    "Opening hours\nMonday to Friday: 07:00-21:00", first_title="Passes", second_title="Opening hours")
    assert found(articles, vectors) == []


def test_seven_days_before_something_is_no_schedule_of_every_day():
    from agents.claims.scope import days_in

    assert days_in("Tickets go on sale seven days before the show.") == frozenset()
    assert len(days_in("We are open seven days a week.")) == 7


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


@pytest.mark.parametrize("text, expected", [
    ("Mon-Fri 09:00-17:00", {"monday", "tuesday", "wednesday", "thursday", "friday"}),
    ("Fri to Mon: late opening", {"friday", "saturday", "sunday", "monday"}),  # a range that wraps the week
    ("Closed at weekends.", {"saturday", "sunday"}),
    ("On Thursdays the pool opens late.", {"thursday"}),
    ("The pool opens late.", set()),
])
def test_days_in(text, expected):
    assert days_in(text) == frozenset(expected)


@pytest.mark.parametrize("text, expected", [
    ("Fares 2027/28", {"2027/28"}),
    ("Timetable 2029", {"2029"}),
    ("Open since 1 March 2026.", set()),  # a full date is a day, not a year a claim is said for
    ("Lockers cost £2025 a year.", set()),  # an amount is no year
])
def test_years_in(text, expected):
    assert years_in(text) == frozenset(expected)


@pytest.mark.parametrize("text, expected", [("£40 including VAT", {"included"}), ("£40 plus VAT", {"excluded"}),
                                            ("£40 ex. tax", {"excluded"}), ("£40", set())])
def test_tax_said(text, expected):
    assert tax_said(text) == frozenset(expected)


def test_a_page_says_once_for_all_its_claims_what_tax_and_years_it_is_for():
    validity = [dt.date(2027, 4, 1), dt.date(2028, 3, 31)]
    page = page_scope([("All prices on this page include VAT.", []),
                       ("Valid from 1 April 2027 to 31 March 2028.", validity), ("Lockers cost £3.", [])])
    assert page == PageScope(tax=frozenset({"included"}), years=frozenset({"2027/28"}))
    # Two things said of tax leave it unsaid; a rule valid for a while dates no page.
    mixed = page_scope([("All prices on this page include VAT.", []), ("Our trade prices are plus VAT.", []),
                        ("Vouchers are valid for 12 months from 1 April 2027.", validity[:1])])
    assert mixed == PageScope()


def test_proper_names_are_capitalised_words_inside_a_sentence_not_days_or_months():
    assert proper_names("Bikes are hired at Wrenfield and at Oakbury on Sundays in May.") == {"Wrenfield", "Oakbury"}
    assert proper_names("Wrenfield hires bikes.") == set()  # the capital that starts a sentence
    assert proper_names("Wrenfield branch", first_words=True) == {"Wrenfield"}


def scope_of(text):
    return _claim(text)[1]


def test_scopes_differ_by_audience_on_one_axis_and_by_past_or_announced():
    adults, children, everyone = (scope_of(t) for t in ("Adults pay £9 for a swim.", "Children pay £4 for a swim.",
                                                        "A swim costs £9."))
    members = scope_of("Members pay £7 for a swim.")
    assert scopes_differ(adults, children)
    assert not scopes_differ(adults, members)  # age and membership say nothing of each other
    assert not scopes_differ(adults, everyone) and scopes_uneven(adults, everyone)  # a special case, not apart
    assert not scopes_uneven(adults, children)
    assert scopes_differ(scope_of("Until 2024 a swim cost £7."), everyone)
    announced = scope_of("From 1 May 2027 a swim will cost £10.")
    assert announced.future_from == dt.date(2027, 5, 1) and scopes_differ(announced, everyone)


def test_a_claims_scope_takes_what_it_leaves_open_from_its_heading():
    saturday = claim_scope("We open at 10:00.", "Opening hours \u2014 Saturday", known_names=frozenset(), dates=[],
                           context_dates=[], calendar_days=[], now=NOW)
    own_day = claim_scope("On Sunday we open at 12:00.", "Opening hours \u2014 Saturday", known_names=frozenset(),
                          dates=[], context_dates=[], calendar_days=[], now=NOW)
    assert saturday.days == {"saturday"} and own_day.days == {"sunday"}
    named = claim_scope("Bikes are hired at Wrenfield.", "Hire", known_names=frozenset({"Wrenfield"}), dates=[],
                        context_dates=[], calendar_days=[], now=NOW)
    unknown = claim_scope("Bikes are hired at Wrenfield.", "Hire", known_names=frozenset(), dates=[],
                          context_dates=[], calendar_days=[], now=NOW)
    assert named.names == {"Wrenfield"} and unknown.names == frozenset()  # only the knowledge base's own names scope


def _page(ref: str, title: str, body: str):
    import datetime as dt

    from agents.types import ArticleText

    return ArticleText(ref=ref, title=title, body=body, updated_at=dt.date(2026, 3, 1))


def test_two_pages_headed_by_different_named_things_do_not_conflict_though_they_share_a_name(vectors):
    from .support import NOW, detect_claim_conflicts

    # Two crossings from one port: the headings share the stop's name and each names its own end, which the other
    # page never mentions. (A third page keeps the shared name from reading as the business's own.)
    lines = [
        _page("kb-1", "Quernby – Oakhaven", "The crossing from Quernby to Oakhaven takes 40 minutes on our fast boat "
                                              "Oakhaven Arrow."),
        _page("kb-2", "Quernby – Stoneleigh", "The crossing from Quernby lasts 2 hours 10 minutes on the Stoneleigh "
                                              "Rambler, which carries cars."),
        _page("kb-3", "Paying on board", "Tickets can be bought from the crew with a bank card."),
    ]
    assert detect_claim_conflicts(articles=lines, now=NOW, vectors=vectors).findings == []


def test_pages_named_apart_needs_a_name_of_its_own_on_each_side_that_the_other_never_mentions():
    from agents.claims.scope import Scope, pages_named_apart

    def scope(*names):
        return Scope(audience=frozenset(), days=frozenset(), periods=frozenset(), tiers=frozenset(), names=frozenset(),
                     past=False, future_from=None, has_exception=False, restricts=False, heading_names=frozenset(names))

    oakhaven, stoneleigh = scope("Quernby", "Oakhaven"), scope("Quernby", "Stoneleigh")
    assert pages_named_apart(oakhaven, stoneleigh, "Quernby – Oakhaven: 40 minutes", "Quernby – Stoneleigh: 2 hours")
    # The other claim mentions the name: one thing, said on two pages.
    assert not pages_named_apart(oakhaven, stoneleigh, "Quernby – Oakhaven: 40 minutes",
                                 "Quernby – Stoneleigh: 2 hours, or 50 minutes to Oakhaven")
    # Only one heading names a thing of its own: a page about it against a general page.
    assert not pages_named_apart(oakhaven, scope("Quernby"), "Quernby – Oakhaven: 40 minutes", "Quernby: 1 hour")
