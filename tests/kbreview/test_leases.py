"""One way to start work and one lease: every job row model has its task in the registry, nothing but
kbreview/jobs.py sends a task, and the one sweeper re-sends or fails the rows of every type."""
import datetime as dt
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.utils import timezone

from articles.models import IndexSyncJob, SourceSync, SyncStatus
from conflicts.models import DetectionRun, InductionRun, InductionStatus, NotificationDelivery, SuggestionJob
from kbreview.celery import app
from kbreview.jobs import job_kinds, jobs_sweep
from kbreview.leases import Leased, lease_claim, lease_finish, lease_heartbeat

ROOT = Path(__file__).resolve().parents[2]
TASK_SEND = re.compile(r"\.delay\(|\.apply_async\(|send_task\(|\.apply\(")


def test_every_job_row_model_has_its_task_in_the_registry():
    leased = {model for model in apps.get_models() if issubclass(model, Leased)}
    kinds = {kind.model: kind for kind in job_kinds()}
    assert leased == set(kinds) == {DetectionRun, SuggestionJob, IndexSyncJob, SourceSync, InductionRun,
                                    NotificationDelivery}
    for kind in kinds.values():
        assert kind.task.name in app.tasks  # a task object, registered with Celery


def test_tasks_are_sent_only_by_the_enqueue_module():
    senders = sorted(
        str(path.relative_to(ROOT))
        for folder in ("agents", "articles", "conflicts", "kbreview")
        for path in (ROOT / folder).rglob("*.py")
        if TASK_SEND.search(path.read_text(encoding="utf-8"))
    )
    assert senders == ["kbreview/jobs.py"]


def _expired(model) -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=model.lease_ttl_s() + 1)


@pytest.mark.django_db
def test_a_claim_that_outlived_its_lease_writes_nothing(kb):
    run = InductionRun.objects.create(knowledge_base=kb, status=InductionStatus.QUEUED)
    assert lease_claim(InductionRun, pk=run.pk) is not None
    assert lease_claim(InductionRun, pk=run.pk) is None  # held by a live worker
    first = InductionRun.objects.get(pk=run.pk)
    InductionRun.objects.filter(pk=run.pk).update(heartbeat_at=_expired(InductionRun))  # that worker went silent
    assert lease_claim(InductionRun, pk=run.pk) is not None  # taken over
    assert not lease_heartbeat(first) and not lease_finish(first, status=InductionStatus.DONE)
    second = InductionRun.objects.get(pk=run.pk)
    assert (second.status, second.attempts) == (InductionStatus.RUNNING, 2)
    assert lease_finish(second, status=InductionStatus.DONE)


@pytest.mark.django_db
def test_an_index_sync_running_at_the_upgrade_holds_a_lease_the_sweeper_sees(kb, unreachable_broker):
    """A row held by a dead worker with no lease fields would be nobody's: the sweeper must see every held row."""
    job = IndexSyncJob.objects.create(knowledge_base=kb, status=SyncStatus.RUNNING, claimed_at=_expired(IndexSyncJob),
                                      attempts=1)  # claimed, never a heartbeat
    unreachable_broker.end()
    assert jobs_sweep(older_than_s=3600)["index_sync"] == 1
    job.refresh_from_db()
    assert job.status == SyncStatus.DONE and job.attempts == 2


def test_a_row_given_up_says_why_and_when_in_its_own_fields():
    """One give-up for every row type: the failed state, the reason in the row's reason field, the moment."""
    before = timezone.now()
    for row, reason_field in ((IndexSyncJob(), "error"), (SourceSync(), "error"), (SuggestionJob(), "error"),
                              (InductionRun(), "reason")):
        fields = row.lease_give_up("x" * 3000)
        assert fields["status"] == "failed" and fields[reason_field] == "x" * 2000, type(row).__name__
        assert fields["finished_at"] >= before
    assert InductionRun().lease_give_up("stopped")["status"] == InductionStatus.FAILED
