from django.apps import AppConfig


class ArticlesConfig(AppConfig):
    name = "articles"

    def ready(self) -> None:
        from celery.signals import worker_process_init

        worker_process_init.connect(_load_encoder_in_worker, weak=False)


def _load_encoder_in_worker(**_kwargs) -> None:
    """Each worker process loads the embedding model as it starts, not inside its first task."""
    import logging
    import time

    from articles.embeddings import get_encoder

    started = time.monotonic()
    get_encoder()
    logging.getLogger(__name__).info("embedding model loaded at worker start in %.1f s", time.monotonic() - started)
