from django.contrib import admin, messages

from articles import services
from articles.models import Article, ArticleAudit, ArticleVersion, DriftItem, IndexSyncJob, KnowledgeBase, Source, SourceSync


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
class ArticleAdmin(admin.ModelAdmin):
    list_display = ("external_ref", "title", "knowledge_base", "source_type", "status", "modified_at")
    list_filter = ("knowledge_base", "source_type", "status")
    search_fields = ("external_ref", "title")
    readonly_fields = ("current_version", "indexed_version", "status")
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
        chunks = sum(services.article_reindex(article_id=a.pk) for a in queryset)
        self.message_user(request, f"{chunks} chunk(s) written.", messages.SUCCESS)


@admin.register(ArticleVersion)
class ArticleVersionAdmin(admin.ModelAdmin):
    list_display = ("article", "number", "reason", "updated_at", "author", "created_at")
    readonly_fields = [f.name for f in ArticleVersion._meta.fields]

    def has_add_permission(self, request):
        return False  # versions are written by services only


@admin.register(ArticleAudit)
class ArticleAuditAdmin(admin.ModelAdmin):
    list_display = ("created_at", "article", "action", "actor")
    list_filter = ("action",)
    readonly_fields = [f.name for f in ArticleAudit._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(IndexSyncJob)
class IndexSyncJobAdmin(admin.ModelAdmin):
    list_display = ("created_at", "knowledge_base", "full", "status", "done", "total")


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ("name", "knowledge_base", "kind", "schedule", "gone_policy", "last_sync")
    list_filter = ("knowledge_base", "kind", "schedule")
    readonly_fields = ("last_sync", "created_by", "created_at")


@admin.register(SourceSync)
class SourceSyncAdmin(admin.ModelAdmin):
    list_display = ("pk", "source", "trigger", "status", "done", "total", "created_at", "finished_at")
    list_filter = ("status", "trigger")
    readonly_fields = [f.name for f in SourceSync._meta.fields]


@admin.register(DriftItem)
class DriftItemAdmin(admin.ModelAdmin):
    """Read-only here: decisions go through the console, which writes the audit row."""

    list_display = ("article", "knowledge_base", "status", "created_at", "decided_by")
    list_filter = ("status",)
    readonly_fields = [f.name for f in DriftItem._meta.fields]
