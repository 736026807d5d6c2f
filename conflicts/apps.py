from django.apps import AppConfig
from django.db.models.signals import post_save


def _rule_base_for_new_knowledge_base(sender, instance, created, **kwargs):
    if created:
        from conflicts.services.suggestions import rule_base_ensure

        rule_base_ensure(knowledge_base=instance)


class ConflictsConfig(AppConfig):
    name = "conflicts"

    def ready(self):
        from celery.signals import worker_process_init

        # articles cannot call up into conflicts, so the rule rows of a new knowledge base are made here,
        # when it is created, instead of by the first (GET) view of the rules page.
        post_save.connect(
            _rule_base_for_new_knowledge_base, sender="articles.KnowledgeBase", dispatch_uid="conflicts-rule-base"
        )
        worker_process_init.connect(_warm_claim_detector, weak=False)
        # The index sync stores the claim detector's sentence vectors per article version beside its chunks.
        from articles.claim_texts import claim_texts_register

        claim_texts_register(_claim_texts)
        # The shell's dashboard and the articles app's pages show conflicts through panels, as neither imports
        # conflicts.
        from kbreview import panels

        panels.panel_register(slot=panels.DASHBOARD, panel="conflicts.views.dashboard.dashboard_panel")
        panels.panel_register(slot=panels.ARTICLE_DETAIL, panel="conflicts.views.article_panels.article_conflicts_panel")
        panels.panel_register(slot=panels.ARTICLE_RESTORE,
                              panel="conflicts.views.article_panels.restore_coming_back_panel")


def _claim_texts(title: str, body: str) -> list[str]:
    from conflicts.services.detection import claim_texts_of  # imported on first use: the parsers load slowly

    return claim_texts_of(title, body)


def _warm_claim_detector(**_kwargs) -> None:
    """A worker process readies the claim detector (sentence model, parsers) as it starts, so no turn's
    check, bounded by DETECTION_TIMEOUT_S, pays for loading them."""
    import logging
    import time

    from conflicts.services.detection import claim_detector_warm_up

    started = time.monotonic()
    claim_detector_warm_up()
    logging.getLogger(__name__).info("claim detector warmed up at worker start in %.1f s", time.monotonic() - started)
