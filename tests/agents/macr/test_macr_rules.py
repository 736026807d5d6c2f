"""Executable MACR rules on hand-made articles (a fictional ferry company), including the careless-copy trap."""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from agents.macr.dates import effective_dates, end_dates, in_force_effective_date, parse_text_date, validity_periods
from agents.macr.rules import (
    EXPLICIT_EFFECTIVE_DATE_WINS,
    EXPLICIT_PAST_STATEMENT_LOSES,
    NEWER_CONTENT_DATE_WINS,
    NOT_YET_IN_FORCE_STATEMENT_LOSES,
    OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE,
    ConflictPair,
    Rule,
    executable_rules,
    is_official_document,
    older_side_still_in_its_period,
    possible_careless_copy,
)
from agents.types import ArticleText

NOW = dt.date(2026, 5, 10)


def article(ref, body, *, title="Ferry FAQ", updated=None, source="faq"):
    return ArticleText(ref=ref, title=title, body=body, updated_at=updated, source=source)


# The trap: the official fare table is in force from 1 April; a page edited later for another reason
# (a new timetable) still carries last year's fare.
FARE_PDF = article(
    "fares-pdf", "Adult single €29, child €14.", title="Fare Table (valid from 1 April 2026)",
    updated=dt.date(2026, 3, 15), source="pdf",
)
CARELESS_PAGE = article(
    "island-page", "Updated May 2026: new evening sailing at 21:00! An adult single costs €25.",
    title="Visiting the islands", updated=dt.date(2026, 5, 2), source="web",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("effective 1 January 2026", [dt.date(2026, 1, 1)]),
        ("Returns Policy (effective January 10, 2026)", [dt.date(2026, 1, 10)]),
        ("as of 1 October 2025, students", [dt.date(2025, 10, 1)]),
        ("New from January 2026: refunds", [dt.date(2026, 1, 1)]),
        ("we've had shorter hours since September 2025", [dt.date(2025, 9, 1)]),
        ("for all rentals starting on or after 1 March 2026", [dt.date(2026, 3, 1)]),
        ("valid from 2026-02-01", [dt.date(2026, 2, 1)]),
        ("Updated March 2026: new router", []),  # a bare update note is not an effective date
        ("the date has moved from 31 August 2026 to 30 September 2026", []),  # `from` names the old value
        ("open from 9 am to 7 pm", []),
        ("runs from 12:00 am ET on March 2, 2026", []),  # a time first: not a plain effective date
    ],
)
def test_effective_dates_need_an_explicit_marker(text, expected):
    assert effective_dates(text) == expected


def test_in_force_effective_date_ignores_future_dates_and_takes_the_most_recent():
    text = "Fares from 1 January 2026. New fares apply from 1 June 2026."
    assert in_force_effective_date(text, now=NOW) == dt.date(2026, 1, 1)
    assert in_force_effective_date(text, now=dt.date(2026, 6, 1)) == dt.date(2026, 6, 1)


def test_text_dates_and_end_dates():
    assert parse_text_date("Monday, April 6, 2026") == dt.date(2026, 4, 6)
    assert parse_text_date("February 2026", end_of_period=True) == dt.date(2026, 2, 28)
    assert parse_text_date("31 February 2026") is None
    assert end_dates("the old fare applied until 2024") == [dt.date(2024, 12, 31)]


def test_official_document_is_a_pdf_or_a_policy_or_terms_page():
    assert is_official_document(FARE_PDF)
    assert is_official_document(article("t", "x", title="Terms of carriage", source="web"))
    assert is_official_document(article("p", "x", title="Luggage policy", source="faq"))
    assert not is_official_document(CARELESS_PAGE)


TRAP_SNIPPETS = {"island-page": "An adult single costs €25.", "fares-pdf": "Adult single €29, child €14."}


def test_trap_official_pdf_with_effective_date_beats_newer_careless_copy():
    pair = ConflictPair(a=CARELESS_PAGE, b=FARE_PDF, type="price", snippets=TRAP_SNIPPETS)
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(pair, NOW)
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.resolve(pair, NOW) == "fares-pdf"
    # the date rules know the trap: a page edited weeks after the fare table took effect gets no verdict from them
    assert NEWER_CONTENT_DATE_WINS.resolve(pair, NOW) is None
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, NOW) is None
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.priority < EXPLICIT_EFFECTIVE_DATE_WINS.priority


