"""agents.claims.analysis: one article analysed into claim facts (values, polarity, subjects, masked text),
the light stemmer, and the cache of masked-claim vectors.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import numpy as np
import pytest

from agents.claims import ClaimVectors, detect_claim_conflicts
from agents.claims.analysis import analyse_text, content_stems, mask, shared_stems, stem
from agents.claims.values import extract_values
from articles.embeddings import embed_texts

from .support import NOW, pair


def test_claim_vectors_are_computed_once_per_article_text(vectors):
    store = ClaimVectors(embed_texts)
    articles = pair("Dogs are allowed on the terrace.", "Dogs are not allowed on the terrace.")
    detect_claim_conflicts(articles=articles, now=NOW, vectors=store)
    encoded = store.encoded_texts
    assert encoded > 0
    detect_claim_conflicts(articles=list(reversed(articles)), now=NOW, vectors=store)
    assert store.encoded_texts == encoded


@pytest.mark.parametrize("plural, singular", [("messages", "message"), ("changes", "change"), ("boxes", "box"),
                                              ("classes", "class"), ("lockers", "locker"), ("bikes", "bike")])
def test_a_plural_and_its_singular_share_a_stem(plural, singular):
    from agents.claims.analysis import stem

    assert stem(plural) == stem(singular)


def test_a_line_that_introduces_a_list_with_a_price_is_a_claim_said_of_what_its_sentence_names():
    from agents.claims.analysis import analyse_text

    facts = analyse_text("Passes", "The Lido pass is our summer ticket. For £30 a month you get:\n- a locker in the changing room\n- two guest visits", 2026)
    intro = next(f for f in facts if "£30" in f.claim.text)
    assert [v.text for v in intro.values] == ["£30"] and intro.subjects[0] == frozenset({"lido", "pass"})
    assert any("locker" in f.claim.text and "summer ticket" in f.claim.context for f in facts)  # still a heading
