from django.core.management.base import BaseCommand, CommandError

from articles.models import KnowledgeBase
from conflicts.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a chatbot. The token is printed once and stored only as a hash."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--kb", help="knowledge base slug (default: the only one)")

    def handle(self, *args, **options):
        kbs = KnowledgeBase.objects.all()
        if options["kb"]:
            kbs = kbs.filter(slug=options["kb"])
        if kbs.count() != 1:
            raise CommandError("Name the knowledge base with --kb SLUG" if kbs.count() else "No such knowledge base")
        token, secret = api_token_create(knowledge_base=kbs.get(), name=options["name"])
        self.stderr.write(f"Token {token.name!r} for {token.knowledge_base.slug} (shown once, keep it safe):")
        self.stdout.write(secret)
