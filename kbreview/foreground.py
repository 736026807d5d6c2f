"""Background work waits for a gap in the web's foreground work on this machine.

A lower CPU priority (WORKER_NICENESS) decides who gets a core, not what the cores share: a worker
running beside a reply's search still slows it through the memory, caches and database they share. So
a web process holds a share of a lock on one file while it serves foreground work (a search, the built-in
answer path's writes and any answer it computes itself), and a worker process waits, before each task
and before a task's next long step (a detection's recording, a re-sync's next batch), until no share is
held or WORKER_YIELD_MAX_S has passed (under sustained load there is no gap, and the work must
still get done).

The shares are open-file-description record locks (F_OFD_SETLK: each open of the file holds its own,
so every thread of a web process does), and a worker only asks whether a write lock could be placed
(F_OFD_GETLK) without ever taking one: the web never waits for a worker. The kernel releases a share when
its holder closes the file or dies, so a crashed web process never leaves workers waiting. Linux (3.15 or
later, 64-bit); elsewhere, or on a filesystem without record locks, nothing waits. Web and workers must
see the same file on a local filesystem: it stands for the cores they share.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import struct
import time
from collections.abc import Iterator

logger = logging.getLogger(__name__)

POLL_S = 0.005  # searches overlap closely under load: a coarse poll misses the gaps between them
# After a wait that found no gap the machine is saturated with foreground work, and waiting longer only
# starves the queue: the next tasks of this process run without waiting for this many times the bound.
SATURATED_SKIP_FACTOR = 4

# struct flock on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (0 for OFD locks), padding.
_FLOCK = struct.Struct("hhqqi4x")
_OFD = hasattr(fcntl, "F_OFD_GETLK") and struct.calcsize("l") == 8

_background = False  # set once in worker and beat processes (kbreview.celery); the web never waits
_skip_until = 0.0
_warned = False


def mark_background_process() -> None:
    global _background
    _background = True


def _lock_path() -> str:
    from django.conf import settings

    return settings.FOREGROUND_LOCK_FILE


def _open() -> int | None:
    """The lock file, read-only (a read lock needs no more; a read-only deploy has it already), created
    readable by the other processes' users if missing. None, warned once per process, when it cannot be opened."""
    global _warned
    path = _lock_path()
    try:
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as exc:
        if not _warned:
            _warned = True
            logger.warning("foreground lock %s unusable (%s): background work will not wait for replies", path, exc)
        return None


def _whole_file(kind: int) -> bytes:
    return _FLOCK.pack(kind, os.SEEK_SET, 0, 0, 0)


def _share(fd: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _whole_file(fcntl.F_RDLCK))  # never conflicts: nobody writes
    except OSError:
        return False  # a filesystem without record locks: the feature is off, the reply unaffected
    return True


def _foreground_now(fd: int) -> bool:
    """Whether some open of the file holds a share, asked without taking any lock."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _whole_file(fcntl.F_WRLCK))
    return _FLOCK.unpack(answer)[0] != fcntl.F_UNLCK


@contextlib.contextmanager
def foreground_work() -> Iterator[None]:
    """Around work a person is waiting for. Each use opens the file anew: an OFD lock belongs to an open file,
    so every thread of a web process holds its own share. A background process's own searches are not
    foreground work."""
    fd = None if _background or not _OFD else _open()
    if fd is not None and not _share(fd):
        os.close(fd)
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the share


def yield_to_foreground() -> float:
    """In a worker or beat process, wait (at most WORKER_YIELD_MAX_S) for a gap in the foreground work;
    elsewhere (the web, a CLI, a task run eagerly in its caller) nothing."""
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
    if max_wait_s <= 0 or started < _skip_until or not _OFD:
        return 0.0
    fd = _open()
    if fd is None:
        return 0.0
    try:
        while True:
            try:
                busy = _foreground_now(fd)
            except OSError:
                return time.monotonic() - started  # no record locks here: never hold work up for them
            waited = time.monotonic() - started
            if not busy:
                return waited
            if waited >= max_wait_s:
                _skip_until = started + waited + SATURATED_SKIP_FACTOR * max_wait_s
                return waited
            time.sleep(min(POLL_S, max_wait_s - waited))
    finally:
        os.close(fd)
