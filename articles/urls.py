from django.urls import path

from articles.views import articles as article_views
from articles.views import sources as source_views

urlpatterns = [
    path("articles/", article_views.article_list, name="article_list"),
    path("articles/<int:pk>/", article_views.article_detail, name="article_detail"),
    path("articles/<int:pk>/edit/", article_views.article_edit_view, name="article_edit"),
    path("articles/<int:pk>/restore/", article_views.article_restore_view, name="article_restore"),
    path(
        "articles/<int:pk>/versions/<int:version_pk>/restore/",
        article_views.article_version_restore_view,
        name="article_version_restore",
    ),
    path("sources/", source_views.source_list_view, name="source_list"),
    path("sources/<int:pk>/", source_views.source_detail, name="source_detail"),
    path("sources/<int:pk>/sync/", source_views.source_sync_start, name="source_sync_start"),
    path("sources/<int:pk>/upload/", source_views.source_upload, name="source_upload"),
    path("sources/<int:pk>/files/<int:file_pk>/remove/", source_views.source_file_remove_view, name="source_file_remove"),
    path("sources/syncs/<int:pk>/", source_views.source_sync_progress, name="source_sync_progress"),
    path("sources/pages/<int:pk>/confirm-gone/", source_views.source_page_confirm_gone, name="source_page_confirm_gone"),
    path("source-changes/", source_views.drift_list, name="drift_list"),
    path("source-changes/<int:pk>/", source_views.drift_detail, name="drift_detail"),
    path("source-changes/<int:pk>/<str:decision>/", source_views.drift_decide, name="drift_decide"),
]
