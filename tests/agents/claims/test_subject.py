"""agents.claims.subject: what a value is said of, and how two subjects relate (new wording throughout)."""
from __future__ import annotations

import pytest

from agents.claims.subject import Relation, relation, subject_of


def at(text: str, value: str):
    return subject_of(text, text.index(value))


@pytest.mark.parametrize("text, value, expected", [
    ("Gold members get 30% off every class.", "30%", {"gold", "class"}),  # who gets it, and on what
    ("The Loft plan costs €75 a month.", "€75", {"loft", "plan"}),
    ("Garden tours (ages 5 and up): £4 a head.", "£4", {"garden", "tour"}),
    ("One-time costs: setup £40 (free on yearly plans).", "£40", {"setup"}),
    ("Gold members get 30% off classes, and 20% off the shop.", "20%", {"gold", "shop"}),
    ("Trial 30 costs $9 a week.", "$9", {"trial 30"}),
    ("The front desk at Quarry Quay opens at 07:00.", "07:00", {"front", "desk", "quarri", "quay"}),  # a name after "at"
    ("Emergency: urgent visit, weekdays £85.", "£85", {"urgent", "visit"}),
    ("You can return a gift card up to 14 days after purchase.", "14 days", {"gift", "card"}),  # what you act on
    # A short label over a sentence of its own says which case the sentence is of.
    ("Vans and lorries: the vehicle must be parked by 18:00 on the day.", "18:00", {"van", "lorri", "vehicl"}),
])
def test_the_subject_is_the_noun_phrase_before_the_verb_or_label(text, value, expected):
    assert at(text, value) == frozenset(expected)


@pytest.mark.parametrize("text, value", [
    ("Since May we charge £4 for a tour.", "£4"),  # an adverbial opens the clause
    ("£4 buys a tour.", "£4"),  # the value comes before any verb
    ("Tour prices: mornings £4, afternoons £5, evenings £6.", "£6"),  # a label over a list
])
def test_no_subject_decides_nothing(text, value):
    assert at(text, value) is None
    assert relation(at(text, value), frozenset({"tour"})) is Relation.UNKNOWN


def test_relations():
    gold, bronze = frozenset({"gold", "member"}), frozenset({"bronze", "member"})
    assert relation(gold, gold) is Relation.SAME
    assert relation(gold, bronze) is Relation.DIFFERENT
    assert relation(frozenset({"member"}), gold) is Relation.NARROWER
    assert relation(frozenset({"driver"}), frozenset({"car"})) is Relation.UNKNOWN  # perhaps one thing in other words


@pytest.mark.parametrize("text, value, expected", [
    # An action done "to" something: the value is said of the action, not of where it leads.
    ("You can switch to the Harbour plan at no charge.", "at no charge", {"switch", "harbour"}),
    ("You can upgrade to a bigger locker for £3.", "£3", {"upgrad"}),
])
def test_a_value_said_of_an_action_towards_something_keeps_the_action(text, value, expected):
    assert at(text, value) == frozenset(expected)


def test_a_contraction_is_no_subject():
    from agents.claims.subject import subject_of

    text = "A 5-visit card costs £40 (that's £8 a visit) and lasts a year."
    assert subject_of(text, text.index("£8")) is None


def test_a_bare_noun_is_the_one_its_article_last_named():
    from agents.claims.subject import named_mentions, resolved

    mentions = named_mentions("Our Kestrel Rider card gives 10% off.", {})
    assert resolved(frozenset({"card"}), mentions) == {"kestrel", "rider", "card"}
    assert resolved(frozenset({"pass"}), mentions) == {"pass"}  # never named
    assert resolved(frozenset({"gift", "card"}), mentions) == {"gift", "card"}  # says which card itself
    assert resolved(None, mentions) is None


def test_a_statements_subject_is_its_noun_phrase_before_a_verb():
    from agents.claims.subject import label_subject, statement_subject

    assert statement_subject("The night bus leaves at 23:00.") == {"night", "bus"}
    assert statement_subject("Night bus: 23:00") is None  # a label, not a statement
    assert statement_subject("Since May the night bus leaves at 23:00.") is None  # an adverbial opens it
    assert label_subject("Night bus (90 minutes)") == {"night", "bus"}  # what is in brackets is no subject


@pytest.mark.parametrize("text, value, expected", [
    # A pronoun acting with a verb the subject grammar does not list: what it does is what the value is of.
    ("We respond within 3 working days.", "3 working", {"respond"}),
    ("We check every billing dispute and respond within 15 working days.", "15 working", {"bill", "disput", "respond"}),
])
def test_a_value_said_of_what_a_pronoun_does(text, value, expected):
    assert at(text, value) == frozenset(expected)
    assert relation(at("We respond within 3 working days.", "3 working"), at(text, value)) in (Relation.SAME, Relation.NARROWER)


@pytest.mark.parametrize("text, verb, expected", [
    ("Our launch is small, so bicycles and scooters cannot board it.", "board", {"bicycl", "scooter"}),
    ("On the evening launch, cats board in a basket.", "board", {"cat"}),
    ("We cannot refund day tickets.", "refund", None),  # a pronoun names no actor
])
def test_the_actor_of_a_verb_is_the_noun_phrase_right_before_it(text, verb, expected):
    from agents.claims.subject import actor_before

    assert actor_before(text, text.index(verb)) == (frozenset(expected) if expected else None)
