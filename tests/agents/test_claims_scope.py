"""Generalisation rules of the claim detector: subject vs scope, audiences, departments, tiers, polarity scope.

Every example is hand-written (a gym / leisure centre), not taken from either evaluation set.
"""
import datetime as dt

import pytest

from agents.claims import detect_claim_conflicts
from agents.claims.normalise import find_counts, find_durations
from agents.claims.polarity import extract_stances
from agents.claims.schedule import parse_schedule
from agents.claims.scope import audiences_compatible, names_compatible, strong_topic
from agents.claims.text import content_tokens
from agents.types import ArticleText

NOW = dt.date(2027, 6, 1)


def art(ref: str, body: str, title: str = "Help") -> ArticleText:
    return ArticleText(ref=ref, title=title, body=body, updated_at=dt.date(2027, 1, 1))


def detect(body_a: str, body_b: str, *, title_a: str = "Help", title_b: str = "Help"):
    return detect_claim_conflicts(articles=[art("kb-a", body_a, title_a), art("kb-b", body_b, title_b)], now=NOW)


NOT_CONFLICTS = {
    "generic words are no subject": (
        "Send the names of your party to parties@gym.example at least 7 days before your visit.",
        "Please request a hoist at least 48 hours before your visit."),
    "different audiences": ("Students get 20% off all classes.", "Seniors get 30% off all classes."),
    "audience on one side only": ("Groups of 8 or more get 15% off court hire.", "Members get 30% off court hire."),
    "ages for different rules": ("Children under 4 travel free on the minibus.",
                                 "Children under 12 cannot travel on the minibus without an adult."),
    "different departments' e-mails": ("Email lostitems@gym.example.", "Email help@gym.example."),
    "notice period vs elapsed time": ("Cancel up to 2 hours before your class for a full refund.",
                                      "Refunds reach your card within 14 days of the cancellation."),
    "the other article states both tiers": (
        "Large vans must be at the gate at least 60 minutes before the event.",
        "Cars must be at the gate at least 30 minutes before the event. "
        "Large vans must be at the gate at least 60 minutes before the event."),
    "next year's date of a recurring event": ("The Summer Festival starts on 5 April 2027.",
                                              "The Summer Festival starts on 4 April 2028."),
    "a mention of refunds is no stance": ("The rules for refunds are set out in the Gift Card Terms.",
                                          "Gift cards are non-refundable."),
    "no extra cost does not negate the refund": (
        "If we cancel your class, you can choose another class at no extra cost or a full refund.",
        "If we cancel a class, members get a full refund."),
    "rule and exception stated by the other article": (
        "Guide dogs are welcome in the café and in every lounge.",
        "Pets are not allowed in the café or the lounge. Guide dogs are welcome in the café and in every lounge."),
}


@pytest.mark.parametrize("name", sorted(NOT_CONFLICTS))
def test_near_misses_from_other_scopes_are_not_flagged(name):
    body_a, body_b = NOT_CONFLICTS[name]
    assert detect(body_a, body_b) == []


def test_refund_stances_for_two_named_tiers_do_not_conflict():
    findings = detect("You can cancel a Premium booking for a full refund.", "Basic bookings are non-refundable.",
                      title_b="About a Basic booking")
    assert findings == []


CONFLICTS = {
    "same department, another address": ("contact", (
        "Email lostitems@gym.example with the date of your visit and a description of the item.",
        "To ask about an item you left behind, email found@gym.example with the date of your visit and a "
        "description of what you lost.")),
    "allowance per unit": ("quantity", ("You can bring up to 6 guests per visit.",
                                        "You can bring up to 4 guests per visit.")),
    "moved event date": ("date", ("The Summer Festival starts on 5 April 2027.",
                                  "The Summer Festival starts on 12 April 2027.")),
    "permission flipped": ("policy", ("Dogs on a lead are welcome in the café and the main lounge.",
                                      "Pets are not allowed in the café or the main lounge.")),
    "elliptic 'and so can'": ("eligibility", ("Local residents can apply, and so can owners of holiday homes in town.",
                                             "Owners of holiday homes in town are not eligible.")),
}


@pytest.mark.parametrize("name", sorted(CONFLICTS))
def test_conflicts_that_generalise_are_found(name):
    ctype, (body_a, body_b) = CONFLICTS[name]
    [finding] = detect(body_a, body_b)
    assert finding.type == ctype


def test_weak_words_audiences_and_names_are_not_subject_words():
    topic = frozenset({"before", "travel", "ticket", "check-in", "children", "riverside"})
    assert strong_topic(topic, frozenset({"riverside"})) == {"check-in"}
    assert strong_topic(topic, frozenset(), keep_audience=True) == {"check-in", "children", "riverside"}


def test_audiences_and_names_compatibility():
    assert audiences_compatible(frozenset(), frozenset())
    assert not audiences_compatible(frozenset({"student"}), frozenset())
    vocab_b = frozenset({"gold", "plan", "costs"})
    assert names_compatible(frozenset({"gold"}), frozenset(), vocab_a=frozenset(), vocab_b=vocab_b)
    assert not names_compatible(frozenset({"platinum"}), frozenset(), vocab_a=frozenset(), vocab_b=vocab_b)
    assert not names_compatible(frozenset({"gold"}), frozenset({"silver"}), vocab_a=vocab_b, vocab_b=vocab_b)


def test_compound_duration_is_one_value():
    [d] = find_durations("The walk takes 1 hour 35 minutes from the car park.")
    assert d.amount == (pytest.approx(95 / 60), pytest.approx(95 / 60))


def test_allowance_count_keeps_thing_and_unit():
    [c] = find_counts("You can bring up to 6 bicycles per booking.")
    assert (c.amount, c.unit, c.bound) == (6.0, "bicycle/booking", "max")


def test_days_after_their_hours_belong_to_them():
    sched = parse_schedule("We are open from 7 am to 9 pm Monday to Friday, and from 8 am to 4 pm on Saturdays.")
    assert sched[0] == (7 * 60, 21 * 60) and sched[5] == (8 * 60, 16 * 60)


def test_negation_only_reaches_its_own_phrase():
    [stance] = extract_stances(art("kb-n", "You can rebook at no extra cost, or request a full refund online."), now=NOW)[:1]
    assert stance.predicate == "refund" and stance.positive


def test_addresses_are_not_topic_words():
    assert content_tokens("Email help@leisure.example or visit www.leisure.example desk") == {"visit", "desk"}
