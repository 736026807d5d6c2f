from django.core.management.base import BaseCommand

from articles.management.options import knowledge_base_from_option
from conflicts.services.detection import detection_verdicts_forget


class Command(BaseCommand):
    help = ("Forget a knowledge base's cached LLM verdicts (pairs of article versions, and statements judged "
            "consistent), so that every pair is judged again when a turn next retrieves it: after switching the "
            "detection model, for instance. Conflicts already found stay.")

    def add_arguments(self, parser):
        parser.add_argument("--kb", help="knowledge base slug (default: the only one)")
        parser.add_argument("--model", help="only the verdicts this LLM model gave (as in LLM_MODEL)")

    def handle(self, *args, **options):
        knowledge_base = knowledge_base_from_option(options["kb"])
        pairs, claim_pairs = detection_verdicts_forget(knowledge_base=knowledge_base, model=options["model"])
        which = f" of model {options['model']!r}" if options["model"] else ""
        self.stdout.write(f"{knowledge_base.slug}: forgot {pairs} pair verdict(s) and {claim_pairs} claim-pair "
                          f"verdict(s){which}; those pairs are judged again when next retrieved.")
