"""Schemathesis, short form for CI: cases generated from the API's own OpenAPI document (valid and
invalid data, NUL bytes allowed) sent with a valid token to the Django app in this process; every
response must be no server error, carry a documented status code and match its schema.
`bench/api_fuzz.py` runs the long form against a live server."""
import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from conflicts.services import api_token_create

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
schema.config.generation.update(allow_x00=True)
# Valid data (by the document) is never refused for a rule the document does not state: 2xx, or an
# answer about the world (no such turn: 404; the same external id with another body: 409).
schema.config.checks.positive_data_acceptance.expected_statuses = ["2xx", "404", "409"]
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


def refused_for_the_world_only(response) -> bool:
    """422 because refs the request names are not articles of this knowledge base: a fact about the data,
    which no schema can state (like a 404), not a rule the document leaves out."""
    if response.status_code != 422:
        return False
    errors = response.json()["detail"]
    # Also a turn naming one ref twice (two ranks for one article): JSON Schema's uniqueItems compares whole
    # items, so it cannot state "refs unique"; the operation's description does.
    return bool(errors) and all(error["msg"].startswith(("unknown article refs", "duplicate ref")) for error in errors)


POSITIVE_CHECKED = []


def valid_data_accepted(ctx, response, case):
    POSITIVE_CHECKED.append(response.status_code)
    if refused_for_the_world_only(response):
        return None
    return positive_data_acceptance(ctx, response, case)


@pytest.fixture
def bearer(kb, fare_articles, settings):
    settings.DETECTION_DISPATCH = "off"  # the API's edges are under test here, not the detector
    settings.API_RATE_LIMIT = 0
    return {"Authorization": f"Bearer {api_token_create(knowledge_base=kb, name='fuzz')[1]}"}


@pytest.mark.django_db(transaction=True)  # the WSGI app closes its connection after each request
def test_generated_requests_get_documented_answers(bearer):
    sent = {}
    for operation in OPERATIONS:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

            @settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case):
                case.headers = {**(case.headers or {}), **bearer}
                positive = mode == schemathesis.GenerationMode.POSITIVE
                case.call_and_validate(checks=CHECKS + ([valid_data_accepted] if positive else []))
                sent[(operation.label, mode)] = sent.get((operation.label, mode), 0) + 1

            check()
    assert len(sent) == 2 * len(OPERATIONS) == 12
    assert any(200 <= status < 300 for status in POSITIVE_CHECKED)  # the acceptance check ran on accepted data
