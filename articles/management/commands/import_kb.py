from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from articles.ingest import IngestError
from articles.services import articles_import_paths, knowledge_base_get_or_create


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
        kb = knowledge_base_get_or_create(slug=options["kb"], name=options.get("name"))
        try:
            report = articles_import_paths(
                knowledge_base=kb, paths=options["paths"], reindex=not options["no_index"]
            )
        except IngestError as exc:
            raise CommandError(f"Import failed, nothing was written: {exc}") from exc
        self.stdout.write(
            f"{kb.slug}: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, {report.chunks_indexed} chunks indexed"
        )
