"""agents.claims.value_rules: values of one kind that cannot both hold (subjects, heads, days).
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.subject import Relation

from .support import NOW, detect_claim_conflicts, found, pair
from .support import claim as _claim


def test_loosely_aligned_values_count_when_said_of_the_same_named_thing():
    # A table cell under a bare "Price" column has no words next to its value; its row label is its subject.
    from agents.claims.analysis import analyse_text
    from agents.claims.value_rules import value_contradiction

    cell = analyse_text("Fees", "| Service | Price |\n|---|---|\n| Full groom (45 minutes) | €38 |", 2026)[0]
    same = analyse_text("Grooming", "A full groom with one of our stylists costs €32 and takes about 45 minutes.", 2026)[0]
    other = analyse_text("Grooming", "A nail trim with one of our stylists costs €32 and takes about 45 minutes.", 2026)[0]
    hit = value_contradiction(cell, same, 0.55, heads_must_match=True)
    assert hit is not None and hit[0] == "money" and (hit[2], hit[3]) == ("€38", "€32")
    assert value_contradiction(cell, other, 0.55, heads_must_match=True) is None


def test_unlimited_denies_an_allowance_not_a_length():
    from agents.claims.value_rules import unlimited_contradiction

    unlimited = _claim("Every plan comes with unlimited studio sessions.")[0]
    allowance = _claim("Every plan comes with up to 6 sessions in the studio.")[0]
    per_period = _claim("Every plan comes with 8 sessions a month in the studio.")[0]
    length = _claim("A studio session (45 minutes) is led by a coach.")[0]
    assert unlimited_contradiction(unlimited, allowance) is not None
    assert unlimited_contradiction(unlimited, per_period) is not None
    assert unlimited_contradiction(unlimited, length) is None


def test_daily_hours_are_compared_day_by_day(vectors):
    daily = "The café is open daily from 8 to 5 pm."
    differs_at_weekends = pair(daily, "Café: 08:00-17:00 Monday to Friday, 09:00-17:00 Saturday and Sunday.",
                               first_title="Our café", second_title="Visitor guide")
    assert [f.type for f in found(differs_at_weekends, vectors)] == ["hours"]
    same_every_day = pair(daily, "Café: 08:00-17:00 Monday to Friday, 08:00-17:00 Saturday and Sunday.",
                          first_title="Our café", second_title="Visitor guide")
    assert found(same_every_day, vectors) == []


def test_the_days_after_an_every_day_label_are_the_hours_own(vectors):
    # "seven days a week:" names every day, but the Sunday hours are the ones after "and on Sundays".
    articles = pair("Mon-Sat 09:00-19:00, Sun 12:00-16:00.",
                    "Open seven days a week: Monday to Saturday from 9 am until 7 pm, and on Sundays "
                    "from 11 am until 3 pm.", first_title="Opening times", second_title="Find us")
    # Day attribution is under test, not how sure the finding is: report any confidence.
    findings = detect_claim_conflicts(articles=articles, now=NOW, vectors=vectors, min_confidence=0.1).findings
    assert [(f.refs, f.type) for f in findings] == [(("kb-1", "kb-2"), "hours")]
    assert "12:00 / 16:00" in findings[0].explanation and "11 am / 3 pm" in findings[0].explanation


def test_the_same_hours_written_with_abbreviated_days_agree(vectors):
    assert detect_claim_conflicts(min_confidence=0.1, now=NOW, vectors=vectors, articles=pair("Mon-Sat 09:00-19:00, Sun 11:00-15:00.",
                      "Open seven days a week: Monday to Saturday from 9 am until 7 pm, and on Sundays "
                      "from 11 am until 3 pm.", first_title="Opening times", second_title="Find us")).findings == []


def test_hours_compared_day_by_day_are_not_doubted_as_of_an_unknown_subject():
    from agents.claims.analysis import analyse_text
    from agents.claims.value_rules import UNKNOWN_SUBJECT_STRENGTH, value_contradiction

    timetable = analyse_text("Visiting us", "Monday-Friday 08:00-18:00 | Saturday 09:00-12:00", 2026)[0]
    with_days = analyse_text("Help centre", "Monday to Friday we're open from 8 am to 7 pm, and on Saturday from 9 am "
                                            "to noon.", 2026)[0]
    kind, strength, said_timetable, said_sentence = value_contradiction(timetable, with_days, 0.72)
    assert kind == "clock" and "18:00" in said_timetable and "7 pm" in said_sentence
    assert strength > 0.8 * UNKNOWN_SUBJECT_STRENGTH  # one end of a range moved (0.8), not damped further


def test_a_noun_made_narrower_only_by_its_own_pages_title_is_the_same_thing():
    from agents.claims.analysis import analyse_text
    from agents.claims.value_rules import subject_relation

    free = analyse_text("Getting here", "Our free minibus leaves from the square every hour.", 2026)[0]
    priced = analyse_text("Town minibus", "The minibus costs £3 each way.", 2026)[0]
    named = analyse_text("Getting here", "A night minibus costs £5 each way.", 2026)[0]
    assert subject_relation(free, free.values[0], priced, priced.values[0]) is Relation.SAME
    # Words the sentence itself says still make it narrower.
    assert subject_relation(priced, priced.values[0], named, named.values[0]) is not Relation.SAME


def test_age_limits_for_different_things_do_not_conflict():
    from agents.claims import REPORT_MIN_CONFIDENCE
    from agents.claims.compare import compare_claims

    exempt, exempt_scope = _claim("Pupils under 4 go free of the harbour charge.", title="What is the harbour charge?")
    fare, fare_scope = _claim("Pupils under 13 pay the junior rate on weekdays.", title="Is there a discount for pupils?")
    hit = compare_claims(exempt, fare, similarity=0.6, scope_a=exempt_scope, scope_b=fare_scope)
    assert hit is None or hit.confidence < REPORT_MIN_CONFIDENCE
    # Limits for one thing still conflict, however the age is said.
    other, other_scope = _claim("Pupils under 6 go free of the harbour charge.", title="Harbour charge")
    hit = compare_claims(exempt, other, similarity=0.6, scope_a=exempt_scope, scope_b=other_scope)
    assert hit is not None and hit.type == "eligibility" and hit.confidence >= REPORT_MIN_CONFIDENCE
    # ... and when the same kind of thing is granted in other words.
    reworded, reworded_scope = _claim("Pupils under 6 cross at no cost.", title="Harbour charge")
    hit = compare_claims(exempt, reworded, similarity=0.6, scope_a=exempt_scope, scope_b=reworded_scope)
    assert hit is not None and hit.type == "eligibility"


def test_a_narrower_case_on_its_own_page_is_another_thing():
    from agents.claims.value_rules import subject_relation

    def said(text, title):
        facts, _ = _claim(text, title=title)
        return facts, facts.values[0]

    general = said("We answer within 3 working days.", "Get in touch")
    on_its_page = said("We examine every billing dispute and answer within 15 working days.", "Billing disputes policy")
    elsewhere = said("We examine every billing dispute and answer within 15 working days.", "Service levels")
    assert subject_relation(*on_its_page, *general) is Relation.DIFFERENT
    assert subject_relation(*general, *on_its_page) is Relation.DIFFERENT
    # Under a heading that does not name the case, it stays a narrower case of the general figure.
    assert subject_relation(*elsewhere, *general) is Relation.NARROWER



def test_values_whose_own_stretches_name_two_things_are_not_compared():
    from dataclasses import replace

    from agents.claims.contradiction import AlignedPair
    from agents.claims.value_rules import value_finding

    def pair_of(a, b, names_a, names_b):
        (facts_a, scope_a), (facts_b, scope_b) = a, b
        return AlignedPair(a=facts_a, b=facts_b, similarity=0.65, scope_a=replace(scope_a, names=frozenset(names_a)),
                           scope_b=replace(scope_b, names=frozenset(names_b)), overlap=0.1, statements_apart=False,
                           near_copy=None)

    listing = _claim("Roughly 50 minutes from Quernby to Oakhaven, and about 20 minutes to Stoneleigh on the launch.",
                     title="How long does the crossing take?")
    listed = {"Quernby", "Oakhaven", "Stoneleigh"}
    route = _claim("The crossing from Quernby takes 130 minutes on the Farrowby Rambler, a car ferry with a café.",
                   title="Quernby – Farrowby")
    # "50 minutes" is Oakhaven's and "20 minutes" Stoneleigh's, which the route page never mentions, and the route
    # page's own names are not in the list: times of other crossings.
    assert value_finding(pair_of(listing, route, listed, {"Quernby", "Farrowby", "Rambler"})) is None
    # A general claim names nothing of its own: the listed times are compared with it.
    general = _claim("The crossing from Quernby takes 130 minutes.", title="Crossing times")
    assert value_finding(pair_of(listing, general, listed, {"Quernby"})) is not None
