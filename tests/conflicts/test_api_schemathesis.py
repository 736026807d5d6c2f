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
    response_schema_conformance,
    status_code_conformance,
)

from conflicts.services import api_token_create

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
schema.config.generation.update(allow_x00=True)
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


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
                case.call_and_validate(checks=CHECKS)
                sent[(operation.label, mode)] = sent.get((operation.label, mode), 0) + 1

            check()
    assert len(sent) == 2 * len(OPERATIONS) == 10
