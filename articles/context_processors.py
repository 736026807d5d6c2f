"""The articles app's TextChoices, for templates to compare against (`{% if a.status == ArticleStatus.DELETED %}`)
instead of spelling a stored value."""
from articles.models import ArticleStatus, DriftStatus, Role, SourceKind, SyncStatus


def choices(request) -> dict:
    return {
        "ArticleStatus": ArticleStatus,
        "DriftStatus": DriftStatus,
        "Role": Role,
        "SourceKind": SourceKind,
        "SyncStatus": SyncStatus,
    }
