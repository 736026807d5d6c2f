"""The Django admin for superusers. Bulk actions call the same services as the console, one object at
a time, so each status change writes its activity row (never a queryset.update())."""
from django.contrib import admin, messages

from articles.memberships import membership_remove, membership_set
from articles.models import Membership
from conflicts import services
from conflicts.models import (
    ApiToken,
    Conflict,
    ConflictActivity,
    ConflictOccurrence,
    DetectionRun,
    NotificationDelivery,
    Turn,
    Webhook,
)
from kbreview.admin_mixins import ReadOnlyAdmin


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
class ConflictAdmin(ReadOnlyAdmin):
    list_display = ("pk", "knowledge_base", "article_low", "article_high", "type", "status", "times_seen", "times_cited", "last_seen")
    list_filter = ("knowledge_base", "status", "type", "recurred_after_review")
    search_fields = ("explanation", "article_low__title", "article_high__title")
    list_select_related = ("knowledge_base", "article_low", "article_high")
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
class ConflictOccurrenceAdmin(ReadOnlyAdmin):
    list_display = ("pk", "conflict", "turn", "citation", "detector", "created_at")
    list_select_related = ("conflict", "turn")


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "knowledge_base", "source", "created_at", "reply_sent_at")
    list_filter = ("knowledge_base", "source")
    search_fields = ("external_id", "question")


@admin.register(DetectionRun)
class DetectionRunAdmin(ReadOnlyAdmin):
    list_display = ("pk", "turn", "outcome", "detector", "conflicts_found", "llm_calls", "latency_ms", "created_at")
    list_filter = ("outcome", "detector")


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Tokens are created in the console or with manage.py create_api_token (shown once)."""

    list_display = ("name", "knowledge_base", "prefix", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("knowledge_base",)
    actions = ["revoke"]

    def get_readonly_fields(self, request, obj=None):
        return [name for name in super().get_readonly_fields(request, obj) if name != "token_hash"]

    def get_exclude(self, request, obj=None):
        return ("token_hash",)

    @admin.action(description="Revoke")
    def revoke(self, request, queryset):
        for token in queryset:
            services.api_token_revoke(token=token, actor=request.user)
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyAdmin):
    """Webhooks are added in the console (Ops → Notifications), where the secret is shown once."""

    list_display = ("url", "knowledge_base", "events", "active", "secret_hint", "created_at")
    list_filter = ("knowledge_base", "active")

    def get_readonly_fields(self, request, obj=None):
        return [name for name in super().get_readonly_fields(request, obj) if name != "secret_encrypted"]

    def get_exclude(self, request, obj=None):
        return ("secret_encrypted",)


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("pk", "knowledge_base", "channel", "target", "status", "attempts", "response_status", "created_at")
    list_filter = ("knowledge_base", "channel", "status")
    search_fields = ("target", "last_error")


if not admin.site.is_registered(Membership):
    @admin.register(Membership)
    class MembershipAdmin(admin.ModelAdmin):
        """Adding, changing and removing members go through the membership services, which audit them."""

        list_display = ("user", "knowledge_base", "role", "created_at")
        list_filter = ("knowledge_base", "role")
        search_fields = ("user__username",)

        def get_readonly_fields(self, request, obj=None):
            return ("user", "knowledge_base") if obj is not None else ()

        def save_model(self, request, obj, form, change):
            saved = membership_set(user=obj.user, knowledge_base=obj.knowledge_base, role=obj.role, actor=request.user)
            obj.pk = saved.pk

        def delete_model(self, request, obj):
            membership_remove(membership=obj, actor=request.user)

        def delete_queryset(self, request, queryset):
            for membership in queryset:
                membership_remove(membership=membership, actor=request.user)
