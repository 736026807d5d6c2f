import json

import pytest

from articles.indexing import index_resync
from articles.ingest import IngestError
from articles.models import Article, ArticleStatus, ArticleVersion, AuditAction, Chunk
from articles.selectors import stale_articles
from articles.services import (
    StaleVersionError,
    article_delete,
    article_edit,
    article_restore,
    article_version_restore,
    articles_import_paths,
)
from tests.factories import article_audit, make_article


def write_json(path, items):
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


FAQ = [
    {"ref": "faq-refund", "question": "Can I get a refund?", "answer": "Tickets are refundable up to 24 hours before departure.", "updated_at": "2026-01-10"},
    {"ref": "faq-pets", "question": "Can I bring my dog?", "answer": "Dogs travel free on the outer deck when kept on a lead."},
]


@pytest.mark.django_db
def test_import_creates_articles_versions_chunks_and_audit(kb, tmp_path):
    report = articles_import_paths(knowledge_base=kb, paths=[write_json(tmp_path / "faq.json", FAQ)])
    assert sorted(report.created) == ["faq-pets", "faq-refund"]
    article = Article.objects.get(knowledge_base=kb, external_ref="faq-refund")
    assert article.current_version.number == 1
    assert article.current_version.updated_at.isoformat() == "2026-01-10"
    assert article.indexed_version_id == article.current_version_id
    assert Chunk.objects.filter(article=article).count() >= 1
    assert article_audit(article.pk).filter(action=AuditAction.ARTICLE_CREATED).count() == 1


@pytest.mark.django_db
def test_reimport_is_idempotent_and_changes_make_one_new_version(kb, tmp_path):
    path = write_json(tmp_path / "faq.json", FAQ)
    articles_import_paths(knowledge_base=kb, paths=[path])
    again = articles_import_paths(knowledge_base=kb, paths=[path])
    assert again.created == [] and again.updated == []
    assert sorted(again.unchanged) == ["faq-pets", "faq-refund"]
    assert ArticleVersion.objects.filter(article__knowledge_base=kb).count() == 2

    changed = [dict(FAQ[0], answer="Tickets are refundable up to 48 hours before departure."), FAQ[1]]
    report = articles_import_paths(knowledge_base=kb, paths=[write_json(path, changed)])
    assert report.updated == ["faq-refund"]
    article = Article.objects.get(knowledge_base=kb, external_ref="faq-refund")
    assert article.current_version.number == 2
    assert article.versions.count() == 2


@pytest.mark.django_db
def test_bad_file_rolls_back_the_whole_import(kb, tmp_path):
    good = write_json(tmp_path / "a.json", FAQ)
    bad = tmp_path / "b.csv"
    bad.write_text("ref,title\nx,Only a title\n", encoding="utf-8")
    with pytest.raises(IngestError) as excinfo:
        articles_import_paths(knowledge_base=kb, paths=[good, bad])
    assert "b.csv" in str(excinfo.value)
    assert not Article.objects.filter(knowledge_base=kb).exists()


@pytest.mark.django_db
def test_duplicate_refs_across_files_are_refused_and_nothing_written(kb, tmp_path):
    first = write_json(tmp_path / "a.json", FAQ[:1])
    second = write_json(tmp_path / "b.json", FAQ[:1])
    with pytest.raises(IngestError, match="duplicate ref 'faq-refund'"):
        articles_import_paths(knowledge_base=kb, paths=[first, second])
    assert not Article.objects.filter(knowledge_base=kb).exists()


@pytest.mark.django_db
def test_same_ref_in_two_knowledge_bases_is_two_articles(kb, other_kb):
    a = make_article(kb, "faq-x", "Parking costs 5 euros.", index=False)
    b = make_article(other_kb, "faq-x", "Parking is free.", index=False)
    assert a.pk != b.pk
    assert Article.objects.filter(external_ref="faq-x").count() == 2


