"""The knowledge base: versioned articles and the chunks that retrieval searches."""
from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Length
from pgvector.django import HnswIndex, VectorField

from kbreview.leases import Leased


class KnowledgeBase(models.Model):
    """One business's workspace: everything else belongs to exactly one."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, help_text="What the business does; used to disambiguate subjects.")
    # Sources may fetch from private, loopback and link-local addresses only when this is set (an intranet wiki).
    allow_private_fetch = models.BooleanField(default=False)
    # Suggestions below this calibrated confidence are shown as "cannot tell"; empty: the default chosen on
    # the dev half of the project's labelled corpus (agents.macr.calibration.default_threshold).
    suggestion_min_confidence = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(suggestion_min_confidence__isnull=True)
                | models.Q(suggestion_min_confidence__gte=0.0, suggestion_min_confidence__lte=1.0),
                name="kb_suggestion_min_confidence_0_1",
            )
        ]

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
    # The title as a tsvector, kept by PostgreSQL, so a search over a knowledge base's titles (the
    # conflict queue's) compares stored vectors instead of parsing every title per query.
    title_vector = models.GeneratedField(
        expression=SearchVector("title", config="english"), output_field=SearchVectorField(), db_persist=True
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "external_ref"], name="article_ref_unique_per_kb"),
            models.CheckConstraint(condition=~models.Q(external_ref=""), name="article_ref_not_empty"),
            models.CheckConstraint(condition=models.Q(status__in=ArticleStatus.values), name="article_status_valid"),
            models.CheckConstraint(condition=models.Q(source_type__in=SourceType.values), name="article_source_type_valid"),
        ]
        indexes = [models.Index(fields=["knowledge_base", "status"])]

    def __str__(self) -> str:
        return f"{self.external_ref}: {self.title}"


class VersionReason(models.TextChoices):
    IMPORT = "import", "Import"
    EDIT = "edit", "Edit"
    RESOLVE = "resolve", "Resolve"
    RESTORE = "restore", "Restore"


# Versions written in the console by staff: a source change after one of these is held for review.
CONSOLE_REASONS = (VersionReason.EDIT, VersionReason.RESOLVE, VersionReason.RESTORE)


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
            models.CheckConstraint(condition=models.Q(reason__in=VersionReason.values), name="article_version_reason_valid"),
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


class VersionClaimVectors(models.Model):
    """The sentence vectors of one article version's claims, written by the index sync beside its chunks,
    so a turn's conflict check embeds nothing for an article it has not seen in this process.

    What a claim is (and which text of it is embedded) is the conflict checker's business: it registers
    the function that derives the texts (articles.claim_texts); `key` is the digest of those texts, so a
    reader whose texts differ (the function changed) computes its own instead of using stale vectors.
    """

    version = models.OneToOneField(
        ArticleVersion, primary_key=True, on_delete=models.CASCADE, related_name="claim_vectors"
    )
    key = models.CharField(max_length=64)
    count = models.PositiveIntegerField()
    dimensions = models.PositiveSmallIntegerField()
    vectors = models.BinaryField()  # float32, row-major: count x dimensions
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.lookups.Exact(Length("vectors"), models.F("count") * models.F("dimensions") * 4),
                name="claim_vectors_size_matches",
            ),
        ]


class SyncStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class IndexSyncJob(Leased):
    """A re-sync of one knowledge base's index, with progress the console can poll (each batch's progress is
    the lease's heartbeat)."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="sync_jobs")
    # Set: the re-index of this one article after an edit (its chunks only), which the editing request runs
    # itself so the fix reaches retrieval before it answers; unset: the knowledge base's stale articles (or all).
    article = models.ForeignKey(Article, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    full = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=SyncStatus.choices, default=SyncStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(done__lte=models.F("total")), name="sync_done_le_total"),
            models.CheckConstraint(condition=models.Q(status__in=SyncStatus.values), name="sync_status_valid"),
        ]

    @classmethod
    def lease_on_claim(cls, now):
        return {"started_at": now, "done": 0}  # a job taken over from a dead worker starts again

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


# --- sources: where articles live, kept in sync ---------------------------------------------------


class SourceKind(models.TextChoices):
    URLS = "urls", "Page URLs"
    SITEMAP = "sitemap", "Sitemap"
    FOLDER = "folder", "Folder on the server"
    UPLOAD = "upload", "Uploaded files"


WEB_SOURCE_KINDS = (SourceKind.URLS, SourceKind.SITEMAP)


class SourceSchedule(models.TextChoices):
    OFF = "off", "Off"
    HOURLY = "hourly", "Hourly"
    DAILY = "daily", "Daily"


