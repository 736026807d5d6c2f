"""The outbox (work rows written with what needs them), claims, de-duplication and the sweeper."""
import datetime as dt

import pytest
from django.utils import timezone

from articles.services import article_edit
from conflicts.models import Conflict, ConflictOccurrence, DetectionOutcome, DetectionRun, JobStatus, SuggestionJob
from conflicts.services import turn_detect
from conflicts.services.suggestions import suggestion_enqueue, suggestion_job_run
from conflicts.services.turns import RetrievedRef, turn_report
from kbreview.jobs import jobs_sweep

pytestmark = pytest.mark.django_db


def report(kb, external_id, refs=("faq-fare-old", "web-fares")):
    turn, _ = turn_report(
        knowledge_base=kb, external_id=external_id, question="How much is a ticket?",
        retrieved=[RetrievedRef(ref=r, rank=i) for i, r in enumerate(refs, 1)],
    )
    return turn


def test_a_broker_outage_fails_no_turn_and_the_sweeper_sends_it_later(
    kb, fare_articles, unreachable_broker, settings, django_capture_on_commit_callbacks
):
    settings.DETECTION_DETECTOR = "claims"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        turn = report(kb, "t-outage")
    assert len(callbacks) == 1  # handed to the publisher thread, whose send failed and was swallowed
    run = DetectionRun.objects.get(turn=turn)
    assert run.outcome == DetectionOutcome.QUEUED and run.claimed_at is None

    assert jobs_sweep()["detection"] == 0  # too fresh to be re-sent
    assert jobs_sweep(older_than_s=0)["detection"] == 0  # broker still down: nothing sent, nothing lost
    unreachable_broker.end()  # the broker is back (tasks run here, as a worker would)
    assert jobs_sweep(older_than_s=0)["detection"] == 1
    run.refresh_from_db()
    assert run.outcome == DetectionOutcome.OK and run.attempts == 1
    assert Conflict.objects.filter(knowledge_base=kb).count() == 1


def test_a_turn_is_detected_once_however_often_its_message_arrives(kb, fare_articles, inline_detection,
                                                                     django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        turn = report(kb, "t-once")
    first = DetectionRun.objects.get(turn=turn)
    again = turn_detect(turn_id=turn.pk)
    assert again.outcome == first.outcome == DetectionOutcome.OK
    assert (again.finished_at, again.attempts) == (first.finished_at, 1)
    assert Conflict.objects.get(knowledge_base=kb).times_seen == 1
    assert ConflictOccurrence.objects.filter(turn=turn).count() == 1


def test_a_check_held_by_a_live_worker_is_left_alone_and_a_dead_ones_is_taken_over(
    kb, fare_articles, inline_detection, settings
):
    turn = report(kb, "t-claimed")  # no commit in this test: the check has not started
    held_since = timezone.now()
    DetectionRun.objects.filter(turn=turn).update(claimed_at=held_since, attempts=1)
    run = turn_detect(turn_id=turn.pk)
    assert run.outcome == DetectionOutcome.QUEUED and run.claimed_at == held_since

    # The claim is older than the hard time limit: that worker is dead.
    DetectionRun.objects.filter(turn=turn).update(
        claimed_at=held_since - dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)
    )
    assert jobs_sweep(older_than_s=3600)["detection"] == 1  # re-sent although it is recent
    run.refresh_from_db()
    assert run.outcome == DetectionOutcome.OK and run.attempts == 2


def test_a_check_whose_worker_lost_the_database_is_re_sent_long_before_the_task_time_limit(
    kb, fare_articles, inline_detection, settings
):
    """A worker claimed the check and then lost PostgreSQL, so it could neither finish nor release the
    claim. The check's own bounds say when the claim is abandoned, not the task's 300 s hard limit."""
    settings.TASK_SWEEP_INTERVAL_S = 30
    turn = report(kb, "t-db-died")
    bound = (settings.DETECTION_TIMEOUT_S + settings.DETECTION_BATCH_WAIT_MS / 1000
             + 4 * settings.WORKER_YIELD_MAX_S + settings.DETECTION_CLAIM_MARGIN_S)
    assert bound < 2 * settings.TASK_SWEEP_INTERVAL_S + 30 < settings.CELERY_TASK_TIME_LIMIT
    DetectionRun.objects.filter(turn=turn).update(claimed_at=timezone.now() - dt.timedelta(seconds=bound - 5),
                                                  attempts=1)
    assert jobs_sweep(older_than_s=3600)["detection"] == 0  # still within its bounds: a live worker's
    DetectionRun.objects.filter(turn=turn).update(claimed_at=timezone.now() - dt.timedelta(seconds=bound + 1))
    assert jobs_sweep(older_than_s=3600)["detection"] == 1
    run = DetectionRun.objects.get(turn=turn)
    assert run.outcome == DetectionOutcome.OK and run.attempts == 2


