import pytest

from articles.indexing import article_reindex
from articles.selectors import search
from articles.services import article_edit
from tests.factories import make_article


@pytest.fixture
def ferry_kb(kb):
    make_article(kb, "faq-refund", "Tickets are refundable up to 24 hours before departure. After that we offer a voucher.")
    make_article(kb, "faq-pets", "Dogs and cats may travel with you on the outer deck if kept on a lead or in a carrier.")
    make_article(kb, "faq-parking", "The harbour car park costs 12 euros per day. Long-stay permits are sold at the kiosk.")
    make_article(kb, "faq-bikes", "Bicycles can be taken on board; stow them on the lower vehicle deck.")
    make_article(kb, "faq-xyl", "Passengers with a Zephyrquill pass board through gate 4.")
    return kb


@pytest.mark.django_db
def test_paraphrase_is_found_by_meaning(ferry_kb):
    hits = search(knowledge_base=ferry_kb, question="Can I take my puppy on the boat?")
    assert hits[0].external_ref == "faq-pets"
    assert hits[0].vector_rank == 1


@pytest.mark.django_db
def test_rare_exact_term_is_found_by_full_text(ferry_kb):
    hits = search(knowledge_base=ferry_kb, question="zephyrquill")
    assert hits[0].external_ref == "faq-xyl"
    assert hits[0].text_rank == 1


@pytest.mark.django_db
def test_search_never_crosses_knowledge_bases(ferry_kb, other_kb):
    make_article(other_kb, "other-pets", "Pets are never allowed on our buses, dogs included.")
    refs = {h.external_ref for h in search(knowledge_base=ferry_kb, question="can my dog come along", limit=10)}
    assert "other-pets" not in refs
    other_refs = {h.external_ref for h in search(knowledge_base=other_kb, question="can my dog come along")}
    assert other_refs == {"other-pets"}


@pytest.mark.django_db
def test_old_text_disappears_right_after_reindex(ferry_kb):
    from articles.models import Article

    article = Article.objects.get(knowledge_base=ferry_kb, external_ref="faq-parking")
    article_edit(
        article=article,
        expected_version_id=article.current_version_id,
        body="The harbour car park costs 15 euros per day from March.",
    )
    article_reindex(article_id=article.pk)
    texts = " ".join(h.chunk_text for h in search(knowledge_base=ferry_kb, question="how much is parking per day", limit=10))
    assert "15 euros" in texts
    assert "12 euros" not in texts


@pytest.mark.django_db
def test_deleted_articles_are_not_returned(ferry_kb):
    from articles.models import Article
    from articles.services import article_delete

    article_delete(article=Article.objects.get(knowledge_base=ferry_kb, external_ref="faq-pets"))
    refs = {h.external_ref for h in search(knowledge_base=ferry_kb, question="Can I take my puppy on the boat?", limit=10)}
    assert "faq-pets" not in refs


@pytest.mark.django_db
def test_an_edit_reaches_retrieval_through_a_re_index_job_the_request_runs_itself(kb, django_capture_on_commit_callbacks):
    """An article's re-index after an edit is a job row (so the worker its message reaches finds it done), run
    at once in the editing request; the ops page's latest re-sync is never such a one-article job."""
    from articles.models import IndexSyncJob, SyncStatus
    from articles.selectors import latest_index_sync_job

    article = make_article(kb, "faq-hours", "The office opens at nine.")
    article_edit(article=article, expected_version_id=article.current_version_id, body="The office opens at ten.")
    with django_capture_on_commit_callbacks(execute=True) as sent:
        assert article_reindex(article_id=article.pk) > 0
    job = IndexSyncJob.objects.filter(article=article).latest("created_at")
    assert (job.status, job.done, job.total, job.attempts) == (SyncStatus.DONE, 1, 1, 1)
    assert len(sent) == 1  # its task went to the broker; run there (eagerly here) it finds the job done
    job.refresh_from_db()
    assert job.attempts == 1
    assert "ten" in search(knowledge_base=kb, question="When does the office open?")[0].chunk_text
    assert latest_index_sync_job(knowledge_base=kb) is None
