"""agents.claims.near_copy: copied sentences that differ only in a name; template lines on each product's own page.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

from agents.claims.near_copy import own_page_siblings

from .support import claim as _claim
from .support import found, pair


def test_a_template_sentence_on_each_products_own_page_is_no_name_swap(vectors):
    articles = pair("Our Lite Broadband team answers every message sent through the chat in the app.",
                    "Our Max Broadband team answers every message sent through the chat in the app.",
                    first_title="Lite Broadband: support", second_title="Max Broadband: support")
    assert found(articles, vectors) == []
    edited_copy = pair(articles[0].body, articles[1].body, first_title="Support", second_title="Support team")
    assert [f.type for f in found(edited_copy, vectors)] == ["other"]


def test_one_template_line_on_sibling_pages_is_each_pages_own(vectors):
    siblings = pair("Front desk: 0161 496 0123\nWe open at 08:00 on weekdays.",
                    "Front desk: 0161 496 0456\nWe open at 08:00 on weekdays.",
                    first_title="Northgate studio", second_title="Riverside studio")
    assert found(siblings, vectors) == []
    one_studio = pair(siblings[0].body, siblings[1].body, first_title="Northgate studio", second_title="Contact details")
    assert [f.type for f in found(one_studio, vectors)] == ["contact"]


def test_a_template_sentence_that_names_its_own_page_is_a_sibling_not_a_copy():
    juniper = _claim("Our Juniper team answers every email within a day.", title="Juniper plan: support")[0]
    sequoia = _claim("Our Sequoia team answers every email within a day.", title="Sequoia plan: support")[0]
    elsewhere = _claim("Our Sequoia team answers every email within a day.", title="Support")[0]
    assert own_page_siblings(juniper, sequoia)
    assert not own_page_siblings(juniper, elsewhere)
