"""The sending half of the outbox, shared by every app (articles/jobs.py, conflicts/jobs.py).

Work is first a row written in the caller's transaction (a turn's DetectionRun, a SuggestionJob, an
IndexSyncJob, a SourceSync); the row is the truth and a broker message only wakes a worker for it.
Messages go out after commit, and a broker that cannot be reached fails nothing: the row stays queued
and the sweeper (Celery beat, every TASK_SWEEP_INTERVAL_S, in every configuration) sends it again.
Workers claim a row with a conditional update before working on it, so a duplicate message does nothing.

Tasks are sent by name, so services can enqueue without importing the task modules that import them.
"""
from __future__ import annotations

import datetime as dt
import functools
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from kbreview.celery import app, claim_expiry

logger = logging.getLogger(__name__)

__all__ = ["claim_expiry", "send", "send_on_commit", "sweep_cutoff"]


def send(task_name: str, *args) -> bool:
    """Publish one message now; False (logged) when the broker cannot take it."""
    try:
        app.signature(task_name, args=args).apply_async()
    except Exception as exc:  # broker unreachable: the committed row waits for the sweeper
        logger.warning("could not enqueue %s%r (%s: %s); the sweeper will send it again",
                       task_name, args, type(exc).__name__, exc)
        return False
    return True


def send_on_commit(task_name: str, *args) -> None:
    """Publish once the caller's transaction commits (at once outside one). Robust: whatever happens
    here, a committed request must not turn into an error."""
    transaction.on_commit(functools.partial(send, task_name, *args), robust=True)


def sweep_cutoff(older_than_s: float | None = None) -> dt.datetime:
    """Rows queued before this moment are due to be sent again (default: one sweep interval ago)."""
    waited = settings.TASK_SWEEP_INTERVAL_S if older_than_s is None else older_than_s
    return timezone.now() - dt.timedelta(seconds=waited)