@pytest.mark.django_db
def test_edit_writes_new_version_and_refuses_stale_edits(kb):
    article = make_article(kb, "faq-hours", "Open 9 am to 5 pm.")
    v1 = article.current_version_id
    v2 = article_edit(article=article, expected_version_id=v1, body="Open 8 am to 6 pm.", note="new hours")
    assert v2.number == 2 and v2.reason == "edit"
    with pytest.raises(StaleVersionError, match="changed by someone else"):
        article_edit(article=article, expected_version_id=v1, body="Open 10 am to 4 pm.")
    article.refresh_from_db()
    assert article.current_version.body == "Open 8 am to 6 pm."
    assert article_audit(article.pk).filter(action=AuditAction.ARTICLE_VERSION_ADDED).count() == 2


@pytest.mark.django_db
def test_soft_delete_removes_from_index_and_restore_brings_it_back(kb):
    article = make_article(kb, "faq-lockers", "Lockers cost 3 euros per day.")
    article_delete(article=article, note="obsolete")
    article.refresh_from_db()
    assert article.status == ArticleStatus.DELETED
    assert not Chunk.objects.filter(article=article).exists()
    assert article.versions.count() == 1  # history kept
    article_restore(article=article)
    article.refresh_from_db()
    assert article.status == ArticleStatus.ACTIVE
    assert Chunk.objects.filter(article=article, version=article.current_version).exists()
    actions = list(article_audit(article.pk).values_list("action", flat=True))
    assert AuditAction.ARTICLE_DELETED in actions and AuditAction.ARTICLE_RESTORED in actions


@pytest.mark.django_db
def test_version_restore_is_a_new_version_with_old_text(kb):
    article = make_article(kb, "faq-wifi", "Wi-Fi is free on board.")
    first = article.current_version
    article_edit(article=article, expected_version_id=first.pk, body="Wi-Fi costs 2 euros.")
    article.refresh_from_db()
    restored = article_version_restore(article=article, version=first, expected_version_id=article.current_version_id)
    assert restored.number == 3 and restored.body == first.body and restored.reason == "restore"


@pytest.mark.django_db
def test_incremental_resync_touches_only_changed_articles(kb):
    a = make_article(kb, "faq-a", "Bikes travel free on all routes.")
    b = make_article(kb, "faq-b", "Cars must check in 30 minutes before departure.")
    chunk_ids_b = set(Chunk.objects.filter(article=b).values_list("pk", flat=True))
    article_edit(article=a, expected_version_id=a.current_version_id, body="Bikes cost 4 euros on all routes.")
    assert list(stale_articles(knowledge_base=kb).values_list("external_ref", flat=True)) == ["faq-a"]
    progress = []
    index_resync(knowledge_base=kb, on_progress=lambda done, total: progress.append((done, total)))
    assert progress[-1] == (1, 1)
    assert set(Chunk.objects.filter(article=b).values_list("pk", flat=True)) == chunk_ids_b  # untouched
    assert not stale_articles(knowledge_base=kb).exists()
    assert Chunk.objects.get(article=a).text == "Bikes cost 4 euros on all routes."


# --- re-sync jobs: claimed once, progress with a heartbeat, a failure that says why ---------------


@pytest.mark.django_db
def test_a_sync_job_is_claimed_once_and_reports_progress(kb):
    import datetime as dt

    from django.conf import settings
    from django.utils import timezone

    from articles.indexing import index_sync_job_run
    from articles.models import IndexSyncJob, SyncStatus
    from tests.factories import make_article

    make_article(kb, "faq-a", "Alpha text.", index=False)
    now = timezone.now()  # held under a live worker's lease
    held = IndexSyncJob.objects.create(knowledge_base=kb, status=SyncStatus.RUNNING, claimed_at=now, heartbeat_at=now)
    assert index_sync_job_run(job_id=held.pk).status == SyncStatus.RUNNING  # a live worker has it
    IndexSyncJob.objects.filter(pk=held.pk).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)
    )
    job = index_sync_job_run(job_id=held.pk)  # that worker died: taken over and run to the end
    assert (job.status, job.done, job.total, job.attempts) == (SyncStatus.DONE, 1, 1, 1)
    assert job.started_at <= job.heartbeat_at <= job.finished_at
    assert job.rate_per_s > 0
    assert index_sync_job_run(job_id=job.pk).finished_at == job.finished_at  # finished: left alone


