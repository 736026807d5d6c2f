"""Isolation checked by enumeration: every URL pattern of the console and every operation of the API is
walked, so a view added later cannot forget its checks. A member of one knowledge base gets 404 for
another's objects (read or write); a viewer gets 403 for every write; the API answers 401 without a token
and 404 for another knowledge base's turn."""
import pytest
from django.test import Client
from django.urls import reverse

from articles.models import IndexSyncJob
from articles.services import article_edit
from conflicts.models import ResolutionRule
from conflicts.services import api_token_create
from conflicts.services.turns import RetrievedRef, turn_report
from tests.conflicts.console_support import make_conflict, make_user
from tests.factories import make_article
from tests.support.console_urls import (
    NOT_KB_VIEWS,
    OWN_SETTINGS_VIEWS,
    console_kwargs,
    console_patterns,
    notification_objects,
    source_objects,
)

pytestmark = pytest.mark.django_db

def _objects(knowledge_base, prefix):
    a = make_article(knowledge_base, f"{prefix}-a", "Tickets cost €10.", index=False)
    b = make_article(knowledge_base, f"{prefix}-b", "Tickets cost €12.", index=False)
    old_version = a.current_version
    article_edit(article=a, expected_version_id=a.current_version_id, body="Tickets cost €11.")
    a.refresh_from_db()
    turn, _ = turn_report(knowledge_base=knowledge_base, external_id=f"{prefix}-turn", question="How much?",
                          retrieved=[RetrievedRef(ref=a.external_ref, rank=1), RetrievedRef(ref=b.external_ref, rank=2)])
    conflict = make_conflict(knowledge_base, a, b)
    return {
        "conflict": conflict,
        **notification_objects(knowledge_base, conflict, prefix),
        "article": a,
        "version": old_version,
        "sync_job": IndexSyncJob.objects.create(knowledge_base=knowledge_base),
        "token": api_token_create(knowledge_base=knowledge_base, name=f"{prefix} bot")[0],
        "rule": ResolutionRule.objects.filter(knowledge_base=knowledge_base).first(),
        "turn": turn,
        **source_objects(knowledge_base, a, prefix),
    }


@pytest.fixture
def world(kb, other_kb):
    return {"mine": _objects(kb, "mine"), "theirs": _objects(other_kb, "theirs")}


def test_every_console_url_answers_404_for_another_knowledge_bases_objects(kb, world):
    client = Client()
    client.force_login(make_user("ops-mine", kb, role="ops"))
    checked = 0
    for name, converters in console_patterns():
        if name in NOT_KB_VIEWS or not converters:
            continue
        path = reverse(name, kwargs=console_kwargs(name, converters, world["theirs"]))
        for method in ("get", "post"):
            for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
                response = getattr(client, method)(path, **headers)
                assert response.status_code in (404, 405), (method, path, response.status_code)
                checked += 1
        if "version_pk" in converters:  # my article with their version
            mixed = reverse(name, kwargs={"pk": world["mine"]["article"].pk, "version_pk": world["theirs"]["version"].pk})
            assert client.post(mixed).status_code == 404
        if "file_pk" in converters:  # my source with their file
            mixed = reverse(name, kwargs={"pk": world["mine"]["upload_source"].pk, "file_pk": world["theirs"]["source_file"].pk})
            assert client.post(mixed).status_code == 404
    assert checked >= 40


def test_every_console_write_is_403_for_a_viewer(kb, world):
    client = Client()
    client.force_login(make_user("viewer-mine", kb, role="viewer"))
    writes = 0
    for name, converters in console_patterns():
        if name in NOT_KB_VIEWS or name in OWN_SETTINGS_VIEWS:
            continue
        path = reverse(name, kwargs=console_kwargs(name, converters, world["mine"]))
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.post(path, {"note": "x", "enabled": "0", "name": "x"}, **headers)
            assert response.status_code == 403, (path, response.status_code)
            writes += 1
    assert writes >= 30


def test_every_api_operation_needs_a_token_and_keeps_to_its_knowledge_base(client, kb, world):
    document = client.get("/api/v1/openapi.json").json()
    theirs = api_token_create(knowledge_base=world["theirs"]["turn"].knowledge_base, name="theirs")[1]
    operations = 0
    for path, methods in document["paths"].items():
        concrete = path.replace("{external_id}", world["mine"]["turn"].external_id)
        for method in methods:
            body = {"reply": "ok"} if path.endswith("/reply") else {"question": "q?"} if method == "post" else None
            kwargs = {"content_type": "application/json", "data": body} if body else {}
            assert getattr(client, method)(concrete, **kwargs).status_code == 401, (method, path)
            response = getattr(client, method)(concrete, HTTP_AUTHORIZATION=f"Bearer {theirs}", **kwargs)
            if "{external_id}" in path:
                assert response.status_code == 404, (method, path, response.content)
            else:
                assert world["mine"]["turn"].external_id not in response.content.decode()
                assert "mine-a" not in response.content.decode()
            operations += 1
    assert operations == 6  # turns, reply, turn, answer, conflicts, retrieval-check
