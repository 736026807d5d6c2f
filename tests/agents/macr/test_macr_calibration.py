"""Calibrated confidence, abstention for each "cannot tell" case, and premises that must not fire (new wording)."""
from __future__ import annotations

import datetime as dt

import pytest

from agents.macr.calibration import (
    Prior,
    Priors,
    default_threshold,
    document_kind,
    posterior,
    rule_confidence,
    situation,
)
from agents.macr.reasoner import suggest
from agents.macr.rules import (
    NEWER_CONTENT_DATE_WINS,
    OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE,
    ConflictPair,
    Rule,
    executable_rules,
)
from agents.types import ArticleText

NOW = dt.date(2026, 9, 1)


def page(ref, body, *, title="Harbour café", updated=dt.date(2026, 3, 1), source="web"):
    return ArticleText(ref=ref, title=title, body=body, updated_at=updated, source=source)


def rule_with(cases, agreed):
    rule = Rule(id="x", type="*", condition="c", resolution="r", origin="manual",
                condition_check=lambda pair, now: True, resolution_pick=lambda pair, now: pair.a.ref)
    return rule.with_stats(coverage=1.0, support=agreed / cases if cases else 0.0, cases=cases, agreed=agreed)


@pytest.mark.parametrize("cases", [1, 5, 20, 80])
def test_confidence_rises_with_support_at_every_number_of_cases(cases):
    pair = ConflictPair(a=page("a", "x"), b=page("b", "y"))
    values = [rule_confidence(rule_with(cases, agreed), pair=pair, winner="a", priors=Priors({}, 0.9)).value
              for agreed in range(cases + 1)]
    assert values == sorted(values) and values[0] < values[-1]


def test_more_agreeing_cases_mean_more_confidence_and_unmeasured_rules_sit_at_a_coin_flip():
    assert posterior(agreed=9, cases=10, prior=0.5, weight=2) < posterior(agreed=90, cases=100, prior=0.5, weight=2)
    assert posterior(agreed=0, cases=0, prior=0.5, weight=2) == 0.5
    with pytest.raises(ValueError):
        posterior(agreed=3, cases=2, prior=0.5, weight=2)


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        # same day, two web pages
        (page("m", "Cakes are €3.", updated=dt.date(2026, 3, 1)), page("n", "Cakes are €4.", updated=dt.date(2026, 3, 1)),
         "both statements are dated 2026-03-01"),
        # nine days apart: one week's edits cannot be ordered
        (page("m", "We close at 17:00.", updated=dt.date(2026, 3, 1)), page("n", "We close at 18:00.", updated=dt.date(2026, 3, 10)),
         "only 9 days apart"),
        # a page with no date at all
        (page("m", "Seats for 40.", updated=None), page("n", "Seats for 60."), "no date is known for m"),
    ],
)
def test_each_cannot_tell_case_abstains_with_a_reason(first, second, reason):
    suggestion = suggest(a=first, b=second, conflict_type="quantity", now=NOW, rules=executable_rules())
    assert suggestion.winner is None and suggestion.confidence == 0.0
    assert reason in suggestion.explanation


def test_a_terms_page_against_a_marketing_page_says_no_rule_covers_it():
    terms = page("t", "Deposits are refundable.", title="Booking terms", updated=dt.date(2026, 4, 2))
    promo = page("p", "Deposits are never refunded.", title="Summer parties", updated=dt.date(2026, 4, 2))
    suggestion = suggest(a=terms, b=promo, conflict_type="policy", now=NOW, rules=executable_rules())
    assert suggestion.winner is None
    assert "no rule covers a terms or policy page against a web page" in suggestion.explanation


def test_a_side_below_the_threshold_is_leaned_to_not_shown():
    older = page("o", "Oat milk costs 40c extra.", updated=dt.date(2025, 1, 5), source="faq")
    newer = page("w", "Oat milk is free.", updated=dt.date(2026, 2, 5), source="faq")
    shown = suggest(a=older, b=newer, conflict_type="price", now=NOW, rules=executable_rules(), min_confidence=0.5)
    assert shown.winner == "w" and shown.confidence >= 0.5
    hidden = suggest(a=older, b=newer, conflict_type="price", now=NOW, rules=executable_rules(), min_confidence=0.999)
    assert hidden.winner is None and hidden.leaning == "w"
    assert "below this knowledge base's threshold 1.00" in hidden.explanation


