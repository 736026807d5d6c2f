from django.core.management.base import BaseCommand, CommandError

from articles.models import KnowledgeBase
from articles.services import index_resync


class Command(BaseCommand):
    help = "Embed articles whose index is stale (or all with --full), printing progress."

    def add_arguments(self, parser):
        parser.add_argument("--kb", help="knowledge base slug (default: all)")
        parser.add_argument("--full", action="store_true")

    def handle(self, *args, **options):
        kbs = KnowledgeBase.objects.order_by("slug")
        if options["kb"]:
            kbs = kbs.filter(slug=options["kb"])
            if not kbs.exists():
                raise CommandError(f"No knowledge base with slug {options['kb']!r}")
        for kb in kbs:
            def progress(done: int, total: int, slug=kb.slug) -> None:
                self.stdout.write(f"{slug}: {done}/{total} articles")

            chunks = index_resync(knowledge_base=kb, full=options["full"], on_progress=progress)
            self.stdout.write(self.style.SUCCESS(f"{kb.slug}: {chunks} chunks written"))