@pytest.mark.django_db
def test_a_sync_job_yields_to_the_foreground_between_batches(kb, monkeypatch):
    import functools
    import threading

    from articles import indexing as services
    from articles.models import IndexSyncJob
    from tests.factories import make_article

    monkeypatch.setattr(services, "index_resync", functools.partial(services.index_resync, batch_size=1))
    for n in range(3):
        make_article(kb, f"faq-{n}", f"Text number {n}.", index=False)
    job = IndexSyncJob.objects.create(knowledge_base=kb, full=True)
    embedding = threading.Lock()  # held while the encoder thread embeds a batch
    real_embed = services.embed_texts

    def embed_texts(texts):
        with embedding:
            return real_embed(texts)

    seen_when_yielding = []
    monkeypatch.setattr(services, "embed_texts", embed_texts)
    monkeypatch.setattr(services, "yield_to_foreground", lambda: seen_when_yielding.append(
        (IndexSyncJob.objects.get(pk=job.pk).done, embedding.locked())) or 0.0)
    services.index_sync_job_run(job_id=job.pk)
    # Before the second and third batches are embedded, with no embedding under way; not after the last.
    assert seen_when_yielding == [(0, False), (1, False)]


@pytest.mark.django_db
def test_a_failed_sync_job_records_why(kb, monkeypatch):
    from articles import indexing as services
    from articles.models import IndexSyncJob, SyncStatus
    from tests.factories import make_article

    make_article(kb, "faq-a", "Alpha text.", index=False)
    job = IndexSyncJob.objects.create(knowledge_base=kb, full=True)

    def broken_write(planned, vectors):
        raise OSError("No space left on device")

    monkeypatch.setattr(services, "_index_write", broken_write)  # the re-sync's database writes fail
    with pytest.raises(OSError):
        services.index_sync_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == SyncStatus.FAILED and job.finished_at is not None
    assert job.error == "OSError: No space left on device"


@pytest.mark.django_db
def test_the_index_sync_stores_each_versions_claim_vectors_once(kb, monkeypatch):
    """The texts come from the function the conflict checker registers (conflicts.apps); a batch sync embeds
    them in the chunks' encoder call and stores them per version, and a re-sync of an unchanged version
    embeds none. A single article's re-index (a reviewer's fix, which must be quick) stores chunks only."""
    from articles import indexing as services
    from articles.claim_texts import claim_texts, texts_key
    from articles.embeddings import embed_texts
    from articles.models import VersionClaimVectors
    from articles.selectors import version_claim_vectors

    body = "A day pass costs €12. Lockers are free for members.\n\nThe pool opens at 7 am on weekdays."
    article = make_article(kb, "faq-pool", body)  # a single article's re-index (a fix) stores chunks only
    assert not VersionClaimVectors.objects.exists()
    services.articles_reindex(article_ids=[article.pk])  # a batch sync stores the claims too
    texts = claim_texts(title=article.current_version.title, body=body)
    assert len(texts) == 3
    row = VersionClaimVectors.objects.get(version=article.current_version)
    assert (row.key, row.count) == (texts_key(texts), 3)
    (key, stored), = version_claim_vectors(knowledge_base_id=kb.pk, version_ids=[row.version_id]).values()
    assert stored.shape == (3, row.dimensions)
    assert float((stored * embed_texts(texts)).sum(axis=1).min()) > 0.99  # the same vectors as computed now

    embedded: list[str] = []
    monkeypatch.setattr(services, "embed_texts", lambda batch: embedded.extend(batch) or embed_texts(batch))
    index_resync(knowledge_base=kb, full=True)
    assert embedded and not set(texts) & set(embedded)  # chunks again, the claims of the same version not
    version = article_edit(article=article, expected_version_id=article.current_version_id,
                           body=body.replace("€12", "€14"))
    services.articles_reindex(article_ids=[article.pk])
    assert VersionClaimVectors.objects.filter(version__article=article).count() == 2
    assert list(version_claim_vectors(knowledge_base_id=kb.pk, version_ids=[version.pk])) == [version.pk]
    assert version_claim_vectors(knowledge_base_id=kb.pk + 1, version_ids=[version.pk]) == {}