def test_the_date_rule_does_not_fire_when_only_the_page_changed_since_the_statement():
    # the menu page was edited in August (a new tea), but its price sentence dates from January
    menu = page("menu", "Scones are €2.50. New: smoked tea.", updated=dt.date(2026, 8, 20))
    board = page("board", "Scones are €3.", updated=dt.date(2026, 4, 1))
    plain = ConflictPair(a=menu, b=board)
    assert NEWER_CONTENT_DATE_WINS.resolve(plain, NOW) == "menu"
    with_history = ConflictPair(a=menu, b=board, statement_dates={"menu": dt.date(2026, 1, 12)})
    assert NEWER_CONTENT_DATE_WINS.resolve(with_history, NOW) == "board"


def test_the_authority_rule_needs_an_unofficial_page_on_the_same_subject():
    rules = page("hire", "Effective 1 February 2026. Room hire includes two hours of setup.",
                 title="Room hire conditions", updated=dt.date(2026, 1, 20), source="pdf")
    unrelated = page("jazz", "Jazz night every Friday; tickets include a drink.", title="Events",
                     updated=dt.date(2026, 6, 1))
    snippets = {"hire": "Room hire includes two hours of setup.", "jazz": "tickets include a drink"}
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(ConflictPair(a=rules, b=unrelated, snippets=snippets), NOW)
    other_terms = page("venue", "Room hire includes one hour of setup.", title="Venue terms", updated=dt.date(2026, 6, 1))
    both_official = {"hire": "Room hire includes two hours of setup.", "venue": "Room hire includes one hour of setup."}
    assert not OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.applies(ConflictPair(a=rules, b=other_terms, snippets=both_official), NOW)
    # (written a few weeks after the conditions took effect: a stale copy, not a later decision)
    same_subject = page("faq-hire", "Room hire includes one hour of setup.", title="Hiring the back room",
                        updated=dt.date(2026, 3, 5), source="faq")
    pair = ConflictPair(a=rules, b=same_subject,
                        snippets={"hire": "Room hire includes two hours of setup.", "faq-hire": "Room hire includes one hour of setup."})
    assert OFFICIAL_EFFECTIVE_BEATS_NEWER_PAGE.resolve(pair, NOW) == "hire"


# --- the statement in conflict, not the page: a later change announced elsewhere on a page ----------------
# (a fictional pottery studio)

def test_a_page_announcing_one_later_change_still_vouches_for_its_other_statements():
    studio = page("studio", "A wheel class costs €35. Glazes are included. From 1 December 2026 Sunday classes start.",
                  title="Wheel classes", updated=dt.date(2026, 7, 14))
    leaflet = page("leaflet", "A wheel class costs €30. Bring an apron.", title="Studio leaflet",
                   updated=dt.date(2026, 1, 9))
    # must fire: the price sentence is current; only another sentence waits for December
    assert NEWER_CONTENT_DATE_WINS.resolve(ConflictPair(a=studio, b=leaflet), NOW) == "studio"
    # the statement in conflict known and itself announced for later: must not fire
    later = {"studio": "From 1 December 2026 a wheel class costs €35.", "leaflet": "A wheel class costs €30."}
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=studio, b=leaflet, snippets=later), NOW)
    # no statement known and the whole page announced for later: must not fire
    notice = page("notice", "From 1 December 2026 a wheel class costs €35.", title="Price notice",
                  updated=dt.date(2026, 7, 14))
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=notice, b=leaflet), NOW)


# --- situations: which kind of text a rule lets win over which (a fictional tool-hire shop) ----------------

HIRE_TERMS = page("terms", "Deposits are returned within 10 days.", title="Tool hire terms and conditions",
                  updated=dt.date(2025, 11, 3), source="pdf")
HIRE_FAQ = page("faq", "Deposits are returned the same day.", title="Getting your deposit back",
                updated=dt.date(2026, 5, 20), source="faq")
HIRE_NEWS = page("news", "Deposits now come back the same day.", title="Faster deposits",
                 updated=dt.date(2026, 5, 20), source="web")
