"""The Celery app: the one path for background work, with Redis (REDIS_URL) or, without it, kombu's
filesystem transport in ./var. Workers and beat lower their CPU priority at start-up."""
from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import beat_init, celeryd_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")

app = Celery("kbreview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


def claim_expiry():
    """Work claimed before this moment belongs to a dead worker: Celery kills any task that runs past
    its hard time limit, so a claim (or a re-sync's last progress) older than that is abandoned."""
    import datetime as dt

    from django.conf import settings
    from django.utils import timezone

    return timezone.now() - dt.timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)


def lower_priority() -> None:
    """Background work yields the cores to the web process (also in production: same settings)."""
    from django.conf import settings

    if settings.WORKER_NICENESS > 0:
        os.nice(settings.WORKER_NICENESS)


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


@beat_init.connect
def _beat_start(**_kwargs) -> None:
    ensure_broker_folders()
    lower_priority()
