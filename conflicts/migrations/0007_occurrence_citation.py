# Occurrences record what the reply cited of the pair (neither / one / both) instead of a yes/no.

from django.db import migrations, models

# Existing rows: cited ones become "one", or "both" when the turn's reply cited both articles.
FILL_CITATION = """
UPDATE conflicts_conflictoccurrence SET citation = 'one' WHERE cited;
UPDATE conflicts_conflictoccurrence o SET citation = 'both'
  FROM conflicts_conflict c
 WHERE o.conflict_id = c.id AND o.cited
   AND EXISTS (SELECT 1 FROM conflicts_articleusage u WHERE u.turn_id = o.turn_id AND u.article_id = c.article_low_id AND u.cited)
   AND EXISTS (SELECT 1 FROM conflicts_articleusage u WHERE u.turn_id = o.turn_id AND u.article_id = c.article_high_id AND u.cited);
"""
FILL_CITED = "UPDATE conflicts_conflictoccurrence SET cited = (citation <> 'neither');"


class Migration(migrations.Migration):

    dependencies = [
        ('articles', '0005_sources'),
        ('conflicts', '0006_conflict_substatus_regressed'),
    ]

    operations = [
        migrations.AddField(
            model_name='conflictoccurrence',
            name='citation',
            field=models.CharField(choices=[('neither', 'Cited neither'), ('one', 'Cited one of the two'), ('both', 'Cited both')], default='neither', max_length=10),
        ),
        migrations.RunSQL(FILL_CITATION, FILL_CITED),
        migrations.RemoveField(
            model_name='conflictoccurrence',
            name='cited',
        ),
        migrations.AddIndex(
            model_name='conflictoccurrence',
            index=models.Index(fields=['conflict', 'citation', '-created_at'], name='occurrence_by_citation'),
        ),
        migrations.AddConstraint(
            model_name='conflictoccurrence',
            constraint=models.CheckConstraint(condition=models.Q(('citation__in', ['neither', 'one', 'both'])), name='occurrence_citation_valid'),
        ),
    ]