HIRE_GUIDE = page("guide", "Deposits are returned within 10 days.", title="Welcome guide",
                  updated=dt.date(2025, 11, 3), source="pdf")


def test_each_side_has_a_kind_and_each_verdict_a_situation():
    assert [document_kind(a) for a in (HIRE_TERMS, HIRE_FAQ, HIRE_NEWS, HIRE_GUIDE)] == ["terms", "faq", "page", "document"]
    assert situation(ConflictPair(a=HIRE_TERMS, b=HIRE_FAQ), "faq") == "faq-over-terms"
    assert situation(ConflictPair(a=HIRE_GUIDE, b=HIRE_NEWS), "guide") == "document-over-page"


def _priors(**situations):
    standing_record = {"loser-official": [45, 50]}
    return Priors(rules={"newer-content-date-wins": {k: Prior(*v) for k, v in standing_record.items()}},
                  situations={"newer-content-date-wins": {k: Prior(*v) for k, v in situations.items()}},
                  threshold=0.87)


def test_a_situation_where_the_rule_is_often_wrong_is_cannot_tell_with_its_record():
    priors = _priors(**{"faq-over-terms": [2, 9], "page-over-terms": [20, 20]})
    faq_vs_terms = suggest(a=HIRE_TERMS, b=HIRE_FAQ, conflict_type="policy", now=NOW, rules=executable_rules(),
                           min_confidence=priors.threshold, priors=priors)
    assert faq_vs_terms.winner is None and faq_vs_terms.leaning == "faq"
    assert "right in 2 of 9 test decisions where it lets an FAQ answer win over a terms or policy document" in faq_vs_terms.explanation
    # the same rule, the same dates, a web page announcing the change: its own good record speaks
    news_vs_terms = suggest(a=HIRE_TERMS, b=HIRE_NEWS, conflict_type="policy", now=NOW, rules=executable_rules(),
                            min_confidence=priors.threshold, priors=priors)
    assert news_vs_terms.winner == "news"


def test_a_situation_measured_a_few_times_leans_on_its_standing():
    pair = ConflictPair(a=HIRE_TERMS, b=HIRE_FAQ)
    rule = NEWER_CONTENT_DATE_WINS
    unmeasured = rule_confidence(rule, pair=pair, winner="faq", priors=_priors()).raw
    one_miss = rule_confidence(rule, pair=pair, winner="faq", priors=_priors(**{"faq-over-terms": [0, 1]})).raw
    many_misses = rule_confidence(rule, pair=pair, winner="faq", priors=_priors(**{"faq-over-terms": [0, 12]})).raw
    assert many_misses < one_miss < unmeasured and one_miss > 0.6  # one miss moves it a little, twelve a lot


@pytest.mark.parametrize("decided", [1, 4, 9, 30])
def test_confidence_rises_with_the_situations_measured_support(decided):
    pair = ConflictPair(a=HIRE_TERMS, b=HIRE_FAQ)
    values = [rule_confidence(NEWER_CONTENT_DATE_WINS, pair=pair, winner="faq",
                              priors=_priors(**{"faq-over-terms": [right, decided]})).raw for right in range(decided + 1)]
    assert values == sorted(values) and values[0] < values[-1]


def test_the_shipped_priors_do_not_let_a_newer_faq_answer_overrule_the_terms():
    # the product path: the priors and threshold written from the dev half
    suggestion = suggest(a=HIRE_TERMS, b=HIRE_FAQ, conflict_type="policy", now=NOW, rules=executable_rules(),
                         min_confidence=default_threshold())
    assert suggestion.winner is None
    assert "an FAQ answer win over a terms or policy document" in suggestion.explanation


def test_a_document_whose_title_takes_effect_later_holds_back_every_statement():
    rules = page("rules", "Helmets are lent free of charge.", title="Climbing wall rules (effective 1 December 2026)",
                 updated=dt.date(2026, 8, 1), source="pdf")
    board = page("board", "Helmets cost €2 to borrow.", title="At the wall", updated=dt.date(2026, 2, 1))
    snippets = {"rules": "Helmets are lent free of charge.", "board": "Helmets cost €2 to borrow."}
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=rules, b=board, snippets=snippets), NOW)
    assert not NEWER_CONTENT_DATE_WINS.applies(ConflictPair(a=rules, b=board), NOW)
