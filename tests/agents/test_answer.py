"""The extractive answer: the question's most similar sentences of the top articles (real MiniLM), in reading order, cited."""
import pytest

from agents.answer import Passage, extractive_answer, select_sentences, split_sentences
from articles.embeddings import embed_texts

PASSES = Passage(
    ref="faq-passes",
    title="Commuter passes",
    text="The pass is personal and cannot be lent.",
    body=(
        "The pass is personal and cannot be lent to anyone else.\n\n"
        "A monthly commuter pass costs 95 euros for adults and 60 euros for students.\n"
        "Lost passes can be replaced at any ticket office for a fee."
    ),
)
CAFE = Passage(
    ref="faq-cafe",
    title="On board",
    text="The café accepts cards and cash.",
    body="Our café on deck 2 accepts cards and cash. Hot pizza is sold on board on every crossing longer than an hour.",
)


@pytest.mark.django_db
def test_quotes_the_sentence_that_answers_not_the_first_one():
    answer = extractive_answer(question="How much does the monthly commuter pass cost?", passages=[PASSES, CAFE], embed=embed_texts)
    assert "95 euros" in answer.reply
    assert "personal" not in answer.reply
    assert answer.citations == ["faq-passes"]
    assert answer.reply.endswith("[[faq-passes]]")


@pytest.mark.django_db
def test_reads_the_best_article_even_when_it_is_not_first():
    answer = extractive_answer(question="Can I buy pizza on the ferry?", passages=[PASSES, CAFE], embed=embed_texts)
    assert "pizza" in answer.reply.lower()
    assert "faq-cafe" in answer.citations


@pytest.mark.django_db
def test_selected_sentences_come_back_in_reading_order():
    chosen = select_sentences(question="monthly commuter pass price for adults and students", passages=[PASSES], embed=embed_texts, limit=3)
    positions = [(s.passage_rank, s.position) for s in chosen]
    assert positions == sorted(positions) and chosen


def test_sentences_split_at_line_breaks_and_sentence_ends():
    assert split_sentences("One. Two costs €5.50 a day.\n- Three") == ["One.", "Two costs €5.50 a day.", "- Three"]


def test_nothing_retrieved_says_so():
    answer = extractive_answer(question="anything", passages=[], embed=embed_texts)
    assert answer.citations == [] and "could not find" in answer.reply
