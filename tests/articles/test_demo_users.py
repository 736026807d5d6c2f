"""The demo's users (manage.py demo_users): one per role, each with an e-mail address of their own, so
notifications reach the run command's mail folder with no administrator (issue 29, item 10)."""
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from articles.demo import DEMO_SLUG
from articles.models import Membership, Role
from articles.services import knowledge_base_get_or_create

pytestmark = pytest.mark.django_db


def test_each_demo_user_has_an_address_and_keeps_one_they_set():
    kb = knowledge_base_get_or_create(slug=DEMO_SLUG, name="Demo")
    call_command("demo_users")
    users = {u.username: u for u in get_user_model().objects.all()}
    assert sorted(users) == sorted(Role.values)
    assert all(u.email == f"{u.username}@demo.kbreview.example" for u in users.values())
    assert Membership.objects.filter(knowledge_base=kb).count() == len(Role.values)

    get_user_model().objects.filter(username="viewer").update(email="me@example.org")
    call_command("demo_users")  # a reset keeps the address the user chose
    assert get_user_model().objects.get(username="viewer").email == "me@example.org"
