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


@pytest.fixture
def no_kept_vectors():
    from articles.claim_texts import claim_text_vectors

    claim_text_vectors.clear()
    yield claim_text_vectors
    claim_text_vectors.clear()


@pytest.fixture
def two_articles_sharing_a_sentence(kb):
    shared = "Lockers are free for members of the club."
    return (make_article(kb, "faq-pool", f"The pool opens at 7 am on weekdays. {shared}", index=False),
            make_article(kb, "faq-gym", f"The gym closes at 10 pm every evening. {shared}", index=False))


@pytest.fixture
def encoder_calls(monkeypatch) -> list[list[str]]:
    """The texts of every call the index sync makes to the encoder (which still embeds them)."""
    from articles import indexing
    from articles.embeddings import embed_texts

    calls: list[list[str]] = []
    monkeypatch.setattr(indexing, "embed_texts", lambda batch: calls.append(list(batch)) or embed_texts(batch))
    return calls


@pytest.mark.django_db
def test_the_index_sync_embeds_each_text_once_and_no_claim_text_it_embedded_before(
        kb, two_articles_sharing_a_sentence, encoder_calls, no_kept_vectors):
    """Chunks and claim texts go to the encoder in one call per batch, each text once (two articles stating one
    sentence), and a re-sync after an edit embeds only the sentences that changed; every version still stores
    a vector for each of its claims."""
    from articles.chunking import chunk_body
    from articles.embeddings import embed_texts
    from articles.selectors import version_claim_vectors
    from articles.services import article_edit

    first, second = two_articles_sharing_a_sentence
    calls = encoder_calls

    articles_reindex(article_ids=[first.pk, second.pk])
    (batch,) = calls  # one encoder call for the chunks and the claims of both
    assert len(batch) == len(set(batch))
    claims = {a.pk: claim_texts(title=a.current_version.title, body=a.current_version.body) for a in (first, second)}
    shared_claims = set(claims[first.pk]) & set(claims[second.pk])
    assert shared_claims and shared_claims <= set(batch)
    stored = version_claim_vectors(knowledge_base_id=kb.pk,
                                   version_ids=[first.current_version_id, second.current_version_id])
    for article in (first, second):
        _, vectors = stored[article.current_version_id]
        assert float((vectors * embed_texts(claims[article.pk])).sum(axis=1).min()) > 0.99

    calls.clear()
    body = first.current_version.body.replace("The pool opens", "The sauna opens")
    version = article_edit(article=first, expected_version_id=first.current_version_id, body=body)
    articles_reindex(article_ids=[first.pk])
    changed = set(claim_texts(title=version.title, body=body)) - set(claims[first.pk])
    chunks = {f"{version.title}\n{piece}" for piece in chunk_body(body)}
    assert changed and set(calls[0]) == chunks | changed  # the unchanged sentences are not embedded again
    _, vectors = version_claim_vectors(knowledge_base_id=kb.pk, version_ids=[version.pk])[version.pk]
    assert float((vectors * embed_texts(claim_texts(title=version.title, body=body))).sum(axis=1).min()) > 0.99


@pytest.mark.django_db
def test_a_sentence_of_two_batches_is_embedded_once_although_the_next_batch_is_planned_before_it(
        kb, two_articles_sharing_a_sentence, encoder_calls, no_kept_vectors):
    """The sync plans batch n+1 while batch n is being embedded; what both would embed goes to the encoder once,
    and each version still stores its vector."""
    from articles.embeddings import embed_texts
    from articles.selectors import version_claim_vectors

    first, second = two_articles_sharing_a_sentence
    calls = encoder_calls

    articles_reindex(article_ids=[first.pk, second.pk], batch_size=1)
    assert len(calls) == 2  # one call per batch
    shared_claims = set(claim_texts(title=first.current_version.title, body=first.current_version.body)) & set(
        claim_texts(title=second.current_version.title, body=second.current_version.body))
    assert shared_claims and shared_claims <= set(calls[0]) and not shared_claims & set(calls[1])
    stored = version_claim_vectors(knowledge_base_id=kb.pk,
                                   version_ids=[first.current_version_id, second.current_version_id])
    for article in (first, second):
        texts = claim_texts(title=article.current_version.title, body=article.current_version.body)
        _, vectors = stored[article.current_version_id]
        assert float((vectors * embed_texts(texts)).sum(axis=1).min()) > 0.99


def test_kept_claim_vectors_are_handed_out_only_to_the_encoder_that_computed_them(settings, no_kept_vectors):
    vector = np.ones(384, dtype=np.float32)
    no_kept_vectors.keep({"Lockers are free.": vector}, encoder="minilm\nonnx-opt")
    settings.EMBEDDING_MODEL_PATH, settings.EMBEDDING_BACKEND = "minilm", "onnx-opt"
    assert list(no_kept_vectors.known(["Lockers are free.", "Towels cost extra."])) == ["Lockers are free."]
    settings.EMBEDDING_BACKEND = "onnx-int8"
    assert no_kept_vectors.known(["Lockers are free."]) == {}
