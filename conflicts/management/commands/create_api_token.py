from django.core.management.base import BaseCommand

from articles.management.options import knowledge_base_from_option
from conflicts.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a chatbot. The token is printed once and stored only as a hash."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--kb", help="knowledge base slug (default: the only one)")

    def handle(self, *args, **options):
        token, secret = api_token_create(knowledge_base=knowledge_base_from_option(options["kb"]), name=options["name"])
        self.stderr.write(f"Token {token.name!r} for {token.knowledge_base.slug} (shown once, keep it safe):")
        self.stdout.write(secret)
