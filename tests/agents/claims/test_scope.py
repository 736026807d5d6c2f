"""agents.claims.scope: what a claim is scoped to (audience, days, tiers, names, years, tax) and when two
scopes set claims apart. Some cases go through the whole detector, where a heading or a title does the scoping.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import pytest

from .support import claim as _claim, found, pair


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
