"""The sending half of the outbox, shared by every app (articles/jobs.py, conflicts/jobs.py).

Work is first a row written in the caller's transaction (a turn's DetectionRun, a SuggestionJob, an
IndexSyncJob, a SourceSync); the row is the truth and a broker message only wakes a worker for it.
Messages go out after commit, and a broker that cannot be reached fails nothing: the row stays queued
and the sweeper (Celery beat, every TASK_SWEEP_INTERVAL_S, in every configuration) sends it again.
Workers claim a row with a conditional update before working on it, so a duplicate message does nothing.

Tasks are sent by name, so services can enqueue without importing the task modules that import them.

No request waits on the broker: on commit a message is handed to this process's publisher thread, which
sends it (a broker that is slow or down costs the request nothing; after a failed send the publisher
leaves messages to the sweeper for BROKER_BACKOFF_S rather than wait on a dead broker for each).
Messages still in hand when the process exits are sent by an exit hook (bounded); any lost with a killed
process are re-sent by the sweeper, since their rows were committed first.
"""
from __future__ import annotations

import atexit
import datetime as dt
import functools
import logging
import os
import queue
import threading
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from kbreview.celery import app, claim_expiry

logger = logging.getLogger(__name__)

__all__ = ["claim_expiry", "publisher", "send", "send_on_commit", "sweep_cutoff"]

BROKER_BACKOFF_S = 5.0  # after a failed send, messages wait for the sweeper this long instead of the broker
EXIT_FLUSH_S = 5.0


def send(task_name: str, *args, countdown: float | None = None) -> bool:
    """Publish one message now (to run after `countdown` seconds); False (logged) when the broker
    cannot take it."""
    try:
        app.signature(task_name, args=args).apply_async(countdown=countdown)
    except Exception as exc:  # broker unreachable: the committed row waits for the sweeper
        logger.warning("could not enqueue %s%r (%s: %s); the sweeper will send it again",
                       task_name, args, type(exc).__name__, exc)
        return False
    return True


class Publisher:
    """One daemon thread per process that sends the messages committed transactions hand it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pid: int | None = None
        self._queue: queue.SimpleQueue | None = None
        self._pending = 0
        self._backoff_until = 0.0
        self.skipped = 0  # messages left to the sweeper while backing off (for logs and tests)

    def put(self, task_name: str, args: tuple) -> None:
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child: the parent's thread is not ours
                self._pid, self._queue, self._pending = os.getpid(), queue.SimpleQueue(), 0
                threading.Thread(target=self._run, args=(self._queue,), name="kbreview-publisher",
                                 daemon=True).start()
            self._pending += 1
            self._queue.put((task_name, args))

    def _run(self, messages: queue.SimpleQueue) -> None:
        while True:
            task_name, args = messages.get()
            try:
                if time.monotonic() < self._backoff_until:
                    self.skipped += 1
                elif not send(task_name, *args):
                    self._backoff_until = time.monotonic() + BROKER_BACKOFF_S
            finally:
                with self._lock:
                    if messages is self._queue:
                        self._pending -= 1
                        self._idle.notify_all()

    def flush(self, timeout_s: float = EXIT_FLUSH_S) -> bool:
        """Wait until every message handed over so far was sent (or given up); False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._pending and self._pid == os.getpid():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True


publisher = Publisher()
atexit.register(publisher.flush)


def _hand_over(task_name: str, *args) -> None:
    if app.conf.task_always_eager:  # tests that run tasks in this process want their effect at once
        send(task_name, *args)
    else:
        publisher.put(task_name, args)


def send_on_commit(task_name: str, *args) -> None:
    """Send once the caller's transaction commits (at once outside one), from the publisher thread.
    Robust: whatever happens here, a committed request must not turn into an error."""
    transaction.on_commit(functools.partial(_hand_over, task_name, *args), robust=True)


def sweep_cutoff(older_than_s: float | None = None) -> dt.datetime:
    """Rows queued before this moment are due to be sent again (default: one sweep interval ago)."""
    waited = settings.TASK_SWEEP_INTERVAL_S if older_than_s is None else older_than_s
    return timezone.now() - dt.timedelta(seconds=waited)
