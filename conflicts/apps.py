from django.apps import AppConfig


class ConflictsConfig(AppConfig):
    name = "conflicts"

    def ready(self) -> None:
        from celery.signals import worker_process_init

        worker_process_init.connect(_warm_claim_detector, weak=False)


def _warm_claim_detector(**_kwargs) -> None:
    """A worker process readies the claim detector (sentence model, parsers) as it starts, so no turn's
    check, bounded by DETECTION_TIMEOUT_S, pays for loading them."""
    from conflicts.services.detection import claim_detector_warm_up

    claim_detector_warm_up()
