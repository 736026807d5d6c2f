"""agents.claims.words: the function words that say nothing of what a claim is about (used by analysis and subject)."""
from __future__ import annotations

import re

import pytest

from agents.claims.analysis import content_stems
from agents.claims.subject import phrase_stems
from agents.claims.words import STOPWORDS


def test_stopwords_are_lower_case_words_as_the_readers_compare_them():
    # content_stems and the subject reader lower-case a word before they look it up: a capitalised or padded entry
    # would never match.
    assert all(re.fullmatch(r"[a-z]+", word) for word in STOPWORDS)


@pytest.mark.parametrize("word", ["the", "of", "within", "per", "please", "via", "not", "only"])
def test_function_words_are_stopwords(word):
    assert word in STOPWORDS


@pytest.mark.parametrize("word", ["refund", "locker", "member", "price", "online", "free", "open", "daily", "monday"])
def test_words_that_say_what_a_claim_is_about_are_not(word):
    assert word not in STOPWORDS


def test_the_readers_leave_stopwords_out():
    assert content_stems("Lockers within the gym are for members only") == {"locker", "gym", "member"}
    assert phrase_stems("The Harbour gym") == {"harbour", "gym"}
