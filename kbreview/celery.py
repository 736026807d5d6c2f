"""The Celery app: the one path for background work, with Redis (REDIS_URL) or, without it, kombu's
filesystem transport in ./var. Workers and beat lower their CPU priority at start-up, and each task
first waits (boundedly) for a gap in the web's foreground work on this machine (kbreview/foreground.py)."""
from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import beat_init, celeryd_init, task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")

app = Celery("kbreview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


def lower_priority() -> None:
    """Background work yields the cores to the web process (also in production: same settings), its
    queries on the embedded server too (lower_database_priority)."""
    from django.conf import settings
    from django.db.backends.signals import connection_created

    from kbreview.foreground import mark_background_process

    mark_background_process()
    if settings.WORKER_NICENESS > 0:
        os.nice(settings.WORKER_NICENESS)
        # Registered before the pool forks: every child's connections are lowered as they open.
        connection_created.connect(lower_database_priority, dispatch_uid="kbreview-lower-database-priority")


def lower_database_priority(sender, connection, **_kwargs) -> None:
    """A worker's queries run in a PostgreSQL backend process of their own, which would otherwise take the
    cores at the web's priority (a check spends more time there than in Python). On the embedded server,
    on this machine, that backend is lowered by WORKER_NICENESS as the connection opens. A server
    elsewhere is left alone (its processes are not ours to renice); so is one we may not renice."""
    from django.conf import settings

    if not connection.settings_dict.get("EMBEDDED_PGDATA"):
        return
    pid = connection.connection.info.backend_pid
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, pid) + settings.WORKER_NICENESS))
    except OSError as exc:
        logger.info("could not lower the priority of database backend %s (%s); its queries keep the web's", pid, exc)


def broker_folders() -> list[str]:
    """The filesystem transport's folders (empty with Redis); made before a worker or a web process uses them."""
    options = app.conf.broker_transport_options or {}
    return [options[k] for k in ("data_folder_in", "data_folder_out", "control_folder") if k in options]


def ensure_broker_folders() -> None:
    for folder in broker_folders():
        os.makedirs(folder, exist_ok=True)


@celeryd_init.connect
def _worker_start(**_kwargs) -> None:
    # Before the pool forks, so every child inherits the lower priority.
    ensure_broker_folders()
    lower_priority()
    logger.info("Celery worker on %s, niceness %s", app.conf.broker_url, os.nice(0))


def _is_eager(task) -> bool:
    """A task run in its caller's process, whose connection, transaction and foreground are the caller's."""
    return bool(getattr(getattr(task, "request", None), "is_eager", False))


@task_prerun.connect
def _wait_for_a_gap_in_replies(sender=None, **_kwargs) -> None:
    """Every task a worker runs first waits (boundedly) for the web's foreground work on this machine to
    finish; not an eager task."""
    from kbreview.foreground import yield_to_foreground

    if not _is_eager(sender):
        yield_to_foreground()


@task_prerun.connect
@task_postrun.connect
def _connections_as_around_a_request(sender=None, **_kwargs) -> None:
    """A task is to a worker what a request is to the web: connections older than CONN_MAX_AGE or broken
    are closed before and after it, others kept (and health-checked before reuse). Not around a task run
    in the caller's process (eager), whose connection and transaction are the caller's."""
    from django.db import close_old_connections

    if not _is_eager(sender):
        close_old_connections()


@beat_init.connect
def _beat_start(**_kwargs) -> None:
    ensure_broker_folders()
    lower_priority()
