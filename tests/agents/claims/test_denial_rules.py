"""agents.claims.denial_rules: opposite polarity or modality, and channels.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from .support import found, pair


def test_a_channel_counts_against_the_action_the_heading_names(vectors):
    # "switched on" and "activate" share no word; the heading both claims stand under names the action.
    denied = "Quillo Fibre is switched on by a technician at your home, never from the app."
    activated = pair(denied, "You activate Quillo Fibre yourself in the app, under Settings and then Start.",
                     first_title="Quillo Fibre: activation", second_title="Quillo Fibre: activation")
    assert [(f.refs, f.type) for f in found(activated, vectors)] == [(("kb-1", "kb-2"), "procedure")]
    # A claim on the same page about another action done in the app (its product's name in capitals) is no denial.
    other_action = pair("Our Quillo SIM team reads every message sent through the chat in the app.",
                        denied.replace("Fibre", "SIM"), first_title="Quillo SIM: activation",
                        second_title="Quillo SIM: activation")
    assert found(other_action, vectors) == []


def test_one_denied_word_counts_when_both_statements_are_about_the_same_thing():
    from agents.claims.analysis import analyse_text
    from agents.claims.denial_rules import denies_what_other_affirms

    def claim(text):
        return analyse_text("Notes", text, 2026)[0]

    denied = claim("Harbour passes are non-refundable, so plan your week before buying one at the kiosk.")
    same_subject = claim("Harbour passes can be refunded up to a day before you travel.")
    other_subject = claim("Parking permits can be refunded up to a day before you travel.")
    assert denies_what_other_affirms(denied, same_subject, 0.5)
    assert not denies_what_other_affirms(denied, other_subject, 0.5)



def test_an_action_denied_to_some_and_done_by_others_is_no_denial():
    from agents.claims.compare import compare_claims

    from .support import claim

    denied, denied_scope = claim("At the Oakhaven climbing hall, skis and sledges cannot enter the changing rooms.",
                                 title="Winter gear at Oakhaven")
    others, others_scope = claim("Guide dogs may enter the Oakhaven changing rooms on a lead.", title="Assistance animals")
    assert compare_claims(denied, others, similarity=0.6, scope_a=denied_scope, scope_b=others_scope) is None
    # The same actors on both sides: a denial.
    same, same_scope = claim("At the Oakhaven climbing hall, skis and sledges can enter the changing rooms.",
                             title="Winter gear storage")
    assert compare_claims(denied, same, similarity=0.6, scope_a=denied_scope, scope_b=same_scope) is not None


def test_people_named_in_other_words_are_not_set_apart_as_actors():
    """Two words for people ("patrons" / "tenants") may name the same people: a denial against the other's
    permission still counts; other kinds of actors with no word in common (gear / animals) are two rules."""
    from agents.claims.subject import actors_apart, phrase_stems

    patrons, tenants = phrase_stems("patrons"), phrase_stems("tenants")
    assert patrons and tenants
    assert not actors_apart(patrons, tenants, "Patrons cannot book the roof deck.", "Tenants can book the roof deck.")
    assert actors_apart(phrase_stems("skis and sledges"), phrase_stems("guide dogs"),
                        "Skis and sledges cannot enter.", "Guide dogs may enter.")
