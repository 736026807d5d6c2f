"""The knowledge base: versioned articles and the chunks that retrieval searches."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import HnswIndex, VectorField


class KnowledgeBase(models.Model):
    """One business's workspace: everything else belongs to exactly one."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="What the business does; used to disambiguate subjects.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class SourceType(models.TextChoices):
    FAQ = "faq", "FAQ"
    PDF = "pdf", "PDF"
    WEB = "web", "Web page"
    MANUAL = "manual", "Manual"


class ArticleStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    DELETED = "deleted", "Deleted"


class Article(models.Model):
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="articles")
    external_ref = models.CharField(max_length=200)
    title = models.CharField(max_length=500)
    source_type = models.CharField(max_length=10, choices=SourceType.choices, default=SourceType.FAQ)
    source_uri = models.CharField(max_length=1000, blank=True)
    status = models.CharField(max_length=10, choices=ArticleStatus.choices, default=ArticleStatus.ACTIVE)
    current_version = models.ForeignKey(
        "ArticleVersion", null=True, blank=True, on_delete=models.RESTRICT, related_name="+"
    )
    # The version whose chunks are in the index; differs from current_version while stale.
    indexed_version = models.ForeignKey(
        "ArticleVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "external_ref"], name="article_ref_unique_per_kb"),
            models.CheckConstraint(condition=~models.Q(external_ref=""), name="article_ref_not_empty"),
            models.CheckConstraint(condition=models.Q(status__in=ArticleStatus.values), name="article_status_valid"),
        ]
        indexes = [models.Index(fields=["knowledge_base", "status"])]

    def __str__(self) -> str:
        return f"{self.external_ref}: {self.title}"


class VersionReason(models.TextChoices):
    IMPORT = "import", "Import"
    EDIT = "edit", "Edit"
    RESOLVE = "resolve", "Resolve"
    RESTORE = "restore", "Restore"


class ArticleVersion(models.Model):
    """An immutable snapshot: every change to an article's text is a new version."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500)
    body = models.TextField()
    content_hash = models.CharField(max_length=64)
    # The article's own content date, as its source states it (not when we stored it).
    updated_at = models.DateField(null=True, blank=True)
    reason = models.CharField(max_length=10, choices=VersionReason.choices)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["article", "number"], name="article_version_number_unique"),
            models.CheckConstraint(condition=~models.Q(body=""), name="article_version_body_not_empty"),
        ]
        ordering = ["article", "-number"]

    def __str__(self) -> str:
        return f"{self.article.external_ref} v{self.number}"


class Chunk(models.Model):
    """A retrievable passage of one article version, embedded and full-text indexed."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="chunks")
    version = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    title = models.CharField(max_length=500)  # the version's title, weighted above the text in full-text search
    text = models.TextField()
    embedding = VectorField(dimensions=settings.EMBEDDING_DIM)
    # Computed by PostgreSQL on insert, so each chunk is written (and indexed) once.
    search_vector = models.GeneratedField(
        expression=SearchVector("title", weight="A", config="english")
        + SearchVector("text", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "ordinal"], name="chunk_ordinal_unique_per_version"),
        ]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            models.Index(fields=["knowledge_base", "article"]),
        ]


class ArticleAuditAction(models.TextChoices):
    CREATE = "create", "Created"
    NEW_VERSION = "new_version", "New version"
    DELETE = "delete", "Deleted"
    RESTORE = "restore", "Restored"


class ArticleAudit(models.Model):
    """Who changed what, for every write to an article."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="audit")
    version = models.ForeignKey(ArticleVersion, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=20, choices=ArticleAuditAction.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class SyncStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class IndexSyncJob(models.Model):
    """A re-sync of one knowledge base's index, with progress the console can poll."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="sync_jobs")
    full = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=SyncStatus.choices, default=SyncStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # The worker's last sign of life (claim or progress): older than CELERY_TASK_TIME_LIMIT means it died.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(done__lte=models.F("total")), name="sync_done_le_total"),
            models.CheckConstraint(condition=models.Q(status__in=SyncStatus.values), name="sync_status_valid"),
        ]

    @property
    def rate_per_s(self) -> float | None:
        """Articles per second so far (None before the first batch)."""
        if not (self.started_at and self.heartbeat_at and self.done):
            return None
        elapsed = (self.heartbeat_at - self.started_at).total_seconds()
        return self.done / elapsed if elapsed > 0 else None

    @property
    def seconds_left(self) -> float | None:
        rate = self.rate_per_s
        return (self.total - self.done) / rate if rate else None


class Role(models.TextChoices):
    """Roles are cumulative: a reviewer can do what a viewer can, ops what a reviewer can."""

    VIEWER = "viewer", "Viewer"
    REVIEWER = "reviewer", "Reviewer"
    OPS = "ops", "Ops"


ROLE_RANK = {Role.VIEWER: 1, Role.REVIEWER: 2, Role.OPS: 3}


class Membership(models.Model):
    """A staff member's role in one knowledge base."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "knowledge_base"], name="membership_unique"),
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def allows(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]
