"""The index: each article's chunks (and its version's claim vectors) in line with its current version, and the
re-sync jobs that get them there (IndexSyncJob rows, worked under their lease: a knowledge base's stale
articles, or all, on a worker; one article after an edit, in the editing request)."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from pgvector import Vector

from articles.chunking import chunk_body
from articles.claim_texts import claim_text_vectors, claim_texts, matrix_to_bytes, texts_key
from articles.embeddings import embed_texts, encoder_identity
from articles.models import Article, ArticleStatus, Chunk, IndexSyncJob, KnowledgeBase, SyncStatus, VersionClaimVectors
from articles.selectors import stale_articles
from kbreview.foreground import yield_to_foreground
from kbreview.jobs import enqueue
from kbreview.leases import lease_claim, lease_fail, lease_finish, lease_heartbeat

logger = logging.getLogger(__name__)


def article_unindex(*, article: Article) -> None:
    """Take a deleted article out of retrieval."""
    Chunk.objects.filter(article_id=article.pk).delete()
    Article.objects.filter(pk=article.pk).update(indexed_version=None)


@dataclass
class _Planned:
    """One article's index work: its current version's chunks and, when the conflict checker registered
    its function and the version has no vectors for those texts yet, its claim texts, with the vectors this
    process computed already for some of them (`known`: claim_text_vectors)."""

    article: Article
    pieces: list[str]
    claims: list[str] = field(default_factory=list)
    known: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def chunk_texts(self) -> list[str]:
        title = self.article.current_version.title
        return [f"{title}\n{t}" for t in self.pieces]

    @property
    def to_embed(self) -> list[str]:
        return self.chunk_texts + [t for t in self.claims if t not in self.known]


def _index_plan(article_ids: list[int], *, claims: bool = True) -> list[_Planned]:
    """The chunks (and, with `claims`, the claim texts) to embed for these articles' current versions;
    deleted ones leave the index here."""
    articles = list(
        Article.objects.filter(pk__in=article_ids).select_related("current_version").order_by("pk")
    )
    stored = dict(VersionClaimVectors.objects.filter(
        version_id__in=[a.current_version_id for a in articles if a.current_version_id and claims]
    ).values_list("version_id", "key"))
    planned: list[_Planned] = []
    for article in articles:
        if article.status != ArticleStatus.ACTIVE or article.current_version is None:
            with transaction.atomic():
                article_unindex(article=article)
            continue
        version = article.current_version
        texts = (claim_texts(title=version.title, body=version.body) or []) if claims else []
        if stored.get(version.id) == texts_key(texts):
            texts = []  # stored already for these very texts (a full re-sync of an unchanged version)
        planned.append(_Planned(article, chunk_body(version.body), texts, claim_text_vectors.known(texts)))
    return planned


def _index_texts(planned: list[_Planned]) -> list[str]:
    """What the encoder embeds for these articles, in one call: their chunks and the claim texts without a
    vector, each text once (two articles may share a chunk or a sentence)."""
    return list(dict.fromkeys(text for item in planned for text in item.to_embed))


def _index_embed(texts: list[str]) -> dict[str, np.ndarray]:
    return dict(zip(texts, embed_texts(texts)))


def _index_write(planned: list[_Planned], embedded: dict[str, np.ndarray]) -> int:
    """Swap the planned articles' chunks (and store their claim vectors) in one transaction, a few statements
    for the whole batch: written article by article, its ~7 statements and a commit each kept the encoder
    waiting for the database (bench/index.py). An article changed since it was planned is skipped, because the
    change that made it stale will index it itself. `embedded`: the vectors of _index_texts(planned), by text."""
    if not planned:
        return 0
    claim_text_vectors.keep({text: embedded[text] for item in planned for text in item.claims
                             if text not in item.known}, encoder=encoder_identity())
    with transaction.atomic():
        # An article another transaction holds is being changed (an edit, an import, a source sync), and that
        # change re-indexes it: it is skipped, not waited for — waiting held the batch's other locks, and an import
        # locking articles in its file's order could deadlock with it.
        locked = dict(
            Article.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[item.article.pk for item in planned], status=ArticleStatus.ACTIVE)
            .order_by("pk")
            .values_list("pk", "current_version_id")
        )
        current = [item for item in planned if locked.get(item.article.pk) == item.article.current_version_id]
        if not current:
            return 0
        current_ids = [item.article.pk for item in current]
        Chunk.objects.filter(article_id__in=current_ids).delete()
        written = _chunks_copy([
            (item.article.knowledge_base_id, item.article.pk, item.article.current_version_id, i,
             item.article.current_version.title, text, Vector(embedded[chunk_text]).to_binary())
            for item in current
            for i, (text, chunk_text) in enumerate(zip(item.pieces, item.chunk_texts))
        ])
        claim_rows = [_claim_vectors_row(item, embedded) for item in current if item.claims]
        if claim_rows:
            VersionClaimVectors.objects.bulk_create(
                claim_rows, update_conflicts=True, unique_fields=["version"],
                update_fields=["key", "count", "dimensions", "vectors"])
        Article.objects.filter(pk__in=current_ids).update(indexed_version_id=F("current_version_id"))
    return written


# Chunk columns as COPY writes them, with their types in PostgreSQL's binary format; the embedding goes as
# pgvector's own binary form (Vector.to_binary), the search vector is generated by the server.
CHUNK_COPY_COLUMNS = (("knowledge_base_id", "int8"), ("article_id", "int8"), ("version_id", "int8"), ("ordinal", "int4"),
                      ("title", "text"), ("text", "text"), ("embedding", "bytea"))


def _chunks_copy(rows: list[tuple]) -> int:
    """Insert chunk rows (in CHUNK_COPY_COLUMNS' order) with one binary COPY, inside the caller's transaction. An
    INSERT through bulk_create spent about 0.5 s of this process's CPU per 1,400 chunks building the statement and
    the vectors' text, and the server more parsing it, beside an encoder that already fills both cores
    (bench/index.py)."""
    columns = ", ".join(connection.ops.quote_name(name) for name, _ in CHUNK_COPY_COLUMNS)
    with connection.cursor() as cursor, cursor.copy(
            f"COPY {connection.ops.quote_name(Chunk._meta.db_table)} ({columns}) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types([kind for _, kind in CHUNK_COPY_COLUMNS])
        for row in rows:
            copy.write_row(row)
    return len(rows)


def _claim_vectors_row(item: _Planned, embedded: dict[str, np.ndarray]) -> VersionClaimVectors:
    vectors = np.stack([item.known[t] if t in item.known else embedded[t] for t in item.claims])
    return VersionClaimVectors(version=item.article.current_version, key=texts_key(item.claims), count=len(item.claims),
                               dimensions=vectors.shape[1], vectors=matrix_to_bytes(vectors))


def _index_batch(article_ids: list[int], *, claims: bool = True) -> int:
    """Embed the current versions of these articles (outside any lock), then swap their chunks."""
    planned = _index_plan(article_ids, claims=claims)
    return _index_write(planned, _index_embed(_index_texts(planned)))


def _index_pipelined(
    article_ids: list[int], *, batch_size: int, on_progress: Callable[[int, int], None] | None = None,
    before_batch: Callable[[], object] | None = None,
) -> int:
    """Index in batches, embedding the next batch in a worker thread while this one writes the last:
    the encoder (which releases the GIL) never waits for the database. Only this thread touches the database.
    `before_batch` is called before each batch after the first is handed to the encoder (a worker yields
    to replies there)."""
    total, written = len(article_ids), 0
    batches = [article_ids[start : start + batch_size] for start in range(0, total, batch_size)]
    if on_progress:
        on_progress(0, total)
    if not batches:
        return 0
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="encoder") as encoder:
        planned = _index_plan(batches[0])
        pending = encoder.submit(_index_embed, _index_texts(planned))
        carried: dict[str, np.ndarray] = {}
        for number in range(len(batches)):
            following = _index_plan(batches[number + 1]) if number + 1 < len(batches) else None
            vectors = {**carried, **pending.result()}
            if following is not None:
                if before_batch is not None:
                    before_batch()  # the encoder is idle and this thread waits: nothing of the re-sync runs
                # The next batch was planned before this one's vectors were known: what both embed (a sentence
                # many articles state) is not sent to the encoder again.
                texts = _index_texts(following)
                carried = {text: vectors[text] for text in texts if text in vectors}
                pending = encoder.submit(_index_embed, [text for text in texts if text not in carried])
            written += _index_write(planned, vectors)
            planned = following
            if on_progress:
                on_progress(min((number + 1) * batch_size, total), total)
    return written


def article_reindex(*, article_id: int) -> int:
    """Bring one article's chunks in line with its current version (or remove them), before returning: a
    re-index job for the article, enqueued and run here at once under its lease (the worker its message
    reaches finds it done). This is what makes a reviewer's fix reach retrieval before their request returns.
    Returns the chunks written."""
    knowledge_base_id = Article.objects.values_list("knowledge_base_id", flat=True).get(pk=article_id)
    job = enqueue(IndexSyncJob(knowledge_base_id=knowledge_base_id, article_id=article_id))
    return _index_sync_job_work(job_id=job.pk)[1]


def articles_reindex(*, article_ids: list[int], batch_size: int = 64) -> int:
    """Bring just these articles' chunks in line with their current versions (a source sync's changes)."""
    return _index_pipelined(article_ids, batch_size=batch_size)


def stale_article_ids(*, knowledge_base: KnowledgeBase) -> list[int]:

    return list(stale_articles(knowledge_base=knowledge_base).values_list("pk", flat=True))


# A re-sync reports at least this many times (batches of 8 to 64 articles). Not more: each batch is one encoder
# call, and the encoder packs few texts per call badly — 600 articles in 20 batches of 30 took 22-24 s, in batches
# of 64 19.5 s, the raw encoder 16-17.5 s on the same texts (bench/index.py, side by side).
PROGRESS_STEPS = 10


def progress_batch_size(total: int, *, smallest: int = 8, largest: int = 64) -> int:
    """Articles per batch for a re-sync of `total`: small enough that progress moves in about
    PROGRESS_STEPS steps (73 articles in batches of 64 showed 0% for most of the run, then 87%), large
    enough that the encoder still gets full batches."""
    return max(smallest, min(largest, -(-total // PROGRESS_STEPS)))


def index_resync(
    *,
    knowledge_base: KnowledgeBase,
    full: bool = False,
    batch_size: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    before_batch: Callable[[], object] | None = None,
) -> int:
    """Re-embed what is stale (or everything with `full`). Returns the number of chunks written."""
    if full:
        ids = list(
            Article.objects.filter(knowledge_base=knowledge_base).order_by("pk").values_list("pk", flat=True)
        )
    else:
        ids = stale_article_ids(knowledge_base=knowledge_base)
    batch_size = batch_size or progress_batch_size(len(ids))
    return _index_pipelined(ids, batch_size=batch_size, on_progress=on_progress, before_batch=before_batch)


def index_sync_start(*, knowledge_base: KnowledgeBase, full: bool = False, actor=None) -> IndexSyncJob:
    """Record a re-sync job (the work row) and have a worker run it once the transaction commits."""
    return enqueue(IndexSyncJob(knowledge_base=knowledge_base, full=full, requested_by=actor))


def index_sync_job_run(*, job_id: int) -> IndexSyncJob:
    """Claim a queued job (kbreview.leases) and run it, reporting progress after every batch (the lease's
    heartbeat). A finished job, or one another live worker holds, is left alone (idempotent); one whose worker
    died (no heartbeat within CELERY_TASK_TIME_LIMIT) is taken over and restarted."""
    return _index_sync_job_work(job_id=job_id)[0]


def _index_sync_job_work(*, job_id: int) -> tuple[IndexSyncJob, int]:
    """index_sync_job_run, also returning the chunks written (0 when the job was not ours to run)."""
    claim = lease_claim(IndexSyncJob, pk=job_id)
    job = IndexSyncJob.objects.select_related("knowledge_base").get(pk=job_id)
    if claim is None:
        return job, 0

    def report(done: int, total: int) -> None:
        lease_heartbeat(job, done=done, total=total)

    try:
        if job.article_id is not None:
            # Chunks only: a fix must reach retrieval within its request, and embedding the claims about
            # doubles the encoder's work. A turn's check embeds this version's claims on first sight instead
            # (and a full re-sync stores them).
            written = _index_batch([job.article_id], claims=False)
            report(1, 1)
        else:
            # Between batches of a long re-sync a worker yields to replies, as before each task.
            written = index_resync(knowledge_base=job.knowledge_base, full=job.full, on_progress=report,
                                   before_batch=yield_to_foreground)
    except Exception as exc:
        lease_fail(job, f"{type(exc).__name__}: {exc}")
        raise
    lease_finish(job, status=SyncStatus.DONE, finished_at=timezone.now())
    job.refresh_from_db()
    return job, written


def index_sync_follow(job: IndexSyncJob, *, grace_s: float, say: Callable[[str], object] = logger.info,
                      poll_s: float = 0.5) -> IndexSyncJob:
    """Follow a committed re-sync job to its end, saying its progress (a command waiting for the workers). One no
    worker has taken after `grace_s` (none running, broker down) is run here, through the same lease, so it
    runs once."""
    started, shown = time.monotonic(), None
    slug = job.knowledge_base.slug
    while True:
        job.refresh_from_db()
        if job.status in (SyncStatus.DONE, SyncStatus.FAILED):
            return job
        if job.status == SyncStatus.QUEUED and time.monotonic() - started >= grace_s:
            say(f"no worker took job {job.pk} within {grace_s:g} s; embedding here")
            try:
                index_sync_job_run(job_id=job.pk)
            except Exception:
                job.refresh_from_db()
                if job.status != SyncStatus.FAILED:  # not an embedding failure the row records
                    raise
            continue
        if job.status == SyncStatus.RUNNING and (job.done, job.total) != shown:
            shown = (job.done, job.total)
            say(f"{slug}: {job.done}/{job.total} articles")
        time.sleep(poll_s)