def test_one_suggestion_computation_per_conflict_and_article_versions(kb, fare_articles, inline_detection,
                                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            report(kb, f"t-{i}")
    conflict = Conflict.objects.get(knowledge_base=kb)
    assert conflict.times_seen == 3
    job = SuggestionJob.objects.get(conflict=conflict)
    assert job.status == JobStatus.DONE and job.attempts == 1
    assert suggestion_job_run(job_id=job.pk).attempts == 1  # a duplicate message computes nothing

    # A reviewer asking again gets a new computation; a new occurrence on the same versions does not.
    with django_capture_on_commit_callbacks(execute=True):
        assert suggestion_enqueue(conflict_id=conflict.pk, force=True) is not None
        report(kb, "t-3")
    assert SuggestionJob.objects.filter(conflict=conflict).count() == 2

    old = fare_articles["old"]
    edited = article_edit(article=old, expected_version_id=old.current_version_id,
                          body="A single adult ticket to Inishmara costs €19.")
    with django_capture_on_commit_callbacks(execute=True):
        report(kb, "t-4")
    assert Conflict.objects.get(pk=conflict.pk).times_seen == 5
    newest = SuggestionJob.objects.filter(conflict=conflict).latest("created_at")
    assert SuggestionJob.objects.filter(conflict=conflict).count() == 3  # new versions: computed again
    assert edited.pk in (newest.version_low_id, newest.version_high_id)


def test_a_pending_suggestion_job_is_not_queued_twice(kb, fare_articles, inline_detection,
                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        report(kb, "t-1")
    conflict = Conflict.objects.get(knowledge_base=kb)
    SuggestionJob.objects.all().delete()
    # No commit: the first job stays queued, as when the worker is busy.
    first = suggestion_enqueue(conflict_id=conflict.pk)
    assert first is not None
    assert suggestion_enqueue(conflict_id=conflict.pk) is None
    assert suggestion_enqueue(conflict_id=conflict.pk, force=True) is None
    assert SuggestionJob.objects.filter(conflict=conflict, status=JobStatus.QUEUED).count() == 1


def _expired(model) -> dt.datetime:
    return timezone.now() - dt.timedelta(seconds=model.lease_ttl_s() + 1)


@pytest.mark.django_db
def test_the_sweeper_fails_rows_whose_lease_expired_on_their_last_attempt_and_re_sends_the_others(
        kb, fare_articles, settings, unreachable_broker):
    settings.DETECTION_DETECTOR = "claims"
    turns = [turn_report(knowledge_base=kb, external_id=f"t-{n}", question="How much is a ticket?",
                         retrieved=[RetrievedRef(ref="faq-fare-old", rank=1), RetrievedRef(ref="web-fares", rank=2)])[0]
             for n in range(2)]
    DetectionRun.objects.filter(turn=turns[0]).update(claimed_at=_expired(DetectionRun), attempts=5)
    DetectionRun.objects.filter(turn=turns[1]).update(claimed_at=_expired(DetectionRun), attempts=2)
    unreachable_broker.end()  # tasks run here (eager), as a worker would

    swept = jobs_sweep(older_than_s=3600)
    assert (swept["failed"], swept["detection"]) == (1, 1)
    given_up, retried = (DetectionRun.objects.get(turn=turn) for turn in turns)
    assert given_up.outcome == DetectionOutcome.ERROR and "5 attempts" in given_up.reason
    assert (retried.outcome, retried.attempts) == (DetectionOutcome.OK, 3)


@pytest.mark.django_db
def test_the_sweeper_fails_a_suggestion_job_left_on_its_last_attempt(kb, fare_articles, inline_detection,
                                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        turn_report(knowledge_base=kb, external_id="t-1", question="How much is a ticket?",
                    retrieved=[RetrievedRef(ref="faq-fare-old", rank=1), RetrievedRef(ref="web-fares", rank=2)])
    job = SuggestionJob.objects.get()
    SuggestionJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, claimed_at=_expired(SuggestionJob),
                                                   heartbeat_at=_expired(SuggestionJob), attempts=5)
    assert jobs_sweep()["failed"] == 1
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "abandoned" in job.error and job.finished_at is not None
