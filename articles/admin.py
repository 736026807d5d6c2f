from django.contrib import admin, messages

from articles import indexing, services
from articles.models import (
    Article,
    ArticleVersion,
    AuditEvent,
    DriftItem,
    IndexSyncJob,
    KnowledgeBase,
    Source,
    SourceSync,
)
from kbreview.admin_mixins import ReadOnlyAdmin


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    prepopulated_fields = {"slug": ("name",)}


class ArticleVersionInline(admin.TabularInline):
    model = ArticleVersion
    fields = ("number", "title", "updated_at", "reason", "author", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Article)
class ArticleAdmin(ReadOnlyAdmin):
    """Read-only: an article changes only through a new version (the console's edit, an import), which
    writes its audit row and re-indexes; the actions below call those services."""

    list_display = ("external_ref", "title", "knowledge_base", "source_type", "status", "modified_at")
    list_filter = ("knowledge_base", "source_type", "status")
    search_fields = ("external_ref", "title")
    inlines = [ArticleVersionInline]
    actions = ["soft_delete", "restore", "reindex"]

    # Bulk actions go through the services one article at a time, so each writes its audit row.
    @admin.action(description="Delete (soft, restorable)")
    def soft_delete(self, request, queryset):
        for article in queryset:
            services.article_delete(article=article, actor=request.user, note="admin action")
        self.message_user(request, f"{queryset.count()} article(s) deleted.", messages.SUCCESS)

    @admin.action(description="Restore")
    def restore(self, request, queryset):
        for article in queryset:
            services.article_restore(article=article, actor=request.user, note="admin action")
        self.message_user(request, f"{queryset.count()} article(s) restored.", messages.SUCCESS)

    @admin.action(description="Re-index now")
    def reindex(self, request, queryset):
        chunks = sum(indexing.article_reindex(article_id=a.pk) for a in queryset)
        self.message_user(request, f"{chunks} chunk(s) written.", messages.SUCCESS)


@admin.register(ArticleVersion)
class ArticleVersionAdmin(ReadOnlyAdmin):
    list_display = ("article", "number", "reason", "updated_at", "author", "created_at")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "knowledge_base", "action", "target_type", "target_repr", "actor")
    list_filter = ("action", "knowledge_base")
    search_fields = ("target_repr", "target_id")


@admin.register(IndexSyncJob)
class IndexSyncJobAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "knowledge_base", "full", "status", "done", "total")


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    """Read-only: a source is added, changed and synced in the console, whose services check the address,
    write the audit row and schedule the sync."""

    list_display = ("name", "knowledge_base", "kind", "schedule", "gone_policy", "last_sync")
    list_filter = ("knowledge_base", "kind", "schedule")


@admin.register(SourceSync)
class SourceSyncAdmin(ReadOnlyAdmin):
    list_display = ("pk", "source", "trigger", "status", "done", "total", "created_at", "finished_at")
    list_filter = ("status", "trigger")


@admin.register(DriftItem)
class DriftItemAdmin(ReadOnlyAdmin):
    """Read-only here: decisions go through the console, which writes the audit row."""

    list_display = ("article", "knowledge_base", "status", "created_at", "decided_by")
    list_filter = ("status",)
