from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from articles.indexing import index_sync_follow, index_sync_start
from articles.ingest import IngestError
from articles.models import SyncStatus
from articles.services import articles_import_paths, knowledge_base_get_or_create


class Command(BaseCommand):
    help = (
        "Import FAQ (CSV/JSON/Markdown), PDF and HTML files into a knowledge base, all or nothing. The files "
        "are read and written here; embedding them is a re-sync job for the workers (progress on the ops page)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--kb", required=True, help="knowledge base slug (created if missing)")
        parser.add_argument("--name", help="display name when the knowledge base is created")
        parser.add_argument("--no-index", action="store_true", help="import without embedding (run resync_index later)")
        parser.add_argument("--no-wait", action="store_true",
                            help="queue the embedding for the workers and return at once")
        parser.add_argument("--worker-grace", type=float, default=20.0, metavar="SECONDS",
                            help="embed here if no worker has taken the job after this long (default 20)")
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
        self.stdout.write(
            f"{kb.slug}: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged"
        )
        if options["no_index"]:
            return
        job = index_sync_start(knowledge_base=kb)  # the outbox: a row, sent to the workers on commit
        if options["no_wait"]:
            self.stdout.write(f"{kb.slug}: index re-sync job {job.pk} queued for the workers (progress on the ops page)")
            return
        job = index_sync_follow(job, grace_s=options["worker_grace"], say=self.stdout.write)
        if job.status == SyncStatus.FAILED:
            raise CommandError(f"Index re-sync job {job.pk} failed: {job.error}")
        self.stdout.write(f"{kb.slug}: {job.done} articles embedded (job {job.pk})")
