from django.apps import AppConfig


class KbreviewConfig(AppConfig):
    name = "kbreview"

    def ready(self) -> None:
        from kbreview.celery import log_task_mode_once

        log_task_mode_once()
