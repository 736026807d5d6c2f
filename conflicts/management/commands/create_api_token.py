import datetime as dt

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from articles.management.options import knowledge_base_from_option
from conflicts.models import TokenScope
from conflicts.services import api_token_create
from conflicts.services.tokens import TokenInputError


class Command(BaseCommand):
    help = "Create an API token for a chatbot. The token is printed once and stored only as a hash."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--kb", help="knowledge base slug (default: the only one)")
        parser.add_argument(
            "--scope", action="append", choices=TokenScope.values,
            help="what the token may do; repeat for several (default: all)",
        )
        parser.add_argument("--expires-days", type=int, help="the token stops working after this many days")

    def handle(self, *args, **options):
        days = options["expires_days"]
        if days is not None and not 1 <= days <= 3650:
            raise CommandError("--expires-days must be between 1 and 3650")
        try:
            token, secret = api_token_create(
                knowledge_base=knowledge_base_from_option(options["kb"]),
                name=options["name"],
                scopes=options["scope"],
                expires_at=timezone.now() + dt.timedelta(days=days) if days else None,
            )
        except TokenInputError as exc:
            raise CommandError(str(exc)) from exc
        expiry = f", expires {token.expires_at:%Y-%m-%d}" if token.expires_at else ""
        self.stderr.write(
            f"Token {token.name!r} for {token.knowledge_base.slug}, scopes {' '.join(token.scopes)}{expiry} "
            "(shown once, keep it safe):"
        )
        self.stdout.write(secret)