def test_official_rule_does_not_apply_when_the_newer_page_states_its_own_effective_date():
    page = article("island-page", "From 1 May 2026 an adult single costs €31.", updated=dt.date(2026, 5, 2), source="web")
    pair = ConflictPair(a=page, b=FARE_PDF, type="price")
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(pair, NOW)
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, NOW) == "island-page"


def test_official_rule_needs_an_effective_date_in_force_and_a_newer_page():
    undated_pdf = article("guide-pdf", "Adult single €22.", title="Welcome guide", updated=dt.date(2024, 3, 1), source="pdf")
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(ConflictPair(a=CARELESS_PAGE, b=undated_pdf), NOW)
    future_pdf = article("future-pdf", "Adult single €33.", title="Fares (valid from 1 July 2026)",
                         updated=dt.date(2026, 4, 1), source="pdf")
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(ConflictPair(a=CARELESS_PAGE, b=future_pdf), NOW)
    older_page = article("old-page", "An adult single costs €25.", updated=dt.date(2025, 6, 1), source="web")
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(ConflictPair(a=older_page, b=FARE_PDF), NOW)


def test_official_rule_skips_a_document_whose_own_validity_has_ended():
    sale_terms = article("sale-pdf", "Sale prices apply from 1 April 2026 until 30 April 2026.",
                         title="Spring sale terms", updated=dt.date(2026, 3, 20), source="pdf")
    extension = article("sale-page", "Good news: the sale is extended to 17 May.", updated=dt.date(2026, 4, 29), source="web")
    pair = ConflictPair(a=sale_terms, b=extension, type="date")
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(pair, NOW)
    # ... while a past "until" before the effective date only describes the old state
    repriced = article("fares-pdf", "Adult €29 (was €25 until 31 March 2026).", title="Fare Table (valid from 1 April 2026)",
                       updated=dt.date(2026, 3, 15), source="pdf")
    pair = ConflictPair(a=CARELESS_PAGE, b=repriced, snippets=TRAP_SNIPPETS)
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.resolve(pair, NOW) == "fares-pdf"


def test_explicit_effective_date_beats_a_bare_newer_updated_date():
    # The policy was written in December, in force from 1 January; the FAQ was touched on 20 December.
    policy = article("policy", "As of 1 January 2026 luggage over 20 kg costs €10.", updated=dt.date(2025, 12, 15), source="faq")
    faq = article("faq", "Luggage over 20 kg costs €8.", updated=dt.date(2025, 12, 20), source="faq")
    pair = ConflictPair(a=faq, b=policy, type="price")
    assert EXPLICIT_EFFECTIVE_DATE_WINS.applies(pair, NOW)
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, NOW) == "policy"
    # five days between two page dates is no real date difference: the page-date rule keeps quiet
    assert NEWER_CONTENT_DATE_WINS.resolve(pair, NOW) is None


def test_explicit_effective_date_most_recent_in_force_wins():
    older = article("older", "Since March 2025 the office opens at 8.", updated=dt.date(2025, 3, 1))
    newer = article("newer", "From 1 February 2026 the office opens at 9.", updated=dt.date(2026, 1, 10))
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(ConflictPair(a=older, b=newer), NOW) == "newer"
    # on 15 January the newer page only announces its change: the dates cannot settle the pair
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(ConflictPair(a=older, b=newer), dt.date(2026, 1, 15)) is None


def test_a_page_edited_after_its_stated_date_holds_from_its_edit():
    # "since September 2025" on a page edited in February vouches for February too
    hours = article("hours", "Fridays 9-14 (since September 2025).", updated=dt.date(2026, 2, 3))
    other = article("other", "Fridays 9-17.", updated=dt.date(2025, 12, 1))
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(ConflictPair(a=hours, b=other), NOW) == "hours"


