import datetime as dt

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from articles.models import KnowledgeBase
from conflicts.services.notifications import digest_send


class Command(BaseCommand):
    help = ("Queue the daily digest e-mail (a day's new conflicts, regressions and assignments) for every address "
            "that chose it; an address gets one digest per day however often this runs. Beat runs it daily.")

    def add_arguments(self, parser):
        parser.add_argument("--date", help="the day to report, YYYY-MM-DD (default: yesterday)")
        parser.add_argument("--kb", help="only this knowledge base (slug; default: all)")

    def handle(self, *args, **options):
        day = timezone.localdate() - dt.timedelta(days=1)
        if options["date"]:
            try:
                day = dt.date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date {options['date']!r} is not a date like 2026-12-01") from None
        kb = None
        if options["kb"]:
            kb = KnowledgeBase.objects.filter(slug=options["kb"]).first()
            if kb is None:
                raise CommandError(f"--kb {options['kb']!r}: no such knowledge base")
        queued = digest_send(day=day, knowledge_base=kb)
        self.stdout.write(f"{queued} digest(s) queued for {day.isoformat()}")