class GonePolicy(models.TextChoices):
    IMMEDIATE = "immediate", "Leave retrieval immediately"
    CONFIRM = "confirm", "Leave retrieval after confirmation"


class Source(models.Model):
    """One place a knowledge base's articles come from, synced on a schedule or by hand."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="sources")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=SourceKind.choices)
    # Page URLs one per line (urls), the sitemap's URL (sitemap) or a server path (folder); empty for uploads.
    location = models.TextField(blank=True)
    schedule = models.CharField(max_length=10, choices=SourceSchedule.choices, default=SourceSchedule.OFF)
    gone_policy = models.CharField(max_length=10, choices=GonePolicy.choices, default=GonePolicy.CONFIRM)
    last_sync = models.ForeignKey("SourceSync", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["knowledge_base", "name"], name="source_name_unique_per_kb"),
            models.CheckConstraint(condition=~models.Q(name=""), name="source_name_not_empty"),
            models.CheckConstraint(condition=models.Q(kind__in=SourceKind.values), name="source_kind_valid"),
            models.CheckConstraint(condition=models.Q(schedule__in=SourceSchedule.values), name="source_schedule_valid"),
            models.CheckConstraint(condition=models.Q(gone_policy__in=GonePolicy.values), name="source_gone_policy_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class SourceFile(models.Model):
    """A file uploaded in the console, kept in the database so any worker can sync it."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=255)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    uploaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["source", "name"], name="source_file_name_unique")]


class PageState(models.TextChoices):
    PRESENT = "present", "In the source"
    GONE_PENDING = "gone_pending", "Gone from source, awaiting confirmation"
    GONE = "gone", "Gone from source"


class SourcePage(models.Model):
    """One document of a source (a URL or a file) and what the last sync saw of it."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="pages")
    key = models.CharField(max_length=1000)  # the URL, or the file's path inside the folder / upload
    article = models.ForeignKey(Article, null=True, blank=True, on_delete=models.SET_NULL, related_name="source_pages")
    # The version the last sync wrote or confirmed; console versions after it mean staff edited since.
    synced_version = models.ForeignKey(
        ArticleVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    state = models.CharField(max_length=15, choices=PageState.choices, default=PageState.PRESENT)
    etag = models.CharField(max_length=500, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    raw_hash = models.CharField(max_length=64, blank=True)  # of the bytes fetched, so a 200 with the same bytes is a no-op
    # Content hash of the source's text as last seen (applied or held): a change is a different hash.
    source_hash = models.CharField(max_length=64, blank=True)
    last_error = models.TextField(blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["source", "key"], name="source_page_key_unique"),
            models.CheckConstraint(condition=models.Q(state__in=PageState.values), name="source_page_state_valid"),
        ]


class SyncTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"
    MANUAL = "manual", "By hand"
    UPLOAD = "upload", "Upload"


ACTIVE_SYNC_STATUSES = (SyncStatus.QUEUED, SyncStatus.RUNNING)


class SourceSync(Leased):
    """One sync of a source: progress the console polls, counts and a per-page report."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="syncs")
    trigger = models.CharField(max_length=10, choices=SyncTrigger.choices, default=SyncTrigger.MANUAL)
    status = models.CharField(max_length=10, choices=SyncStatus.choices, default=SyncStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    # created / changed / unchanged / not_modified / held / gone / back / errors / reindexed
    counts = models.JSONField(default=dict, blank=True)
    # [{"key", "error"}] for pages that failed; nothing of theirs was written
    page_errors = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)  # the sync as a whole failed (e.g. the sitemap could not be read)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(done__lte=models.F("total")), name="source_sync_done_le_total"),
            models.CheckConstraint(condition=models.Q(status__in=SyncStatus.values), name="source_sync_status_valid"),
            models.CheckConstraint(condition=models.Q(trigger__in=SyncTrigger.values), name="source_sync_trigger_valid"),
            # One sync of a source at a time.
            models.UniqueConstraint(
                fields=["source"],
                condition=models.Q(status__in=ACTIVE_SYNC_STATUSES),
                name="source_sync_one_active",
            ),
        ]

    @classmethod
    def lease_ttl_s(cls) -> float:
        # A sync's hard time limit is its own: one silent for longer lost its worker.
        return settings.SOURCE_SYNC_TIME_LIMIT_S

    @classmethod
    def lease_on_claim(cls, now):
        return {"started_at": now}


class DriftStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    KEPT = "kept", "Kept the console text"
    TAKEN = "taken", "Took the source text"
    MERGED = "merged", "Merged"


