import pytest

from articles.services import knowledge_base_get_or_create
from tests.conflicts.console_support import make_user

pytest_plugins = ["tests.support.scripted_llm"]


@pytest.fixture(autouse=True)
def tasks_in_process(request):
    """Background tasks run in this process when their transaction commits (Celery's eager mode), so a
    test sees their effect; tests marked `worker` start real workers instead."""
    if request.node.get_closest_marker("worker"):
        yield
        return
    from kbreview.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    app.conf.update(task_always_eager=saved[0], task_eager_propagates=saved[1])


@pytest.fixture(autouse=True)
def claim_detector_without_judge(request, settings):
    """Tests of the detection mechanism (batching, caching, the LLM's part) run the claim detector's rules
    alone, so what they assert does not move when the judge is retrained; tests marked `judge` run the
    product's configured judge."""
    if not request.node.get_closest_marker("judge"):
        settings.JUDGE_MODE = "rules"
    yield


@pytest.fixture(autouse=True)
def fresh_claim_checks():
    """Each test checks retrieval sets as a fresh worker would: the claim findings a process keeps per set
    must not carry one test's texts, clock or stand-in detector into another."""
    from conflicts.services.detection.detector import _claim_checks_over

    _claim_checks_over.cache_clear()
    yield


@pytest.fixture(autouse=True)
def fresh_token_rows():
    """API token rows cached by one test (kept for API_TOKEN_CACHE_S) must not answer for another."""
    from conflicts.services.tokens import token_rows

    token_rows.clear()
    yield
    token_rows.clear()


class BrokerOutage:
    def __init__(self, saved: dict) -> None:
        self.saved = saved

    def end(self) -> None:
        """The broker is back: tasks run in this process from now on, as a worker would run them. What the
        publisher thread still held for the dead broker is settled first (it never reaches a task)."""
        from kbreview.celery import app
        from kbreview.jobs import publisher

        assert publisher.flush(10.0), "the publisher thread did not settle"
        app.conf.update(task_always_eager=True)


@pytest.fixture
def unreachable_broker(settings):
    """Celery pointed at a Redis port nobody listens on, as when the broker is down; `.end()` brings it back."""
    from kbreview.jobs import publisher
    from tests.support.processes import point_app_at

    saved = point_app_at(task_always_eager=False, broker_url="redis://127.0.0.1:1/0", broker_transport_options={})
    settings.DETECTION_DISPATCH = "celery"
    yield BrokerOutage(saved)
    publisher.flush(10.0)
    point_app_at(**saved)


@pytest.fixture
def kb(db):
    return knowledge_base_get_or_create(slug="acme", name="Acme Ferries")


@pytest.fixture
def other_kb(db):
    return knowledge_base_get_or_create(slug="other", name="Other Business")


# A member of `kb` per role, for the console's view tests (a test module may define its own instead).
@pytest.fixture
def reviewer(kb):
    return make_user("rita", kb, "reviewer")


@pytest.fixture
def viewer(kb):
    return make_user("vera", kb, "viewer")


@pytest.fixture
def ops(kb):
    return make_user("otto", kb, "ops")


@pytest.fixture
def inline_detection(settings):
    """Check turns synchronously, with the deterministic detector and no LLM, so tests see the outcome."""
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "claims"
    settings.LLM = {**settings.LLM, "base_url": None}
    return settings


@pytest.fixture
def llm_detection(settings, scripted_llm):
    """Detection through the LLM detector against the scripted server (the claim aligner warmed first,
    as a worker does at start, so the 2 s check timeout measures the check, not model loading)."""
    from conflicts.services.detection import claim_detector_warm_up

    claim_detector_warm_up()
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "llm"
    settings.DETECTION_TIMEOUT_S = 2.0
    settings.LLM = {**settings.LLM, "base_url": scripted_llm.base_url, "model": scripted_llm.model, "timeout_s": 5.0}
    return scripted_llm
