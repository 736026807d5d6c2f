"""The claim texts the index sync embeds per version come from the conflict checker's registered function; a
failure of that function on one article never keeps the article's chunks out of the index."""
import numpy as np
import pytest

from articles import claim_texts as claim_texts_module
from articles.claim_texts import claim_texts, claim_texts_register
from articles.indexing import articles_reindex
from articles.models import Chunk, VersionClaimVectors
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


@pytest.mark.django_db
def test_vectors_stored_by_another_encoder_are_neither_read_nor_kept_by_a_full_resync(kb, settings):
    """Switching EMBEDDING_MODEL_PATH or EMBEDDING_BACKEND makes a full re-sync embed the claims again (as it
    does the chunks), and a turn's check computes its own rather than mixing in the other encoder's vectors."""
    from agents.claims.analysis import VECTOR_CACHE_ARTICLES
    from articles.claim_vectors import StoredFirstEncoder
    from articles.indexing import _index_plan

    article = make_article(kb, "faq-pool", "A day pass costs €12. The pool opens at 7 am.", index=False)
    articles_reindex(article_ids=[article.pk])
    version = article.current_version
    texts = claim_texts(title=version.title, body=version.body)
    assert texts and VersionClaimVectors.objects.filter(version=version).exists()
    assert _index_plan([article.pk])[0].claims == []  # stored for these texts by this encoder: not embedded again

    encoded: list[list[str]] = []
    def encode(batch):
        encoded.append(list(batch))
        return np.zeros((len(batch), 384), dtype=np.float32)

    for setting, value in (("EMBEDDING_MODEL_PATH", "/models/another-minilm"), ("EMBEDDING_BACKEND", "onnx-int8")):
        original = getattr(settings, setting)
        setattr(settings, setting, value)
        assert _index_plan([article.pk])[0].claims == texts  # a full re-sync embeds them with this encoder
        encoder = StoredFirstEncoder(encode, max_entries=VECTOR_CACHE_ARTICLES)
        encoder.load(knowledge_base_id=kb.pk, version_ids=[version.pk])
        assert not encoder(texts).any() and encoded[-1] == texts  # computed, not the other encoder's vectors
        setattr(settings, setting, original)
    encoded.clear()
    encoder = StoredFirstEncoder(encode, max_entries=VECTOR_CACHE_ARTICLES)
    encoder.load(knowledge_base_id=kb.pk, version_ids=[version.pk])
    assert encoder(texts).any() and encoded == []  # the same encoder reads what it stored
