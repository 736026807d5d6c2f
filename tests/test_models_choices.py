"""Status and kind values come from their TextChoices: every field with choices is held to them by the database
(not only by forms), and templates compare against the choices, never a spelled value."""
import pytest
from django.apps import apps
from django.contrib.postgres.fields import ArrayField
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from conflicts.models import ActivityKind, Conflict, ConflictActivity
from tests.factories import make_article


def _lookups(q):
    for child in q.children:
        if isinstance(child, models.Q):
            yield from _lookups(child)
        else:
            yield child


def _allowed(model, name):
    """The value sets the model's check constraints hold field `name` to."""
    return [
        set(value)
        for constraint in model._meta.constraints
        if isinstance(constraint, models.CheckConstraint) and isinstance(constraint.condition, models.Q)
        for lookup, value in _lookups(constraint.condition)
        if lookup in (f"{name}__in", f"{name}__contained_by")
    ]


def test_every_choice_field_has_a_check_constraint_with_exactly_its_values():
    missing = []
    for label in ("articles", "conflicts"):
        for model in apps.get_app_config(label).get_models():
            for field in model._meta.fields:
                base = field.base_field if isinstance(field, ArrayField) else field
                if not base.choices:
                    continue
                values = {value for value, _ in base.flatchoices}
                allowed = _allowed(model, field.name)
                expected = values | ({""} if field.blank and not isinstance(field, ArrayField) else set())
                if expected not in allowed:
                    missing.append(f"{model.__name__}.{field.name}: choices {sorted(expected)}, held to {allowed}")
    assert missing == []


@pytest.mark.django_db
def test_the_database_refuses_an_activity_kind_outside_its_choices(kb):
    a = make_article(kb, "a-1", "Tickets cost 3 euro.", index=False)
    b = make_article(kb, "b-1", "Tickets cost 4 euro.", index=False)
    low, high = sorted((a, b), key=lambda article: article.pk)
    now = timezone.now()
    conflict = Conflict.objects.create(knowledge_base=kb, article_low=low, article_high=high, first_seen=now, last_seen=now)
    ConflictActivity.objects.create(conflict=conflict, kind=ActivityKind.OPENED)
    with pytest.raises(IntegrityError), transaction.atomic():
        ConflictActivity.objects.create(conflict=conflict, kind="invented")


def test_templates_compare_stored_values_against_their_choices():
    """A template compares a status, kind, role... with the TextChoices the context processors pass
    (`c.status == ConflictStatus.OPEN`), never with a spelled value that a rename would silently break."""
    import re
    from pathlib import Path

    spelled = re.compile(r"\.(status|substatus|kind|role|citation|outcome|reason|state|action|source_type)\s*(==|!=)\s*[\"']")
    templates = Path(__file__).resolve().parents[1] / "templates"
    found = [f"{path.relative_to(templates)}:{number}: {line.strip()[:120]}"
             for path in sorted(templates.rglob("*.*")) for number, line in enumerate(path.read_text().splitlines(), 1)
             if spelled.search(line)]
    assert found == []
