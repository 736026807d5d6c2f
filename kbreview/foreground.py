"""Background work waits for a gap in the web's foreground work on this machine.

A lower CPU priority (WORKER_NICENESS) decides who gets a core, not what the cores share: a worker
running beside a reply's search still slows it through the memory, caches and database they share. So
a web process holds a shared lock on one file while it serves foreground work (a search), and a worker
process waits, before each task (and before a detection's recording), until it can take the lock alone or WORKER_YIELD_MAX_S has passed
(under sustained load there is no gap, and the work must still get done).

An advisory file lock (flock) is released by the kernel when its holder dies, so a crashed web process
never leaves workers waiting; it is local to the machine, as the cores it shares are: workers on other
machines have nothing to wait for.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterator

logger = logging.getLogger(__name__)

POLL_S = 0.02
# After a wait that found no gap the machine is saturated with foreground work, and waiting longer only
# starves the queue: the next tasks of this process run without waiting for this many times the bound.
SATURATED_SKIP_FACTOR = 4

_background = False  # set once in worker and beat processes (kbreview.celery); the web never waits
_skip_until = 0.0


def mark_background_process() -> None:
    global _background
    _background = True


def _lock_path() -> str:
    from django.conf import settings

    return settings.FOREGROUND_LOCK_FILE


def _open() -> int:
    path = _lock_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


@contextlib.contextmanager
def foreground_work() -> Iterator[None]:
    """Around work a person is waiting for. Each use opens the file anew: flock belongs to an open file,
    so every thread of a web process holds its own share. A background process's own searches are not
    foreground work; nor is anything when the file cannot be opened (never in a reply's way)."""
    if _background:
        yield
        return
    try:
        fd = _open()
    except OSError as exc:
        logger.warning("foreground lock %s unavailable (%s); workers will not wait for replies", _lock_path(), exc)
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the share


def yield_to_foreground() -> float:
    """In a worker or beat process, wait (at most WORKER_YIELD_MAX_S) for a gap in the foreground work;
    elsewhere (the web, a CLI, a task run eagerly in its caller) nothing. Called before each task and
    before a task's next long step, so a long task does not keep running into replies."""
    if not _background:
        return 0.0
    from django.conf import settings

    return wait_for_gap(settings.WORKER_YIELD_MAX_S)


def wait_for_gap(max_wait_s: float) -> float:
    """Wait until no foreground work holds the lock, at most max_wait_s; returns the seconds waited. A wait
    that ends without a gap is not repeated for SATURATED_SKIP_FACTOR times the bound, so under sustained
    load the queue still drains at (nearly) full speed."""
    global _skip_until
    started = time.monotonic()
    if max_wait_s <= 0 or started < _skip_until:
        return 0.0
    try:
        fd = _open()
    except OSError as exc:
        logger.warning("foreground lock %s unavailable (%s); not waiting", _lock_path(), exc)
        return 0.0
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= max_wait_s:
                    _skip_until = started + waited + SATURATED_SKIP_FACTOR * max_wait_s
                    return waited
                time.sleep(min(POLL_S, max_wait_s - waited))
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)  # only looking: the web must never wait for a worker
                return time.monotonic() - started
    finally:
        os.close(fd)
