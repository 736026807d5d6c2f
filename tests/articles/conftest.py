import pytest

from articles.models import KnowledgeBase
from articles.sources import source_sync_request
from articles.sources_sync import source_sync_run
from tests.support.page_server import page_server  # noqa: F401  (fixture)


@pytest.fixture
def loopback_kb(kb):
    """The test pages live on loopback, which a knowledge base must allow explicitly."""
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    kb.refresh_from_db()
    return kb


def run_sync(source, **kwargs):
    """Request a sync and run it here (the on-commit enqueue does not fire inside a test transaction)."""
    sync = source_sync_request(source=source, **kwargs)
    return source_sync_run(sync_id=sync.pk)
