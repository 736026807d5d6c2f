import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from articles.demo import DEMO_SLUG, demo_questions
from articles.models import KnowledgeBase
from conflicts.models import Conflict, ConflictStatus, DetectionOutcome, DetectionRun, Turn
from conflicts.services import answer_question
from conflicts.services.demo_history import demo_history_load
from conflicts.services.induction import rule_induction_run


class Command(BaseCommand):
    help = "Send the demo questions through the built-in answer path, so the console opens on real conflicts."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
        parser.add_argument("--if-new", action="store_true", help="do nothing when the demo was replayed before")

    def handle(self, *args, **options):
        kb = KnowledgeBase.objects.filter(slug=DEMO_SLUG).first()
        if kb is None:
            raise CommandError("Load the demo first: python manage.py load_demo")
        if options["if_new"] and Turn.objects.filter(knowledge_base=kb, external_id__startswith="demo-").exists():
            self.stdout.write("The demo questions were replayed before; nothing to do.")
            return
        # The review history first, and the Observer over it, so the replayed conflicts' suggestions cite
        # rules validated on this business's own decisions.
        created = demo_history_load(knowledge_base=kb)
        if created:
            run = rule_induction_run(knowledge_base=kb)
            self.stdout.write(f"{created} past decisions loaded; induction: {run.get_status_display()}, "
                              f"{run.accepted} of {run.candidates} rules validated {run.reason}".rstrip())
        # Each turn checked as it goes, in this process (the inline fixture: a CLI, not a server), so the
        # queue opens on real conflicts; their suggestions wait for the workers.
        settings.DETECTION_DISPATCH = "inline"
        questions = demo_questions()[: options["limit"] or None]
        for item in questions:
            answer_question(knowledge_base=kb, question=item["question"], external_id=f"demo-{item['id']}")
        self._wait_for_detection(kb)
        open_count = Conflict.objects.filter(knowledge_base=kb, status=ConflictStatus.OPEN).count()
        self.stdout.write(f"{len(questions)} questions replayed; {open_count} open conflicts")

    def _wait_for_detection(self, kb, timeout_s: float = 300.0) -> None:
        """Detection runs beside each reply (threads or workers); wait so the counts printed are final."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            queued = DetectionRun.objects.filter(turn__knowledge_base=kb, outcome=DetectionOutcome.QUEUED).count()
            if not queued:
                return
            time.sleep(0.2)
        self.stderr.write(f"{queued} turn(s) still queued for detection after {timeout_s:.0f} s")
