import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from articles.demo import DEMO_SLUG
from articles.memberships import membership_remove, membership_set
from articles.models import KnowledgeBase, Membership, Role

DEMO_MAIL_DOMAIN = "demo.kbreview.example"  # reserved for examples: nothing is ever sent outside


class Command(BaseCommand):
    help = "Create (or reset) one demo user per role on the demo knowledge base, with fresh random passwords."

    def handle(self, *args, **options):
        kb = KnowledgeBase.objects.filter(slug=DEMO_SLUG).first()
        if kb is None:
            raise CommandError("Load the demo first: python manage.py load_demo")
        User = get_user_model()
        self.stdout.write("Demo sign-ins (new passwords each run):")
        for role in Role:
            user, _ = User.objects.get_or_create(username=role.value)
            password = secrets.token_urlsafe(9)
            user.set_password(password)
            # Demo users see the demo knowledge base and nothing else: no admin, no other memberships.
            user.is_staff = user.is_superuser = False
            # An address of their own, so notifications reach the run command's mail folder (var/mail); a
            # user who set another one in the console keeps it.
            user.email = user.email or f"{user.username}@{DEMO_MAIL_DOMAIN}"
            user.save()
            for other in Membership.objects.filter(user=user).exclude(knowledge_base=kb):
                membership_remove(membership=other)
            membership_set(user=user, knowledge_base=kb, role=role)
            self.stdout.write(f"  {role.value:<9} {user.username} / {password}  ({user.email})")
