"""A full re-sync started from the ops page runs on a real worker (the embedded default's filesystem
broker) while Chromium watches its progress bar move from the job row, then reach 100%."""
import os
import re

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest  # noqa: E402

from articles.ingest import ParsedArticle  # noqa: E402
from articles.models import IndexSyncJob, SyncStatus  # noqa: E402
from articles.services import articles_import, knowledge_base_get_or_create  # noqa: E402
from tests.conflicts.console_support import PASSWORD, make_user  # noqa: E402
from tests.e2e.test_console_browser import browser  # noqa: E402,F401  (the fixture)
from tests.support import processes  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.worker]
ARTICLES = 600  # enough batches of 64 that the page polls (every second) while the job runs


def test_full_resync_progress_moves_in_the_browser(browser, live_server, transactional_db, settings, tmp_path):  # noqa: F811
    kb = knowledge_base_get_or_create(slug="acme", name="Acme Ferries")
    articles_import(knowledge_base=kb, reindex=False, parsed=[
        ParsedArticle(ref=f"faq-{i}", title=f"Question {i}", body=f"Locker {i} on deck {i % 7} costs €{i % 13 + 2}.",
                      source="faq", source_uri="faq.json", updated_at=None, location=f"faq.json item {i}")
        for i in range(ARTICLES)
    ])
    make_user("olga", kb, "ops")
    folder = tmp_path / "broker"
    saved = processes.point_app_at(task_always_eager=False, broker_url="filesystem://", result_backend=None,
                                   broker_transport_options=processes.filesystem_broker_options(folder))
    log = tmp_path / "worker.log"
    worker = processes.start_worker("e2e", processes.base_env(FILESYSTEM_BROKER_DIR=folder), log=log)
    try:
        page = browser.new_page()
        page.goto(live_server.url + "/ops/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"/ops/$"))
        page.check("input[name=full]")
        page.click("text=Re-sync the index")
        seen: list[int] = []
        page.wait_for_selector(".sync-job")

        def progress() -> int:
            value = page.eval_on_selector(".sync-job progress", "el => el.value")
            if not seen or seen[-1] != value:
                seen.append(value)
            return value

        processes.wait_for(lambda: progress() == 100 and page.locator('.sync-job[data-status="done"]').count(), 180,
                           "the progress bar to reach 100%", logs=[log])
        page.screenshot(path=str(tmp_path / "ops-progress.png"))
    finally:
        processes.stop(worker)
        processes.point_app_at(**saved)
    assert seen == sorted(seen), seen  # it only moves forward
    assert any(0 < value < 100 for value in seen), f"the bar jumped straight to done: {seen}"
    job = IndexSyncJob.objects.get(knowledge_base=kb)
    assert (job.status, job.done, job.total) == (SyncStatus.DONE, ARTICLES, ARTICLES)
