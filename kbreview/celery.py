"""The Celery app. With REDIS_URL: Redis broker and result store. Without: tasks run in-process."""
from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import celeryd_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kbreview.settings")

app = Celery("kbreview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)
_eager_notice_logged = False


def log_task_mode_once() -> None:
    """Say once per process how tasks will run, so nobody wonders where a worker went."""
    global _eager_notice_logged
    if _eager_notice_logged:
        return
    _eager_notice_logged = True
    if app.conf.task_always_eager:
        logger.warning("REDIS_URL is not set: Celery tasks run in-process (no worker, no beat).")
    else:
        logger.info("Celery broker: %s", app.conf.broker_url)


@celeryd_init.connect
def _refuse_worker_without_broker(**_kwargs) -> None:
    if app.conf.task_always_eager:
        raise RuntimeError("Set REDIS_URL to start a Celery worker; without it tasks already run in-process.")
