"""Reads of the knowledge base. Every selector takes the knowledge base, so isolation is the default."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, F, FloatField, Q, QuerySet
from django.db.models.expressions import RawSQL
from pgvector.django import CosineDistance

from articles.claim_texts import matrix_from_bytes
from articles.embeddings import embed_text
from articles.models import (
    Article,
    ArticleStatus,
    ArticleVersion,
    Chunk,
    IndexSyncJob,
    KnowledgeBase,
    Membership,
    VersionClaimVectors,
)
from kbreview.foreground import foreground_work

RRF_K = 60  # the usual reciprocal-rank-fusion constant: damps the weight of the very first ranks
CANDIDATES_PER_RANKER = 40


@dataclass
class SearchHit:
    article_id: int
    external_ref: str
    title: str
    source_type: str
    version_id: int
    chunk_id: int
    chunk_text: str
    score: float
    vector_rank: int | None = None
    text_rank: int | None = None
    similarity: float | None = None
    chunks: list[str] = field(default_factory=list)


def article_list(*, knowledge_base: KnowledgeBase, include_deleted: bool = False, query: str = "") -> QuerySet:
    articles = Article.objects.filter(knowledge_base=knowledge_base).select_related("current_version")
    if not include_deleted:
        articles = articles.filter(status=ArticleStatus.ACTIVE)
    if query:
        articles = articles.filter(Q(title__icontains=query) | Q(external_ref__icontains=query))
    return articles.order_by("title")


def article_get(*, knowledge_base: KnowledgeBase, article_id: int) -> Article:
    return Article.objects.select_related("current_version").get(knowledge_base=knowledge_base, pk=article_id)


def articles_by_ref(*, knowledge_base: KnowledgeBase, refs: list[str]) -> dict[str, Article]:
    articles = Article.objects.filter(knowledge_base=knowledge_base, external_ref__in=refs).select_related(
        "current_version"
    )
    return {a.external_ref: a for a in articles}


def article_versions(*, article: Article) -> QuerySet:
    return ArticleVersion.objects.filter(article=article).select_related("author").order_by("-number")


def article_version_get(*, article: Article, version_id: int) -> ArticleVersion | None:
    return ArticleVersion.objects.filter(article=article, pk=version_id).first()


def version_numbers(*, version_ids: list[int]) -> dict[int, int]:
    """Version number by version id, for naming versions to people (v2, v3), never by database id."""
    return dict(ArticleVersion.objects.filter(pk__in=version_ids).values_list("pk", "number"))


def article_title(*, knowledge_base: KnowledgeBase, article_id: int) -> str:
    return Article.objects.filter(knowledge_base=knowledge_base, pk=article_id).values_list("title", flat=True).first() or ""


def membership_get(*, user, knowledge_base_id: int) -> Membership | None:
    return Membership.objects.filter(user=user, knowledge_base_id=knowledge_base_id).select_related("knowledge_base").first()


def latest_index_sync_job(*, knowledge_base: KnowledgeBase) -> IndexSyncJob | None:
    return (IndexSyncJob.objects.filter(knowledge_base=knowledge_base, article__isnull=True)
            .order_by("-created_at").first())


def stale_articles(*, knowledge_base: KnowledgeBase) -> QuerySet:
    """Active articles whose index lags their current version, and deleted ones still indexed."""
    active_stale = Q(status=ArticleStatus.ACTIVE) & (
        Q(indexed_version__isnull=True) | ~Q(indexed_version=F("current_version"))
    )
    deleted_indexed = Q(status=ArticleStatus.DELETED, indexed_version__isnull=False)
    return Article.objects.filter(knowledge_base=knowledge_base).filter(active_stale | deleted_indexed).order_by("pk")


def _vector_candidates(*, knowledge_base: KnowledgeBase, vector, limit: int, exact: bool) -> list[tuple[int, float]]:
    with transaction.atomic():
        with connection.cursor() as cursor:
            if exact:
                # Force a sequential scan: the ground truth the HNSW path is measured against.
                cursor.execute("SET LOCAL enable_indexscan = off")
            else:
                cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(settings.HNSW_EF_SEARCH, limit)])
                # Filtering by knowledge base after an approximate scan could leave too few rows.
                cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = (
            Chunk.objects.filter(knowledge_base=knowledge_base)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("pk", "distance")[:limit]
        )
        return sorted(rows, key=lambda row: row[1])


# A lexeme in more than this share of chunks says little and makes the ranker score most of the table.
COMMON_LEXEME_SHARE = 0.02
LEXEME_STATS_TTL_S = 300.0
_lexeme_stats: dict = {"at": -LEXEME_STATS_TTL_S, "freqs": {}}


def _lexeme_frequencies() -> dict[str, float]:
    """Share of chunks holding each common lexeme, from PostgreSQL's own statistics (ANALYZE), cached."""
    now = time.monotonic()
    if now - _lexeme_stats["at"] > LEXEME_STATS_TTL_S:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE tablename = 'articles_chunk' AND attname = 'search_vector'"
            )
            row = cursor.fetchone()
        lexemes, freqs = (row or (None, None))
        _lexeme_stats.update(at=now, freqs=dict(zip(lexemes or [], freqs or [])))
    return _lexeme_stats["freqs"]