class DriftItem(models.Model):
    """A source change to an article staff edited in the console since the last sync, held for review.

    Until it is decided retrieval keeps the console text: nothing of the source text is a version yet.
    """

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="+")
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="drift_items")
    page = models.ForeignKey(SourcePage, null=True, on_delete=models.SET_NULL, related_name="drift_items")
    # The console version the source change was compared with; deciding refuses if the article moved on.
    console_version = models.ForeignKey(ArticleVersion, on_delete=models.RESTRICT, related_name="+")
    source_title = models.CharField(max_length=500)
    source_body = models.TextField()
    source_updated_at = models.DateField(null=True, blank=True)
    # Statements staff removed while resolving a conflict that the source text brings back.
    reintroduced = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=DriftStatus.choices, default=DriftStatus.PENDING)
    result_version = models.ForeignKey(
        ArticleVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=DriftStatus.values), name="drift_status_valid"),
            models.UniqueConstraint(
                fields=["article"], condition=models.Q(status=DriftStatus.PENDING), name="drift_one_pending_per_article"
            ),
        ]
        indexes = [models.Index(fields=["knowledge_base", "status"])]


class AuditAction(models.TextChoices):
    """Every audited state change outside a conflict's own timeline (ConflictActivity keeps that)."""

    TOKEN_CREATED = "token.created", "API token created"
    TOKEN_REVOKED = "token.revoked", "API token revoked"
    TOKEN_REVOKED_USE = "token.revoked_use", "Revoked or expired API token used"
    RULE_ENABLED = "rule.enabled", "Rule switched on"
    RULE_DISABLED = "rule.disabled", "Rule switched off"
    MEMBERSHIP_CREATED = "membership.created", "Member added"
    MEMBERSHIP_CHANGED = "membership.changed", "Member's role changed"
    MEMBERSHIP_REMOVED = "membership.removed", "Member removed"
    TURN_REPLY_REPLACED = "turn.reply_replaced", "Turn reply replaced"
    WEBHOOK_CREATED = "webhook.created", "Webhook added"
    WEBHOOK_SECRET_ROTATED = "webhook.secret_rotated", "Webhook secret replaced"
    WEBHOOK_ENABLED = "webhook.enabled", "Webhook switched on"
    WEBHOOK_DISABLED = "webhook.disabled", "Webhook switched off"
    WEBHOOK_DELETED = "webhook.deleted", "Webhook deleted"
    NOTIFICATION_SETTINGS_CHANGED = "notifications.settings", "Notification settings changed"
    NOTIFICATION_PREFERENCE_CHANGED = "notifications.preference", "E-mail preference changed"
    NOTIFICATION_RETRIED = "notifications.retried", "Failed notification sent again"
    ANSWER_SETTINGS_CHANGED = "answer.settings", "Answer settings changed"
    VERDICTS_FORGOTTEN = "detection.verdicts_forgotten", "Cached LLM verdicts forgotten"
    SOURCE_CREATED = "source.created", "Source added"
    SOURCE_CHANGED = "source.changed", "Source changed"
    SOURCE_REFUSED = "source.refused", "Source location refused"
    ARTICLE_CREATED = "article.created", "Article created"
    ARTICLE_VERSION_ADDED = "article.version_added", "Article version added"
    ARTICLE_DELETED = "article.deleted", "Article deleted"
    ARTICLE_RESTORED = "article.restored", "Article restored"
    ARTICLE_GONE = "article.gone", "Article gone from its source"
    ARTICLE_BACK = "article.back", "Article back in its source"
    DRIFT_HELD = "article.drift_held", "Source change held for review"
    DRIFT_KEPT = "article.drift_kept", "Kept the console text"
    DRIFT_TAKEN = "article.drift_taken", "Took the source text"
    DRIFT_MERGED = "article.drift_merged", "Merged the source change"


class AuditEvent(models.Model):
    """One audited state change: who, what, on which object, when. Written by the service that makes
    the change, in its transaction. Lives here (the lowest app with knowledge bases) so every app can
    write it without importing upwards; objects are named by type and id, not by foreign key."""

    knowledge_base = models.ForeignKey(KnowledgeBase, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=40, choices=AuditAction.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    target_type = models.CharField(max_length=60)  # "conflicts.apitoken"
    target_id = models.CharField(max_length=64)
    target_repr = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.CheckConstraint(condition=models.Q(action__in=AuditAction.values), name="audit_action_valid")]
        indexes = [
            models.Index(fields=["knowledge_base", "-created_at"]),
            models.Index(fields=["target_type", "target_id"]),
        ]
