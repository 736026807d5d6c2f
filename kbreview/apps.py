from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class KbreviewConfig(AppConfig):
    name = "kbreview"

    def ready(self) -> None:
        from kbreview.celery import ensure_broker_folders

        ensure_broker_folders()  # the filesystem broker's folders, before anything enqueues
        # Register every app's tasks in this process too: the jobs modules send them by name.
        autodiscover_modules("tasks")