def test_a_change_announced_for_later_is_not_settled_by_dates():
    current = article("current", "From 1 February 2026 the office opens at 9.", updated=dt.date(2026, 1, 10))
    announced = article("announced", "From 1 September 2026 the office opens at 10.", updated=dt.date(2026, 4, 1))
    pair = ConflictPair(a=current, b=announced)
    # newer, but not in force: neither date rule names it the winner
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, NOW) is None
    assert not NEWER_CONTENT_DATE_WINS.applies(pair, NOW)
    # once the date has passed, the later stated date wins
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, dt.date(2026, 9, 2)) == "announced"
    # with the conflicting sentences known, the statement in force today wins
    snippets = {"current": "the office opens at 9", "announced": "From 1 September 2026 the office opens at 10."}
    with_snippets = ConflictPair(a=current, b=announced, snippets=snippets)
    assert NOT_YET_IN_FORCE_STATEMENT_LOSES.resolve(with_snippets, NOW) == "current"
    assert not NOT_YET_IN_FORCE_STATEMENT_LOSES.applies(with_snippets, dt.date(2026, 9, 2))


def test_a_founding_year_is_not_an_effective_date():
    assert effective_dates("Family-run since 1998, serving customers from 2020.") == []
    assert effective_dates("Effective 2026, the fare is €31.") == [dt.date(2026, 1, 1)]


def test_explicit_effective_date_does_not_apply_without_any_stated_date():
    pair = ConflictPair(a=article("x", "Open at 8.", updated=dt.date(2026, 1, 1)), b=article("y", "Open at 9.", updated=dt.date(2026, 2, 1)))
    assert not EXPLICIT_EFFECTIVE_DATE_WINS.applies(pair, NOW)
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, NOW) is None


def test_newer_content_date_wins_only_when_dates_differ():
    old = article("old", "Check-in closes 30 minutes before departure.", updated=dt.date(2024, 6, 1))
    new = article("new", "Check-in closes 45 minutes before departure.", updated=dt.date(2026, 2, 1))
    assert NEWER_CONTENT_DATE_WINS.resolve(ConflictPair(a=old, b=new), NOW) == "new"
    same_day = article("same", "Check-in closes 20 minutes before departure.", updated=dt.date(2026, 2, 1))
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=new, b=same_day), NOW)
    assert NEWER_CONTENT_DATE_WINS.resolve(ConflictPair(a=new, b=same_day), NOW) is None
    undated = article("undated", "Check-in closes 10 minutes before departure.")
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=new, b=undated), NOW)


def test_explicitly_past_statement_loses():
    a = article("history", "We used to sail to Kessel twice a day; now there are four sailings.", updated=dt.date(2026, 4, 1))
    b = article("timetable", "There are two sailings a day to Kessel.", updated=dt.date(2025, 1, 1))
    snippets = {"history": "We used to sail to Kessel twice a day", "timetable": "There are two sailings a day to Kessel."}
    pair = ConflictPair(a=a, b=b, type="quantity", snippets=snippets)
    assert EXPLICIT_PAST_STATEMENT_LOSES.applies(pair, NOW)
    assert EXPLICIT_PAST_STATEMENT_LOSES.resolve(pair, NOW) == "timetable"
    until = {"history": "Until 2024 the crossing took 50 minutes.", "timetable": "The crossing takes 40 minutes."}
    assert EXPLICIT_PAST_STATEMENT_LOSES.resolve(ConflictPair(a=a, b=b, snippets=until), NOW) == "timetable"
    future_until = {"history": "Until 31 December 2026 the crossing takes 50 minutes.", "timetable": "The crossing takes 40 minutes."}
    assert not EXPLICIT_PAST_STATEMENT_LOSES.applies(ConflictPair(a=a, b=b, snippets=future_until), NOW)


def test_explicitly_past_needs_both_snippets_and_exactly_one_past_side():
    a = article("a", "Previously the fare was €20.")
    b = article("b", "The fare is €25.")
    assert not EXPLICIT_PAST_STATEMENT_LOSES.applies(ConflictPair(a=a, b=b), NOW)
    both_past = {"a": "Previously the fare was €20.", "b": "We used to charge €22."}
    assert not EXPLICIT_PAST_STATEMENT_LOSES.applies(ConflictPair(a=a, b=b, snippets=both_past), NOW)


