import pytest

from articles.services import knowledge_base_get_or_create


@pytest.fixture
def kb(db):
    return knowledge_base_get_or_create(slug="acme", name="Acme Ferries")


@pytest.fixture
def other_kb(db):
    return knowledge_base_get_or_create(slug="other", name="Other Business")
