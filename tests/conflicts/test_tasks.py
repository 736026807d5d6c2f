"""The notification task on a real Celery worker (a separate process, on the embedded default's
filesystem broker): deliveries enqueued on commit through kbreview.jobs, retried with real backoff
delays after a 500 and a timeout, and given up (failed, kept in the log) after the last attempt."""
import pytest
from django.db import transaction

from articles.models import KnowledgeBase
from conflicts.models import DeliveryStatus, NotificationDelivery
from conflicts.services.notifications import notify_conflict_sighting, webhook_create
from tests.conflicts.console_support import make_conflict
from tests.factories import make_article
from tests.support import processes
from tests.support.webhook_receiver import Answer, WebhookReceiver
from tests.test_celery_worker import filesystem_broker  # noqa: F401  (fixture)

pytestmark = pytest.mark.worker


def test_a_real_worker_retries_with_backoff_and_gives_up_after_the_last_attempt(kb, filesystem_broker, tmp_path):
    KnowledgeBase.objects.filter(pk=kb.pk).update(allow_private_fetch=True)
    kb.refresh_from_db()
    flaky, broken = WebhookReceiver(), WebhookReceiver()
    flaky.script = [Answer(status=500), Answer(delay_s=4.0)]  # then 200
    broken.default = Answer(status=503)
    for receiver in (flaky, broken):
        receiver.secret = webhook_create(knowledge_base=kb, url=receiver.url(), events=["conflict.new"])[1]
    a, b = (make_article(kb, f"faq-{i}", f"Body {i}.", index=False) for i in range(2))
    log = tmp_path / "worker.log"
    env = processes.base_env(FILESYSTEM_BROKER_DIR=filesystem_broker, NOTIFICATION_RETRY_BASE_S=1,
                             NOTIFICATION_MAX_ATTEMPTS=3, NOTIFICATION_WEBHOOK_TIMEOUT_S=1.5)
    worker = processes.start_worker("notify", env, log=log)
    try:
        with transaction.atomic():  # the messages go out when this commits
            notify_conflict_sighting(conflict=make_conflict(kb, a, b, times_seen=3))
        finished = (DeliveryStatus.DELIVERED, DeliveryStatus.FAILED)
        processes.wait_for(lambda: NotificationDelivery.objects.filter(status__in=finished).count() == 2, 120,
                           "both deliveries to finish on the worker", logs=[log])
    finally:
        processes.stop(worker)
        for receiver in (flaky, broken):
            receiver.stop()
    by_target = {d.target: d for d in NotificationDelivery.objects.all()}
    delivered, failed = by_target[flaky.url()], by_target[broken.url()]
    assert (delivered.status, delivered.attempts, delivered.response_status) == (DeliveryStatus.DELIVERED, 3, 200)
    assert (failed.status, failed.attempts, failed.last_error) == (DeliveryStatus.FAILED, 3, "HTTP 503 from the receiver")
    for receiver in (flaky, broken):
        assert len(receiver.received) == 3 and all(r.signature_valid for r in receiver.received)
        arrivals = sorted(r.at for r in receiver.received)  # (a hung request is recorded when it ends)
        gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]
        # 1 s after the first failure, 2 s after the second (a timed-out attempt adds its 1.5 s)
        assert gaps[0] >= 0.9 and gaps[1] >= 1.9, gaps
