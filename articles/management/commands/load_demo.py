from django.core.management.base import BaseCommand

from articles.demo import DEMO_NAME, DEMO_SLUG, demo_paths
from articles.services import articles_import_paths, knowledge_base_get_or_create


class Command(BaseCommand):
    help = "Load (or refresh) the demo knowledge base from articles/fixtures/demo/ and index it."

    def handle(self, *args, **options):
        kb = knowledge_base_get_or_create(
            slug=DEMO_SLUG,
            name=DEMO_NAME,
            description="A fictional business's customer-support knowledge base, shipped with kbreview.",
        )
        report = articles_import_paths(knowledge_base=kb, paths=demo_paths())
        self.stdout.write(
            f"{kb.slug}: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {report.chunks_indexed} chunks indexed"
        )
