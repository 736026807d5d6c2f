from django.core.management.base import BaseCommand

from articles.management.options import knowledge_base_from_option
from articles.selectors import search


class Command(BaseCommand):
    help = "Print the top hybrid-search results for a question."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--kb", help="knowledge base slug (default: the only one)")
        parser.add_argument("--limit", type=int, default=5)

    def handle(self, *args, **options):
        kb = knowledge_base_from_option(options["kb"])
        for i, hit in enumerate(search(knowledge_base=kb, question=options["question"], limit=options["limit"]), 1):
            snippet = hit.chunk_text.replace("\n", " ")[:160]
            self.stdout.write(f"{i}. [{hit.external_ref}] {hit.title}  (score {hit.score:.4f})\n   {snippet}")
