"""articles 0017: the rows of the old per-article audit table move into the one audit log, and back on reverse."""
import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("articles", "0016_audit_article_actions")]
AFTER = [("articles", "0017_article_audit_into_audit_event")]
WHEN = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_article_audit_rows_move_into_the_audit_log_and_back():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        apps = migrate(BEFORE)
        kb = apps.get_model("articles", "KnowledgeBase").objects.create(slug="m", name="M")
        user = apps.get_model("auth", "User").objects.create(username="editor")
        article = apps.get_model("articles", "Article").objects.create(
            knowledge_base=kb, external_ref="help-fares", title="Fares"
        )
        version = apps.get_model("articles", "ArticleVersion").objects.create(
            article=article, number=1, title="Fares", body="A ticket costs 3 euro.", content_hash="x", reason="edit"
        )
        ArticleAudit = apps.get_model("articles", "ArticleAudit")
        ArticleAudit.objects.create(knowledge_base=kb, article=article, action="create", detail={"location": "f.json"})
        ArticleAudit.objects.create(knowledge_base=kb, article=article, version=version, action="drift_kept",
                                    actor=user, detail={"drift_item": 7, "note": "ours"})
        ArticleAudit.objects.update(created_at=WHEN)
        before = sorted(ArticleAudit.objects.values_list("action", "version_id", "actor_id", "detail", "created_at"))

        apps = migrate(AFTER)
        assert not apps.get_model("articles", "ArticleAudit").objects.exists()
        events = apps.get_model("articles", "AuditEvent").objects.order_by("id")
        assert [(e.action, e.target_type, e.target_id, e.target_repr, e.knowledge_base_id, e.actor_id, e.detail,
                 e.created_at) for e in events] == [
            ("article.created", "articles.article", str(article.pk), "help-fares: Fares", kb.pk, None,
             {"location": "f.json"}, WHEN),
            ("article.drift_kept", "articles.article", str(article.pk), "help-fares: Fares", kb.pk, user.pk,
             {"drift_item": 7, "note": "ours", "version": version.pk}, WHEN),
        ]

        apps = migrate(BEFORE)
        ArticleAudit = apps.get_model("articles", "ArticleAudit")
        after = sorted(ArticleAudit.objects.values_list("action", "version_id", "actor_id", "detail", "created_at"))
        assert after == before
        assert not apps.get_model("articles", "AuditEvent").objects.exists()
    finally:
        migrate(latest)
