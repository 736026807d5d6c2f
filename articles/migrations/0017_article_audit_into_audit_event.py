"""ArticleAudit's rows move into the one audit log (AuditEvent): they target the article, carry the version id
in `detail["version"]` and keep their times. A move both ways: the reverse moves the article rows back (rows of
articles deleted since are dropped, as ArticleAudit's cascade would have dropped them)."""

from django.db import migrations

# ArticleAudit.action -> AuditEvent.action (AuditAction's article values)
ACTIONS = {
    "create": "article.created",
    "new_version": "article.version_added",
    "delete": "article.deleted",
    "restore": "article.restored",
    "gone": "article.gone",
    "back": "article.back",
    "drift_held": "article.drift_held",
    "drift_kept": "article.drift_kept",
    "drift_taken": "article.drift_taken",
    "drift_merged": "article.drift_merged",
}
MAPPING = "(VALUES " + ", ".join(f"('{old}', '{new}')" for old, new in ACTIONS.items()) + ") AS m(old_action, new_action)"

FORWARD = f"""
INSERT INTO articles_auditevent (knowledge_base_id, action, actor_id, target_type, target_id, target_repr, detail, created_at)
SELECT a.knowledge_base_id, m.new_action, a.actor_id, 'articles.article', a.article_id::text,
       LEFT(art.external_ref || ': ' || art.title, 300),
       CASE WHEN a.version_id IS NULL THEN a.detail ELSE a.detail || jsonb_build_object('version', a.version_id) END,
       a.created_at
FROM articles_articleaudit a
JOIN articles_article art ON art.id = a.article_id
JOIN {MAPPING} ON m.old_action = a.action
ORDER BY a.id;
DELETE FROM articles_articleaudit;
"""

BACKWARD = f"""
INSERT INTO articles_articleaudit (knowledge_base_id, article_id, version_id, action, actor_id, detail, created_at)
SELECT e.knowledge_base_id, art.id, v.id, m.old_action, e.actor_id, e.detail - 'version', e.created_at
FROM articles_auditevent e
JOIN {MAPPING} ON m.new_action = e.action
JOIN articles_article art ON art.id::text = e.target_id
LEFT JOIN articles_articleversion v ON v.id::text = e.detail ->> 'version'
WHERE e.target_type = 'articles.article'
ORDER BY e.id;
DELETE FROM articles_auditevent WHERE action IN ({", ".join(f"'{new}'" for new in ACTIONS.values())});
"""


class Migration(migrations.Migration):

    dependencies = [
        ('articles', '0016_audit_article_actions'),
    ]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
