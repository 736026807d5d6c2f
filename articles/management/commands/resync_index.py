from django.core.management.base import BaseCommand, CommandError

from articles.indexing import index_sync_follow, index_sync_start
from articles.models import KnowledgeBase, SyncStatus


class Command(BaseCommand):
    help = ("Embed articles whose index is stale (or all with --full), printing progress: a re-sync job per knowledge "
            "base for the workers, followed here, and run here if no worker takes it within --worker-grace seconds.")

    def add_arguments(self, parser):
        parser.add_argument("--kb", help="knowledge base slug (default: all)")
        parser.add_argument("--full", action="store_true")
        parser.add_argument("--worker-grace", type=float, default=20.0, metavar="SECONDS",
                            help="embed here if no worker has taken the job after this long (default 20)")

    def handle(self, *args, **options):
        kbs = KnowledgeBase.objects.order_by("slug")
        if options["kb"]:
            kbs = kbs.filter(slug=options["kb"])
            if not kbs.exists():
                raise CommandError(f"No knowledge base with slug {options['kb']!r}")
        for kb in kbs:
            job = index_sync_start(knowledge_base=kb, full=options["full"])
            job = index_sync_follow(job, grace_s=options["worker_grace"], say=self.stdout.write)
            if job.status == SyncStatus.FAILED:
                raise CommandError(f"{kb.slug}: index re-sync job {job.pk} failed: {job.error}")
            self.stdout.write(self.style.SUCCESS(f"{kb.slug}: {job.done} articles embedded (job {job.pk})"))
