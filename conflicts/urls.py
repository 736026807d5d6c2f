from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import path
from django.views.generic import RedirectView

from conflicts import views
from conflicts.views import sources as source_views

urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page says; send them to the SVG icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("kb/switch/", views.kb_switch, name="kb_switch"),
    path("conflicts/", views.conflict_queue, name="conflict_queue"),
    path("conflicts/bulk/", views.conflict_bulk, name="conflict_bulk"),
    path("conflicts/<int:pk>/", views.conflict_detail, name="conflict_detail"),
    path("conflicts/<int:pk>/resolve/", views.conflict_resolve_view, name="conflict_resolve"),
    path("conflicts/<int:pk>/preview/", views.conflict_preview, name="conflict_preview"),
    path("conflicts/<int:pk>/dismiss/", views.conflict_dismiss_view, name="conflict_dismiss"),
    path("conflicts/<int:pk>/reopen/", views.conflict_reopen_view, name="conflict_reopen"),
    path("conflicts/<int:pk>/assign/", views.conflict_assign_view, name="conflict_assign"),
    path("conflicts/<int:pk>/comment/", views.conflict_comment_view, name="conflict_comment"),
    path("conflicts/<int:pk>/snooze/", views.conflict_snooze_view, name="conflict_snooze"),
    path("conflicts/<int:pk>/unsnooze/", views.conflict_unsnooze_view, name="conflict_unsnooze"),
    path("conflicts/<int:pk>/suggestion/", views.conflict_suggestion_recompute, name="conflict_suggestion"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/<int:pk>/toggle/", views.rule_toggle, name="rule_toggle"),
    path("rules/induce/", views.rule_induction_start, name="rule_induction_start"),
    path("articles/", views.article_list, name="article_list"),
    path("articles/<int:pk>/", views.article_detail, name="article_detail"),
    path("articles/<int:pk>/edit/", views.article_edit_view, name="article_edit"),
    path("articles/<int:pk>/restore/", views.article_restore_view, name="article_restore"),
    path(
        "articles/<int:pk>/versions/<int:version_pk>/restore/",
        views.article_version_restore_view,
        name="article_version_restore",
    ),
    path("sources/", source_views.source_list_view, name="source_list"),
    path("sources/<int:pk>/", source_views.source_detail, name="source_detail"),
    path("sources/<int:pk>/sync/", source_views.source_sync_start, name="source_sync_start"),
    path("sources/<int:pk>/upload/", source_views.source_upload, name="source_upload"),
    path("sources/syncs/<int:pk>/", source_views.source_sync_progress, name="source_sync_progress"),
    path("sources/pages/<int:pk>/confirm-gone/", source_views.source_page_confirm_gone, name="source_page_confirm_gone"),
    path("source-changes/", source_views.drift_list, name="drift_list"),
    path("source-changes/<int:pk>/", source_views.drift_detail, name="drift_detail"),
    path("source-changes/<int:pk>/<str:decision>/", source_views.drift_decide, name="drift_decide"),
    path("answer/playground/", views.answer_playground, name="answer_playground"),
    path("answer/settings/", views.answer_settings_view, name="answer_settings"),
    path("ops/", views.ops_home, name="ops_home"),
    path("ops/resync/", views.ops_resync, name="ops_resync"),
    path("ops/sync-jobs/<int:pk>/", views.ops_sync_job, name="ops_sync_job"),
    path("ops/tokens/", views.ops_token_create, name="ops_token_create"),
    path("ops/tokens/<int:pk>/revoke/", views.ops_token_revoke, name="ops_token_revoke"),
    path("ops/notifications/", views.ops_notifications, name="ops_notifications"),
    path("ops/notifications/settings/", views.ops_notification_settings, name="ops_notification_settings"),
    path("ops/notifications/webhooks/", views.ops_webhook_create, name="ops_webhook_create"),
    path("ops/notifications/webhooks/<int:pk>/rotate/", views.ops_webhook_rotate, name="ops_webhook_rotate"),
    path("ops/notifications/webhooks/<int:pk>/delete/", views.ops_webhook_delete, name="ops_webhook_delete"),
    path("ops/notifications/webhooks/<int:pk>/toggle/", views.ops_webhook_toggle, name="ops_webhook_toggle"),
    path("ops/notifications/deliveries/<int:pk>/retry/", views.ops_delivery_retry, name="ops_delivery_retry"),
    path("notifications/", views.notification_preferences, name="notification_preferences"),
]
