"""Turns that arrive close together share an LLM call (Celery dispatch; agents.batching packs the calls).

The worker that takes a turn plans its check; when pairs are left for the LLM it either leaves the turn to a
gate already open in the same knowledge base (`gathering_until`), or opens one until DETECTION_BATCH_WAIT_MS
after the turn was recorded, sends a wake-up message for that moment and returns to the pool. The worker the
wake-up reaches claims the turn again and up to DETECTION_BATCH_MAX_TURNS - 1 queued turns of the knowledge
base (one conditional update, as for its own), plans them and judges all their pairs together. Only when the
broker will not take the wake-up does a worker wait in place (bounded by the same setting).
"""
from __future__ import annotations

import datetime as dt
import logging
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from conflicts.models import DetectionOutcome, DetectionRun
from conflicts.services.detection.judging import Check, Setup, check_plan
from conflicts.services.detection.leasing import ClaimLost, run_claim, run_release
from kbreview.jobs import wake, wake_on_commit
from kbreview.leases import lease_claim_values, lease_claimable

logger = logging.getLogger(__name__)


def gate_close_interrupted(run: DetectionRun) -> None:
    """A worker interrupted before collecting its company closes its gate: the turns left to it need another
    worker now."""
    if DetectionRun.objects.filter(pk=run.pk, gathering_until__isnull=False).update(gathering_until=None):
        wake_on_commit(DetectionRun.objects.filter(
            outcome=DetectionOutcome.QUEUED, claimed_at__isnull=True,
            turn__knowledge_base_id=run.turn.knowledge_base_id).exclude(pk=run.pk)[: settings.DETECTION_BATCH_MAX_TURNS])


def gate_join(run: DetectionRun) -> bool:
    """Leave this turn to a gate open in the same knowledge base (its wake-up takes it), if there is one.

    Race-free against the gate closing: both lock the gathering run's row, so either our release is
    committed before the woken worker collects, or the gate is closed before we look."""
    with transaction.atomic():
        gate = (
            DetectionRun.objects.select_for_update(of=("self",))
            .filter(outcome=DetectionOutcome.QUEUED, gathering_until__gt=timezone.now(),
                    turn__knowledge_base_id=run.turn.knowledge_base_id)
            .exclude(pk=run.pk)
            .first()
        )
        if gate is None:
            return False
        run_release(run, handed_over=True)  # not attempted: the gathering worker's claim counts the attempt
    logger.debug("turn %s left to the batch of turn %s", run.turn_id, gate.turn_id)
    return True


def _gate_end(run: DetectionRun) -> dt.datetime:
    return run.created_at + dt.timedelta(milliseconds=settings.DETECTION_BATCH_WAIT_MS)


def gate_open(run: DetectionRun) -> bool:
    """Open this turn's gate until DETECTION_BATCH_WAIT_MS after it was recorded and hand the turn to a wake-up
    message for that moment: turns of the knowledge base taken meanwhile join it (gate_join), and this worker
    is free at once instead of sleeping through the wait. The claim is released (the wake-up claims the turn
    again; a hand-over is not an attempt), so the sweeper re-sends the turn should the message be lost.

    False when there is nothing to open: the wait is over, or the gate was opened already (this is its wake-up,
    or a duplicate message: either takes the turn, waiting out what is left of the gate first), or the broker
    would not take the wake-up (this worker takes the turn back and waits itself)."""
    now, until = timezone.now(), _gate_end(run)
    if run.gathering_until is not None or until <= now:
        return False
    if not run_release(run, handed_over=True, gathering_until=until):
        raise ClaimLost(f"turn {run.turn_id}")
    if wake(run, countdown=(until - now).total_seconds()):
        return True
    run.claimed_at = run_claim(turn_id=run.turn_id)
    if run.claimed_at is None:
        return True  # another worker took it meanwhile (a duplicate message): it waits and judges
    run.gathering_until = until
    return False


def gather(run: DetectionRun, *, setup: Setup) -> tuple[list[Check], float, bool]:
    """Wait (bounded) for other turns of the knowledge base, then claim and plan the queued ones. Returns
    them, the deadline (DETECTION_TIMEOUT_S after the wait) that bounds their planning and the calls, and
    whether this worker waited (only when its gate's wake-up could not be sent, or came early)."""
    until = _gate_end(run)
    waited = until > timezone.now()
    if waited:
        DetectionRun.objects.filter(pk=run.pk, claimed_at=run.claimed_at).update(gathering_until=until)
        _wait_until(until)
    cap = settings.DETECTION_BATCH_MAX_TURNS - 1
    with transaction.atomic():
        DetectionRun.objects.filter(pk=run.pk).update(gathering_until=None)  # closes the gate (row lock)
        run.gathering_until = None  # as saved with the outcome
        waiting = (
            DetectionRun.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(lease_claimable(DetectionRun), turn__knowledge_base_id=run.turn.knowledge_base_id)
            .exclude(pk=run.pk)
            .order_by("created_at", "pk")
        )
        ids = list(waiting.values_list("pk", flat=True)[: cap + 1])
        taken, left = ids[:cap], ids[cap:]
        DetectionRun.objects.filter(pk__in=taken).update(**lease_claim_values(DetectionRun, timezone.now()))
        if left:  # more are waiting than one batch takes: make sure a worker comes for them
            wake_on_commit(waiting.exclude(pk__in=taken)[: settings.DETECTION_BATCH_MAX_TURNS])
    runs = DetectionRun.objects.select_related("turn").filter(pk__in=taken).order_by("created_at", "pk")
    deadline = time.monotonic() + setup.timeout_s
    return [check_plan(other, setup=setup, deadline=deadline) for other in runs], deadline, waited


def _wait_until(moment: dt.datetime) -> None:
    """The bounded wait in place: what is left of a gate when its wake-up came early, or the whole wait when
    the wake-up could not be sent (bench/detection_cost.py, on a simulated clock, moves its clock instead)."""
    time.sleep(max(0.0, (moment - timezone.now()).total_seconds()))
