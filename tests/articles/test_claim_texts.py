"""The claim texts the index sync embeds per version come from the conflict checker's registered function; a
failure of that function on one article never keeps the article's chunks out of the index."""
import pytest

from articles import claim_texts as claim_texts_module
from articles.claim_texts import claim_texts, claim_texts_register
from articles.models import Chunk, VersionClaimVectors
from articles.services import articles_reindex
from tests.factories import make_article


@pytest.fixture
def failing_parser():
    registered = claim_texts_module._provider

    def parser(title: str, body: str):
        if "€" in body:
            raise ValueError("the parser cannot read this text")
        return [body]

    claim_texts_register(parser)
    yield parser
    claim_texts_register(registered)


@pytest.mark.django_db
def test_an_article_the_claim_function_fails_on_is_still_indexed_without_claim_vectors(kb, failing_parser):
    assert claim_texts(title="Pool", body="A day pass costs €12.") is None
    unreadable = make_article(kb, "faq-pool", "A day pass costs €12.", index=False)
    readable = make_article(kb, "faq-gym", "The gym opens at 7 am.", index=False)
    articles_reindex(article_ids=[unreadable.pk, readable.pk])
    for article in (unreadable, readable):
        article.refresh_from_db()
        assert article.indexed_version_id == article.current_version_id
        assert Chunk.objects.filter(article=article).exists()
    assert list(VersionClaimVectors.objects.values_list("version_id", flat=True)) == [readable.current_version_id]
