"""The Django admin for superusers. Bulk actions call the same services as the console, one object at
a time, so each status change writes its activity row (never a queryset.update())."""
from django.contrib import admin, messages

from articles.models import Membership
from conflicts import services
from conflicts.models import ApiToken, Conflict, ConflictActivity, ConflictOccurrence, DetectionRun, Turn


def _each(modeladmin, request, queryset, action, verb: str) -> None:
    done, refused = 0, []
    for obj in queryset:
        try:
            action(obj)
            done += 1
        except services.ConflictStateError as exc:
            refused.append(f"#{obj.pk}: {exc}")
    modeladmin.message_user(request, f"{verb} {done} conflict(s).", messages.SUCCESS)
    if refused:
        modeladmin.message_user(request, "Refused: " + " ".join(refused), messages.WARNING)


class ActivityInline(admin.TabularInline):
    model = ConflictActivity
    fields = ("created_at", "kind", "actor", "from_status", "to_status", "note")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Conflict)
class ConflictAdmin(admin.ModelAdmin):
    list_display = ("pk", "knowledge_base", "article_low", "article_high", "type", "status", "times_seen", "times_cited", "last_seen")
    list_filter = ("knowledge_base", "status", "type", "recurred_after_review")
    search_fields = ("explanation", "article_low__title", "article_high__title")
    list_select_related = ("knowledge_base", "article_low", "article_high")
    readonly_fields = [f.name for f in Conflict._meta.fields]
    inlines = [ActivityInline]
    actions = ["dismiss_intentional", "reopen"]

    @admin.action(description="Dismiss (intentional difference)")
    def dismiss_intentional(self, request, queryset):
        _each(self, request, queryset,
              lambda c: services.conflict_dismiss(conflict=c, actor=request.user, reason="Dismissed in the admin"), "Dismissed")

    @admin.action(description="Reopen")
    def reopen(self, request, queryset):
        _each(self, request, queryset,
              lambda c: services.conflict_reopen(conflict=c, actor=request.user, note="Reopened in the admin"), "Reopened")


@admin.register(ConflictOccurrence)
class ConflictOccurrenceAdmin(admin.ModelAdmin):
    list_display = ("pk", "conflict", "turn", "citation", "detector", "created_at")
    list_select_related = ("conflict", "turn")
    readonly_fields = [f.name for f in ConflictOccurrence._meta.fields]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("external_id", "knowledge_base", "source", "created_at", "reply_sent_at")
    list_filter = ("knowledge_base", "source")
    search_fields = ("external_id", "question")
    readonly_fields = [f.name for f in Turn._meta.fields]


@admin.register(DetectionRun)
class DetectionRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "turn", "outcome", "detector", "conflicts_found", "llm_calls", "latency_ms", "created_at")
    list_filter = ("outcome", "detector")
    readonly_fields = [f.name for f in DetectionRun._meta.fields]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "knowledge_base", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("knowledge_base",)
    readonly_fields = ("prefix", "token_hash", "created_by", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # tokens are created in the console or with manage.py create_api_token (shown once)

    @admin.action(description="Revoke")
    def revoke(self, request, queryset):
        for token in queryset:
            services.api_token_revoke(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)


if not admin.site.is_registered(Membership):
    @admin.register(Membership)
    class MembershipAdmin(admin.ModelAdmin):
        list_display = ("user", "knowledge_base", "role", "created_at")
        list_filter = ("knowledge_base", "role")
        search_fields = ("user__username",)