@pytest.mark.django_db(transaction=True)
def test_a_sync_jobs_progress_is_committed_batch_by_batch(kb, monkeypatch):
    """Issue 29 (6): the ops page polls the job row from another connection while the worker runs it; what that
    connection reads must move as batches are written (73 articles used to show 0 until 64 were done)."""
    import threading

    from django.db import connection

    from articles import indexing as services
    from articles.models import IndexSyncJob, SyncStatus

    for n in range(73):
        make_article(kb, f"faq-{n}", f"Locker {n} costs {n % 9 + 2} euros.", index=False)
    job = IndexSyncJob.objects.create(knowledge_base=kb, full=True)
    real_embed, seen = services.embed_texts, []

    def read_elsewhere():
        try:
            seen.append(IndexSyncJob.objects.get(pk=job.pk).done)
        finally:
            connection.close()

    def embed_texts(texts):
        reader = threading.Thread(target=read_elsewhere)  # its own connection, as the polling page has
        reader.start()
        reader.join()
        return real_embed(texts)

    monkeypatch.setattr(services, "embed_texts", embed_texts)
    services.index_sync_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (SyncStatus.DONE, 73, 73)
    assert seen == sorted(seen) and len({d for d in seen if 0 < d < 73}) >= 6, seen


def test_a_resync_reports_about_ten_times_in_batches_the_encoder_can_fill():
    from articles.indexing import PROGRESS_STEPS, progress_batch_size

    assert PROGRESS_STEPS == 10
    # Each batch is one encoder call: 600 articles go in batches of 60 (20 batches of 30 encoded ~15% slower).
    assert [progress_batch_size(n) for n in (3, 73, 600, 10_000)] == [8, 8, 60, 64]


@pytest.mark.django_db
def test_a_batch_is_written_in_a_few_statements_whatever_its_size(kb):
    """The index sync's writes kept the encoder waiting when each article took ~7 statements and a commit of
    its own (bench/index.py): a batch of 12 articles costs the statements a batch of 2 does."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from articles import indexing

    def write_statements(refs: list[str]) -> int:
        ids = [make_article(kb, ref, f"Kayak rental {ref} costs {len(ref)} euros per hour.", index=False).pk
               for ref in refs]
        planned = indexing._index_plan(ids)
        vectors = indexing._index_embed(indexing._index_texts(planned))
        with CaptureQueriesContext(connection) as queries:
            assert indexing._index_write(planned, vectors) == len(ids)
        return len(queries)

    small = write_statements(["kayak-a", "kayak-b"])
    assert write_statements([f"kayak-{n}" for n in range(12)]) == small
    assert Chunk.objects.filter(article__knowledge_base=kb).count() == 14


@pytest.mark.django_db
def test_a_batch_skips_an_article_edited_after_it_was_planned(kb):
    from articles import indexing

    kept = make_article(kb, "canoe-a", "Canoes leave the jetty at 9 am.", index=False)
    edited = make_article(kb, "canoe-b", "Paddles are included.", index=False)
    planned = indexing._index_plan([kept.pk, edited.pk])
    vectors = indexing._index_embed(indexing._index_texts(planned))
    article_edit(article=edited, expected_version_id=edited.current_version_id, body="Paddles cost 3 euros.")
    indexing._index_write(planned, vectors)
    assert Chunk.objects.filter(article=kept).exists()
    # the edit indexes the article itself; this stale batch wrote nothing of its old text
    assert not Chunk.objects.filter(article=edited, text="Paddles are included.").exists()


@pytest.mark.django_db(transaction=True)
def test_a_batch_skips_an_article_another_transaction_holds_instead_of_waiting(kb):
    """Whoever holds an article's row lock is changing it and re-indexes it; waiting held the batch's other locks
    (and could deadlock with an import locking articles in its file's order)."""
    from django.db import connection

    from articles import indexing

    held = make_article(kb, "raft-a", "Rafts leave at noon.", index=False)
    free = make_article(kb, "raft-b", "Helmets are provided.", index=False)
    planned = indexing._index_plan([held.pk, free.pk])
    vectors = indexing._index_embed(indexing._index_texts(planned))
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.execute("BEGIN")
        other.execute("SELECT 1 FROM articles_article WHERE id = %s FOR UPDATE", [held.pk])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")  # the old write waited here, then failed
        try:
            indexing._index_write(planned, vectors)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert Chunk.objects.filter(article=free).exists()
    assert not Chunk.objects.filter(article=held).exists()
    assert list(stale_articles(knowledge_base=kb).values_list("external_ref", flat=True)) == ["raft-a"]