def test_templates_are_in_priority_order_and_textual_rules_never_apply_in_code():
    rules = executable_rules()
    assert [rule.priority for rule in rules] == sorted(rule.priority for rule in rules)
    assert rules[-1] is NEWER_CONTENT_DATE_WINS
    textual = Rule(id="t", type="price", condition="the page is a promotion", resolution="the price list wins",
                   origin="induced", kind="textual")
    assert not textual.applies(ConflictPair(a=CARELESS_PAGE, b=FARE_PDF, type="price"), NOW)
    with pytest.raises(ValueError):
        Rule(id="broken", type="*", condition="c", resolution="r")  # executable without code
    with pytest.raises(ValueError):
        Rule(id="bad-origin", type="*", condition="c", resolution="r", origin="guessed", kind="textual")


def test_rule_type_filter():
    price_only = Rule(id="p", type="price", condition="always", resolution="a wins", origin="manual",
                      condition_check=lambda pair, now: True, resolution_pick=lambda pair, now: pair.a.ref)
    assert price_only.resolve(ConflictPair(a=CARELESS_PAGE, b=FARE_PDF, type="price"), NOW) == "island-page"
    assert price_only.resolve(ConflictPair(a=CARELESS_PAGE, b=FARE_PDF, type="hours"), NOW) is None


# --- the older side says for which period it holds -------------------------------------------------------

# A fictional swimming pool: the season leaflet says which months it covers; a web page written later about
# lessons gives another price for a lane swim and no date of its own.
POOL_LEAFLET = article(
    "pool-leaflet", "Riverside Pool - summer season, 1 April 2026 to 30 September 2026\n\nLane swim: £4.80\nSauna: £6.00",
    title="Summer season leaflet", updated=dt.date(2026, 3, 20), source="pdf",
)
LESSONS_PAGE = article(
    "lessons-page", "Lessons for adults run on weekday evenings. A lane swim on your own costs £5.20.",
    title="Swimming lessons", updated=dt.date(2026, 6, 1), source="web",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("summer season, 1 April 2026 to 30 September 2026", [(dt.date(2026, 4, 1), dt.date(2026, 9, 30))]),
        ("open between 1 June 2026 and 31 August 2026", [(dt.date(2026, 6, 1), dt.date(2026, 8, 31))]),
        ("valid March 2026 - February 2027", [(dt.date(2026, 3, 1), dt.date(2027, 2, 28))]),
        ("prices from 2024 to 2026", []),  # bare years: too vague to be a period of validity
        ("open Monday to Friday, 9 to 5", []),
        ("30 September 2026 to 1 April 2026", []),  # an end before its start is not a period
    ],
)
def test_validity_periods_need_two_dates(text, expected):
    assert validity_periods(text) == expected


def test_newer_page_does_not_win_against_an_older_text_whose_stated_period_is_not_over():
    pair = ConflictPair(a=POOL_LEAFLET, b=LESSONS_PAGE, type="price")
    in_season = dt.date(2026, 7, 1)
    assert not NEWER_CONTENT_DATE_WINS.applies(pair, in_season)
    assert older_side_still_in_its_period(pair, in_season) == (POOL_LEAFLET, (dt.date(2026, 4, 1), dt.date(2026, 9, 30)))
    # before the season the leaflet still speaks for it: the page written since is no more current
    before_season = ConflictPair(a=dataclasses.replace(POOL_LEAFLET, updated_at=dt.date(2026, 1, 10)),
                                 b=dataclasses.replace(LESSONS_PAGE, updated_at=dt.date(2026, 2, 20)))
    assert not NEWER_CONTENT_DATE_WINS.applies(before_season, dt.date(2026, 3, 1))


def test_a_stated_period_that_is_over_or_only_on_the_newer_side_leaves_newer_wins_alone():
    pair = ConflictPair(a=POOL_LEAFLET, b=LESSONS_PAGE, type="price")
    after_season = dt.date(2026, 10, 15)
    assert NEWER_CONTENT_DATE_WINS.resolve(pair, after_season) == "lessons-page"
    # the newer side states the period, the older one does not: recency still speaks
    old_page = article("old-page", "A lane swim costs £4.50.", title="Prices", updated=dt.date(2026, 2, 1), source="web")
    newer_leaflet = dataclasses.replace(POOL_LEAFLET, updated_at=dt.date(2026, 3, 20))
    assert NEWER_CONTENT_DATE_WINS.resolve(ConflictPair(a=old_page, b=newer_leaflet), dt.date(2026, 7, 1)) == "pool-leaflet"