def _selective_query(question: str) -> str:
    """An OR tsquery of the question's lexemes, leaving out those most chunks contain.

    Any word may match (a question rarely shares all its words with the answer), but ranking every
    chunk that holds "order" or "delivery" costs more than it tells: those words are left to the
    vector ranker, and a question made only of common words gets no full-text candidates at all.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s))", [question])
        lexemes = cursor.fetchone()[0] or []
    freqs = _lexeme_frequencies()
    selective = [lexeme for lexeme in lexemes if freqs.get(lexeme, 0.0) <= COMMON_LEXEME_SHARE]
    # Quoted lexemes are taken as they are (already normalised), never parsed as query syntax.
    return " | ".join("'" + lexeme.replace("'", "''") + "'" for lexeme in selective)


def _text_candidates(*, knowledge_base: KnowledgeBase, question: str, limit: int) -> list[int]:
    query = _selective_query(question)
    if not query:
        return []
    return list(
        Chunk.objects.filter(knowledge_base=knowledge_base)
        .filter(RawSQL("search_vector @@ %s::tsquery", [query], output_field=BooleanField()))
        .annotate(rank=RawSQL("ts_rank(search_vector, %s::tsquery)", [query], output_field=FloatField()))
        .order_by("-rank", "pk")
        .values_list("pk", flat=True)[:limit]
    )


def search(
    *, knowledge_base: KnowledgeBase, question: str, limit: int | None = None, exact_vectors: bool = False
) -> list[SearchHit]:
    """Hybrid retrieval: pgvector cosine and full text, fused by reciprocal rank, one hit per article.
    Foreground work: background tasks on this machine wait for it to finish (kbreview/foreground.py)."""
    with foreground_work():
        return _search(knowledge_base=knowledge_base, question=question, limit=limit, exact_vectors=exact_vectors)


def _search(*, knowledge_base: KnowledgeBase, question: str, limit: int | None, exact_vectors: bool) -> list[SearchHit]:
    limit = limit or settings.SEARCH_RESULTS
    vector = embed_text(question)
    vector_rows = _vector_candidates(
        knowledge_base=knowledge_base, vector=vector, limit=CANDIDATES_PER_RANKER, exact=exact_vectors
    )
    text_ids = _text_candidates(knowledge_base=knowledge_base, question=question, limit=CANDIDATES_PER_RANKER)
    scores: dict[int, float] = {}
    vector_rank = {chunk_id: i + 1 for i, (chunk_id, _) in enumerate(vector_rows)}
    text_rank = {chunk_id: i + 1 for i, chunk_id in enumerate(text_ids)}
    for ranking in (vector_rank, text_rank):
        for chunk_id, rank in ranking.items():
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    chunks = (
        Chunk.objects.filter(pk__in=scores, article__status=ArticleStatus.ACTIVE)
        .select_related("article")
        .annotate(distance=CosineDistance("embedding", vector))
    )
    by_article: dict[int, SearchHit] = {}
    for chunk in sorted(chunks, key=lambda c: (-scores[c.pk], c.pk)):
        hit = by_article.get(chunk.article_id)
        if hit is None:
            by_article[chunk.article_id] = SearchHit(
                article_id=chunk.article_id,
                external_ref=chunk.article.external_ref,
                title=chunk.article.title,
                source_type=chunk.article.source_type,
                version_id=chunk.version_id,
                chunk_id=chunk.pk,
                chunk_text=chunk.text,
                score=scores[chunk.pk],
                vector_rank=vector_rank.get(chunk.pk),
                text_rank=text_rank.get(chunk.pk),
                similarity=1.0 - chunk.distance,
                chunks=[chunk.text],
            )
        else:
            hit.chunks.append(chunk.text)
    return list(by_article.values())[:limit]


def vector_search_ids(*, knowledge_base: KnowledgeBase, question_vector, limit: int, exact: bool) -> list[int]:
    """Chunk ids nearest to a vector; the benchmark compares the HNSW path with the exact one."""
    return [pk for pk, _ in _vector_candidates(knowledge_base=knowledge_base, vector=question_vector, limit=limit, exact=exact)]


def version_claim_vectors(*, knowledge_base_id: int, version_ids: list[int]) -> dict[int, tuple[str, np.ndarray]]:
    """The claim vectors the index sync stored for these versions: version id -> (texts key, matrix).
    Versions without stored vectors are left out (the reader computes theirs)."""
    rows = VersionClaimVectors.objects.filter(
        version_id__in=version_ids, version__article__knowledge_base_id=knowledge_base_id
    ).values_list("version_id", "key", "count", "dimensions", "vectors")
    return {version_id: (key, matrix_from_bytes(data, count=count, dimensions=dimensions))
            for version_id, key, count, dimensions, data in rows}
