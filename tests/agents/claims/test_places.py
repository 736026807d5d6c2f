"""agents.claims.places: where or through which channel one action is done (a restriction against a
widening, one thing kept in two named places).
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.places import two_places, widened_channels
from agents.types import CONFLICT_TYPES, ArticleText

from .support import claim, found


def test_each_branch_page_keeps_things_at_its_own_place(vectors):
    northgate, southgate = "Parcels are kept at the Northgate desk.", "Your parcels are held at the Southgate desk for two weeks."
    articles = [ArticleText(ref="kb-1", title="Northgate branch", body=northgate),
                ArticleText(ref="kb-2", title="Southgate branch", body=southgate)]
    assert found(articles, vectors) == []
    moved = [ArticleText(ref="kb-1", title="Parcels", body=northgate),
             ArticleText(ref="kb-2", title="Post room", body=southgate)]
    [finding] = found(moved, vectors)
    # A type the console, its filters and the API know (agents.types lists them all).
    assert finding.type == "procedure" and finding.type in CONFLICT_TYPES
    assert "disagree about how or where it is done" in finding.explanation


def test_a_restriction_to_one_channel_against_a_wider_offer_of_the_same_action():
    narrow = claim("Where are fittings done?\nOnly at our Copperfield office.")[0]
    wide = claim("Every fitting can be done by video call or at either of our offices.")[0]
    said = ("Only at our Copperfield office.", "Every fitting can be done by video call or at either of our offices.")
    assert widened_channels(narrow, wide, similarity=0.6) == said
    assert widened_channels(wide, narrow, similarity=0.6) == said[::-1]  # each side's words, in the order given
    assert widened_channels(narrow, wide, similarity=0.4) is None  # claims this far apart are not about one action
    other_action = claim("Invoices are handled by video call or at either of our offices.")[0]
    assert widened_channels(narrow, other_action, similarity=0.6) is None


def test_one_thing_kept_in_two_places_names_both_places():
    office, office_scope = claim("Spare keys are kept at the Weir Cottage office.")
    bar, bar_scope = claim("Spare keys are kept behind the bar at the Ferry Inn.")
    blankets, blankets_scope = claim("Spare blankets are kept behind the bar at the Ferry Inn.")
    assert two_places(office, bar, similarity=0.7, scope_a=office_scope, scope_b=bar_scope) == (
        "weir cottage office", "bar at ferry inn")
    assert two_places(office, blankets, similarity=0.7, scope_a=office_scope, scope_b=blankets_scope) is None
    assert two_places(office, bar, similarity=0.3, scope_a=office_scope, scope_b=bar_scope) is None
    denied, denied_scope = claim("Spare keys are not kept behind the bar at the Ferry Inn.")
    assert two_places(office, denied, similarity=0.7, scope_a=office_scope, scope_b=denied_scope) is None