def test_a_period_in_the_middle_of_the_older_page_covers_only_its_own_sentence():
    # "Holiday opening, 20 July 2026 to 31 August 2026" is about one paragraph, not the whole page: the statement
    # in conflict is another one, so the newer page still wins
    older = article("opening", "Lane swim: £4.80.\n\nHoliday opening, 20 July 2026 to 31 August 2026: from 7 am.",
                    title="Pool information", updated=dt.date(2026, 3, 1), source="web")
    snippets = {"opening": "Lane swim: £4.80.", "lessons-page": "A lane swim on your own costs £5.20."}
    pair = ConflictPair(a=older, b=LESSONS_PAGE, type="price", snippets=snippets)
    assert NEWER_CONTENT_DATE_WINS.resolve(pair, dt.date(2026, 8, 1)) == "lessons-page"
    # the same period in the statement in conflict itself does hold it
    in_statement = {"opening": "Holiday opening, 20 July 2026 to 31 August 2026: from 7 am.",
                    "lessons-page": "In the holidays the pool opens at 8 am."}
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=older, b=LESSONS_PAGE, snippets=in_statement),
                                               dt.date(2026, 8, 1))


def test_official_rule_leaves_a_page_written_months_after_the_document_took_effect():
    # A fictional bowling alley: its house rules are in force from 1 February; a shoe-hire page written in
    # October gives another price. So long after the change, the page may be a later decision, not a stale copy.
    house_rules = article("house-rules", "Shoe hire costs €3 per game.", title="House rules (effective 1 February 2026)",
                          updated=dt.date(2026, 1, 20), source="pdf")
    months_later = article("shoe-page", "Hiring bowling shoes costs €4 per game.", title="Bowling shoes",
                           updated=dt.date(2026, 10, 2), source="web")
    snippets = {"house-rules": "Shoe hire costs €3 per game.", "shoe-page": "Hiring bowling shoes costs €4 per game."}
    late = ConflictPair(a=house_rules, b=months_later, type="price", snippets=snippets)
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(late, dt.date(2026, 10, 20))
    assert NEWER_CONTENT_DATE_WINS.resolve(late, dt.date(2026, 10, 20)) == "shoe-page"
    # the same page edited a few weeks after the rules took effect is the stale copy the rule is for
    weeks_later = dataclasses.replace(months_later, updated_at=dt.date(2026, 3, 10))
    soon = ConflictPair(a=house_rules, b=weeks_later, type="price", snippets=snippets)
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.resolve(soon, dt.date(2026, 3, 20)) == "house-rules"


def test_date_rules_do_not_let_a_possible_careless_copy_win_by_being_newer():
    # A fictional climbing gym: its price sheet takes effect on 1 March; a route-setting news page edited three
    # weeks later quotes another day-pass price, and nothing known ties the two statements to one subject.
    price_sheet = article("price-sheet", "Day pass €14. Shoe hire €4.", title="Price sheet (valid from 1 March 2026)",
                          updated=dt.date(2026, 2, 15), source="pdf")
    news = article("news", "Twelve new boulder problems this week! Come and try them: a day pass is €12.",
                   title="Route-setting news", updated=dt.date(2026, 3, 22), source="web")
    pair = ConflictPair(a=price_sheet, b=news, type="price")
    now = dt.date(2026, 4, 1)
    assert possible_careless_copy(pair, now) == price_sheet
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(pair, now) is None
    assert not NEWER_CONTENT_DATE_WINS.applies(pair, now)
    # a page that states its own effective date is no careless copy: the stated dates decide
    dated_news = dataclasses.replace(news, body="From 20 March 2026 a day pass is €12.")
    assert possible_careless_copy(ConflictPair(a=price_sheet, b=dated_news), now) is None
    assert EXPLICIT_EFFECTIVE_DATE_WINS.resolve(ConflictPair(a=price_sheet, b=dated_news), now) == "news"
