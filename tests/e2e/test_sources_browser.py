"""Uploading several files to a source in a real browser: upload progress, then the sync's progress and
report; the articles reach retrieval. Screenshot in test-artifacts/."""
import os

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's loop runs in this thread

import pytest  # noqa: E402

from articles.models import Article  # noqa: E402
from articles.selectors import search  # noqa: E402
from articles.services import knowledge_base_get_or_create  # noqa: E402
from articles.sources import source_create  # noqa: E402
from tests.conflicts.console_support import make_user  # noqa: E402
from tests.e2e.test_console_browser import ARTIFACTS, browser, sign_in  # noqa: E402,F401  (fixture)

pytestmark = pytest.mark.e2e


def test_ops_uploads_several_files_and_watches_the_sync(browser, live_server, transactional_db, tmp_path):  # noqa: F811
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Kettles")
    make_user("otto", kb, "ops")
    source = source_create(knowledge_base=kb, name="Policy folder", kind="upload")
    files = {
        "warranty.md": "# Warranty\n\nEvery kettle carries a two-year warranty against manufacturing faults.\n",
        "returns.md": "# Returns\n\nYou can return any kettle within 30 days of delivery.\n",
        "care.md": "# Descaling\n\nDescale the kettle once a month with white vinegar.\n",
    }
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))

    page = browser.new_page()
    sign_in(page, live_server.url, "otto", next_path=f"/sources/{source.pk}/")
    page.set_input_files("#upload-files", paths)
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".sync-job[data-status=done]", timeout=60_000)

    assert page.locator("progress.upload").evaluate("bar => bar.value") == 100
    assert page.locator(".upload-label").inner_text() == "uploaded 100%"
    assert page.locator("progress.sync").evaluate("bar => bar.value") == 100
    assert "3 / 3 pages" in page.locator(".sync-job").inner_text()
    assert "3 new" in page.locator(".sync-counts").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "source-upload.png"), full_page=True)

    assert sorted(Article.objects.filter(knowledge_base=kb).values_list("external_ref", flat=True)) == [
        "care", "returns", "warranty"
    ]
    assert search(knowledge_base=kb, question="how often should I descale")[0].external_ref == "care"
    page.close()
