import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models


class Migration(migrations.Migration):
    """Chunks carry their title, and the tsvector is a generated column (one write per chunk)."""

    dependencies = [("articles", "0003_alter_article_current_version")]

    operations = [
        migrations.AddField(
            model_name="chunk", name="title", field=models.CharField(default="", max_length=500), preserve_default=False
        ),
        migrations.RunSQL(
            "UPDATE articles_chunk c SET title = v.title FROM articles_articleversion v WHERE v.id = c.version_id",
            migrations.RunSQL.noop,
        ),
        migrations.RemoveIndex(model_name="chunk", name="chunk_search_vector_gin"),
        migrations.RemoveField(model_name="chunk", name="search_vector"),
        migrations.AddField(
            model_name="chunk",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector("title", config="english", weight="A"),
                    "||",
                    django.contrib.postgres.search.SearchVector("text", config="english", weight="B"),
                    django.contrib.postgres.search.SearchConfig("english"),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="chunk",
            index=django.contrib.postgres.indexes.GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ),
    ]
