"""Starting background work, in one place: every job is a row, and `enqueue(row)` records it and sends its task
after commit; a registry maps each row model to its task (kbreview.leases holds the lease every row is worked
under, `jobs_sweep` the one sweeper for every row type). Nothing else in the project sends a task.

The row is the truth and a broker message only wakes a worker for it. Messages go out after commit, and a
broker that cannot be reached fails nothing: the row stays queued and the sweeper (Celery beat, every
TASK_SWEEP_INTERVAL_S, in every configuration) sends it again. Workers claim a row before working on it
(kbreview.leases), so a duplicate message does nothing.

The registry is filled by each app's tasks module (`@job_task(Model, ...)` above the task), which the
kbreview app config imports in every process, so a service enqueues a row without importing its task.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from kbreview.celery import app
from kbreview.leases import Leased, lease_fail, leases_exhausted, leases_stale

logger = logging.getLogger(__name__)

__all__ = ["enqueue", "job_kinds", "job_task", "jobs_sweep", "publisher", "wake", "wake_on_commit"]

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


# --- the registry: row model -> task -----------------------------------------------------------------


def _celery() -> str:
    return "celery"


@dataclass(frozen=True)
class JobKind:
    name: str  # the sweep report's key
    model: type[Leased]
    task: Any  # the Celery task object
    args: Callable[[Any], tuple]  # the task's arguments for a row
    # "celery" (workers), "inline" (at commit in this process: a test or evaluation-CLI fixture, never read
    # from the environment) or "off" (rows recorded, nothing sent, nothing swept).
    dispatch: Callable[[], str] = _celery


_kinds: dict[type, JobKind] = {}


def job_task(model: type[Leased], *, name: str, args: Callable[[Any], tuple] = lambda row: (row.pk,),
             dispatch: Callable[[], str] = _celery):
    """Register the decorated Celery task as the one that works `model`'s rows."""
    def register(task):
        _kinds[model] = JobKind(name=name, model=model, task=task, args=args, dispatch=dispatch)
        return task
    return register


def job_kinds() -> list[JobKind]:
    return list(_kinds.values())


def _kind(row: Leased) -> JobKind:
    try:
        return _kinds[type(row)]
    except KeyError:
        raise LookupError(f"no task is registered for {type(row).__name__} rows (kbreview.jobs.job_task)") from None


# --- starting work ---------------------------------------------------------------------------------


def enqueue(row: Leased) -> Leased:
    """Record the job row (if it is not saved yet) and send its task once the caller's transaction commits
    (at once outside one). Robust: whatever happens to the send, a committed request must not turn into an
    error; the sweeper sends the row again."""
    kind = _kind(row)
    if row.pk is None:
        row.save()
    mode = kind.dispatch()
    if mode == "off":
        return row
    args = kind.args(row)
    if mode == "inline":
        transaction.on_commit(lambda: kind.task.apply(args=args))
    else:
        transaction.on_commit(functools.partial(_hand_over, kind.task.name, *args), robust=True)
    return row


def wake(row: Leased, *, countdown: float) -> bool:
    """Send the committed row's task now, to run in `countdown` seconds (a batch gate's end, a delivery's
    next attempt). False when the broker cannot take it, or when its work is not sent to workers."""
    kind = _kind(row)
    if kind.dispatch() != "celery":
        return False
    return send(kind.task.name, *kind.args(row), countdown=max(countdown, 0.0))


def wake_on_commit(rows) -> None:
    """Send the committed rows' tasks again once the caller's transaction commits (work a batch left for
    another worker); to workers only, never inline. A duplicate message does nothing."""
    for row in list(rows):
        kind = _kind(row)
        if kind.dispatch() == "celery":
            transaction.on_commit(functools.partial(_hand_over, kind.task.name, *kind.args(row)), robust=True)


# --- the one sweeper -------------------------------------------------------------------------------


def sweep_cutoff(older_than_s: float | None = None) -> dt.datetime:
    """Rows queued before this moment are due to be sent again (default: one sweep interval ago)."""
    waited = settings.TASK_SWEEP_INTERVAL_S if older_than_s is None else older_than_s
    return timezone.now() - dt.timedelta(seconds=waited)


def jobs_sweep(*, older_than_s: float | None = None) -> dict[str, int]:
    """For every row type: fail the rows whose lease expired on their last attempt, and send again the rows
    left waiting longer than `older_than_s` (default: one sweep interval) or held under an expired lease.
    Safe to repeat: workers claim before working. Returns the rows sent per type (and `failed`)."""
    cutoff = sweep_cutoff(older_than_s)
    sent = {kind.name: 0 for kind in _kinds.values()}
    sent["failed"] = 0
    for kind in _kinds.values():
        if kind.dispatch() == "off":
            continue
        model = kind.model
        for row in model.objects.filter(leases_exhausted(model)):
            sent["failed"] += lease_fail(row, f"abandoned: its worker stopped on each of {row.attempts} attempts")
        for row in model.objects.filter(leases_stale(model, waited_before=cutoff)).exclude(leases_exhausted(model)):
            sent[kind.name] += send(kind.task.name, *kind.args(row))
    if any(sent.values()):
        logger.info("sweeper re-sent %s", sent)
    return sent
