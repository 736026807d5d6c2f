"""agents.claims.analysis: one article analysed into claim facts (values, polarity, subjects, masked text),
the light stemmer, and the cache of masked-claim vectors.
Every case is written in new wording for these tests (no data set's sentences or names).
"""
from __future__ import annotations

import numpy as np
import pytest

from agents.claims import ClaimVectors, detect_claim_conflicts
from agents.claims.analysis import analyse_text, content_stems, mask, masked_texts, shared_stems, stem
from agents.claims.value_extraction import extract_values
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

    assert stem(plural) == stem(singular)


def test_a_line_that_introduces_a_list_with_a_price_is_a_claim_said_of_what_its_sentence_names():
    from agents.claims.analysis import analyse_text

    facts = analyse_text("Passes", "The Lido pass is our summer ticket. For £30 a month you get:\n- a locker in the changing room\n- two guest visits", 2026)
    intro = next(f for f in facts if "£30" in f.claim.text)
    assert [v.text for v in intro.values] == ["£30"] and intro.subjects[0] == frozenset({"lido", "pass"})
    assert any("locker" in f.claim.text and "summer ticket" in f.claim.context for f in facts)  # still a heading


def test_a_claim_is_masked_by_the_kinds_of_its_values():
    text = "A locker costs €4 a day and the deposit is €20."
    assert mask(text, extract_values(text, year=2026)) == "A locker costs an amount a day and the deposit is an amount."
    # Claims that differ only in their figures read the same once masked: they align by meaning.
    other = "A locker costs €6 a day and the deposit is €25."
    assert mask(other, extract_values(other, year=2026)) == mask(text, extract_values(text, year=2026))


def test_a_count_is_masked_with_the_thing_counted_as_written():
    text = "Members may borrow 6 puppies a month."
    values = extract_values(text, year=2026)
    assert [v.kind for v in values] == ["count"]
    assert mask(text, values) == "Members may borrow several puppies a month."  # not the key's stem "puppy" + "s"


def test_content_stems_leave_function_words_out():
    assert content_stems("The lockers are refunded within the week") == {"locker", "refund", "week"}


def test_a_noun_and_its_verb_share_a_stem_but_short_words_need_to_be_equal():
    assert shared_stems(frozenset({"cancel", "renew", "desk"}), frozenset({"cancellation", "renewal", "dock"})) == {
        "cancel", "renew"}
    assert shared_stems(frozenset({"car"}), frozenset({"card"})) == frozenset()


@pytest.mark.parametrize("answer, negative", [("No - lockers are free to use.", True),
                                              ("Yes - it is returned when you leave.", False)])
def test_a_yes_or_no_answer_says_or_denies_what_the_question_asked(answer, negative):
    (facts,) = analyse_text("Lockers at Fenwick Baths", f"Is there a locker deposit?\n{answer}", 2026)
    assert facts.negative is negative
    assert {"locker", "deposit"} <= facts.content
    assert ({"locker", "deposit"} <= facts.denied_heads) is negative


def test_a_table_cell_is_read_under_its_row_and_column():
    (monthly,) = analyse_text("Fenwick Baths", "| Item | Monthly price |\n|---|---|\n| Locker | €40 |", 2026)
    (bare,) = analyse_text("Fenwick Baths", "| Item | Price |\n|---|---|\n| Locker | €40 |", 2026)
    assert [v.key for v in monthly.values] == [("EUR", 40.0, "month")]  # the column gives the price its period
    assert [v.key for v in bare.values] == [("EUR", 40.0, "")]
    assert monthly.subjects == (frozenset({"locker"}),)  # the row label is what the value is of
    assert "Locker" in monthly.masked and "€40" not in monthly.masked


class CountingEncoder:
    """A stand-in sentence model: one fixed direction per distinct text, counting what it is asked."""

    def __init__(self):
        self.texts: list[str] = []

    def __call__(self, texts):
        self.texts.extend(texts)
        return np.array([[1.0 + len(t), 2.0, float(sum(map(ord, t)) % 7)] for t in texts])


def test_claim_vectors_are_unit_length_and_cached_per_article_text():
    encoder = CountingEncoder()
    store = ClaimVectors(encoder)
    facts = analyse_text("Fenwick Baths", "A locker costs €4 a day. Towels are €2 each.", 2026)
    first = store.vectors(facts)
    assert first.shape == (2, 3) and np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert encoder.texts == [f.masked for f in facts]
    assert store.vectors(facts) is first and store.encoded_texts == 2  # from the cache
    assert store.vectors(()).shape == (0, 1)


def test_the_vector_cache_forgets_the_article_used_longest_ago():
    encoder = CountingEncoder()
    store = ClaimVectors(encoder, max_articles=2)
    # Keyed by the masked texts (what is encoded): the articles differ in words, not only in figures.
    texts = [analyse_text("Fenwick Baths", f"The {pool} opens at 07:00 on weekdays.", 2026)
             for pool in ("lido", "sauna", "spa")]
    store.vectors(texts[0])
    store.vectors(texts[1])
    store.vectors(texts[0])  # used again: now the newest
    store.vectors(texts[2])  # the oldest, texts[1], is forgotten
    encoded = store.encoded_texts
    store.vectors(texts[0])
    assert store.encoded_texts == encoded
    store.vectors(texts[1])
    assert store.encoded_texts == encoded + 1


def test_without_a_sentence_model_claims_align_by_their_words():
    store = ClaimVectors(None)
    facts = analyse_text("Fenwick Baths", "Lockers are free for members.\nFree lockers for members.\n"
                                          "The sauna closes at noon.", 2026)
    vectors = store.vectors(facts)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] == pytest.approx(1.0)  # the same content words
    assert similarity[0, 2] < 0.5


@pytest.mark.parametrize("title, body", [
    ("Fenwick Baths — lockers", "Is there a locker deposit?\nYes - £5, returned when you leave."),
    ("Fenwick Baths", "| Item | Monthly price |\n|---|---|\n| Locker | €40 |\n| Towel | €3 |"),
    ("Fenwick Baths price list", "Swim lesson ........ £12.50\nSauna session ....... £8"),
    ("Opening hours", "Pools — Weekdays\n07:00 to 21:00.\nThe café opens Mon-Fri from 9 am; call 0161 496 0772."),
])
def test_the_index_texts_are_the_masked_texts_of_the_full_analysis(title, body):
    # The index stores vectors of masked_texts; a turn's check looks them up by analyse_text's masked texts.
    assert masked_texts(title, body, 2026) == [facts.masked for facts in analyse_text(title, body, 2026)]
    assert masked_texts(title, body, 2026)
