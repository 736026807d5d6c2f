from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from articles.ingest import IngestError
from articles.services import articles_import_paths, index_resync, knowledge_base_get_or_create


class Command(BaseCommand):
    help = "Import FAQ (CSV/JSON/Markdown), PDF and HTML files into a knowledge base, all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("--kb", required=True, help="knowledge base slug (created if missing)")
        parser.add_argument("--name", help="display name when the knowledge base is created")
        parser.add_argument("--no-index", action="store_true", help="import without embedding (run resync_index later)")
        parser.add_argument("paths", nargs="+", type=Path)

    def handle(self, *args, **options):
        missing = [str(p) for p in options["paths"] if not p.exists()]
        if missing:
            raise CommandError(f"No such file or directory: {', '.join(missing)}")
        try:
            # The knowledge base is created in the import's transaction: a failed import leaves none behind.
            with transaction.atomic():
                kb = knowledge_base_get_or_create(slug=options["kb"], name=options.get("name"))
                report = articles_import_paths(knowledge_base=kb, paths=options["paths"], reindex=False)
        except IngestError as exc:
            raise CommandError(f"Import failed, nothing was written: {exc}") from exc
        if not options["no_index"]:
            report.chunks_indexed = index_resync(knowledge_base=kb)
        self.stdout.write(
            f"{kb.slug}: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {report.chunks_indexed} chunks indexed"
        )
