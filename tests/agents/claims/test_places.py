"""agents.claims.places: where or through which channel one action is done (a restriction against a
widening, the place something came from against any place, one thing kept in two named places).
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

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
