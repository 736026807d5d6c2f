"""The bad-input set: requests a careless or hostile client sends. Each gets a 4xx naming what is wrong
(never a 500 or a traceback), and none leaves a row behind."""
import json

import pytest

from articles.models import AuditEvent
from conflicts.models import ArticleUsage, Turn

GOOD = {
    "external_id": "chat-1",
    "question": "How much is a ticket to Inishmara?",
    "retrieved": [{"ref": "faq-fare-old", "rank": 1}, {"ref": "web-fares", "rank": 2}],
}


def turn(**changes):
    return {**GOOD, **changes}


def retrieved(*items):
    return turn(retrieved=[{"ref": ref, "rank": rank} for ref, rank in items])


DEEP_JSON = "[" * 100_000 + "]" * 100_000

# (id, method, path, body, expected status, field the error must name or None)
BAD_REQUESTS = [
    ("sent-at-year-1-offset", "post", "/turns", turn(reply="r", sent_at="0001-01-01T00:00:00+14:00"), 422, "sent_at"),
    ("sent-at-year-9999-offset", "post", "/turns", turn(reply="r", sent_at="9999-12-31T23:59:59-14:00"), 422, "sent_at"),
    ("sent-at-before-range", "post", "/turns", turn(reply="r", sent_at="1999-12-31T23:00:00-02:00"), 422, "sent_at"),
    ("sent-at-not-a-time", "post", "/turns", turn(reply="r", sent_at="yesterday"), 422, "sent_at"),
    ("rank-2-pow-31", "post", "/turns", retrieved(("faq-fare-old", 2**31), ("web-fares", 2)), 422, "retrieved[0].rank"),
    ("rank-huge", "post", "/turns", retrieved(("faq-fare-old", 1), ("web-fares", 10**30)), 422, "retrieved[1].rank"),
    ("rank-zero", "post", "/turns", retrieved(("faq-fare-old", 0)), 422, "retrieved[0].rank"),
    ("rank-text", "post", "/turns", retrieved(("faq-fare-old", "first")), 422, "retrieved[0].rank"),
    ("duplicate-refs", "post", "/turns", retrieved(("faq-fare-old", 1), ("web-fares", 2), ("faq-fare-old", 3)), 422, "retrieved[2].ref"),
    ("nul-external-id", "post", "/turns", turn(external_id="chat\x00-1"), 422, "external_id"),
    ("nul-question", "post", "/turns", turn(question="How\x00 much?"), 422, "question"),
    ("nul-ref", "post", "/turns", retrieved(("faq-fare-old\x00", 1)), 422, "retrieved[0].ref"),
    ("surrogate-question", "post", "/turns", turn(question="price \ud800?"), 422, "question"),
    ("escape-char-question", "post", "/turns", turn(question="price \x1b[31m?"), 422, "question"),
    ("bidi-control-c1-ref", "post", "/turns", retrieved(("faq\x85", 1)), 422, "retrieved[0].ref"),
    ("slash-external-id", "post", "/turns", turn(external_id="chat/1"), 422, "external_id"),
    ("query-external-id", "post", "/turns", turn(external_id="chat?x=1"), 422, "external_id"),
    ("percent-external-id", "post", "/turns", turn(external_id="chat%2F1"), 422, "external_id"),
    ("space-external-id", "post", "/turns", turn(external_id="chat 1"), 422, "external_id"),
    ("dot-dot-external-id", "post", "/turns", turn(external_id=".."), 422, "external_id"),
    ("blank-external-id", "post", "/turns", turn(external_id="   "), 422, "external_id"),
    ("empty-external-id", "post", "/turns", turn(external_id=""), 422, "external_id"),
    ("long-external-id", "post", "/turns", turn(external_id="x" * 201), 422, "external_id"),
    ("blank-question", "post", "/turns", turn(question=" \t\n "), 422, "question"),
    ("long-question", "post", "/turns", turn(question="q" * 10_001), 422, "question"),
    ("blank-reply", "post", "/turns", turn(reply="   "), 422, "reply"),
    ("nul-reply", "post", "/turns", turn(reply="It is \x00 €22"), 422, "reply"),
    ("long-ref", "post", "/turns", retrieved(("r" * 201, 1)), 422, "retrieved[0].ref"),
    ("blank-ref", "post", "/turns", retrieved((" ", 1)), 422, "retrieved[0].ref"),
    ("retrieved-not-a-list", "post", "/turns", turn(retrieved="faq-fare-old"), 422, "retrieved"),
    ("retrieved-item-not-object", "post", "/turns", turn(retrieved=["faq-fare-old"]), 422, "retrieved[0].ref"),
    ("too-many-retrieved", "post", "/turns", retrieved(*[(f"r{i}", i) for i in range(1, 202)]), 422, "retrieved"),
    ("unknown-ref", "post", "/turns", retrieved(("nope", 1)), 422, "retrieved"),
    ("question-not-text", "post", "/turns", turn(question=["a"]), 422, "question"),
    ("missing-question", "post", "/turns", {"external_id": "chat-1", "retrieved": []}, 422, "question"),
    ("body-array", "post", "/turns", [GOOD], 422, None),
    ("body-not-json", "post", "/turns", "{not json", 400, None),
    ("body-100k-deep", "post", "/turns", DEEP_JSON, 400, None),
    ("body-nan", "post", "/turns", '{"external_id": "a", "question": "q", "retrieved": [{"ref": "faq-pets", "rank": NaN}]}', 422, "retrieved[0].rank"),
    ("reply-nul-path", "post", "/turns/chat%00x/reply", {"reply": "ok"}, 422, "external_id"),
    ("reply-control-path", "post", "/turns/chat%1B/reply", {"reply": "ok"}, 422, "external_id"),
    ("reply-nul", "post", "/turns/chat-0/reply", {"reply": "It is\x00 €22"}, 422, "reply"),
    ("reply-blank", "post", "/turns/chat-0/reply", {"reply": "\n\n"}, 422, "reply"),
    ("reply-sent-at-year-1", "post", "/turns/chat-0/reply", {"reply": "ok", "sent_at": "0001-01-01T00:00:00+14:00"}, 422, "sent_at"),
    ("reply-unknown-turn", "post", "/turns/never-seen/reply", {"reply": "ok"}, 404, None),
    ("get-nul-path", "get", "/turns/a%00b", None, 422, "external_id"),
    ("get-long-path", "get", "/turns/" + "x" * 5000, None, 422, "external_id"),  # the documented 200-character bound
    ("answer-nul-question", "post", "/answer", {"question": "dogs\x00?"}, 422, "question"),
    ("answer-blank-question", "post", "/answer", {"question": "  "}, 422, "question"),
    ("answer-bad-mode", "post", "/answer", {"question": "dogs?", "mode": "loud"}, 422, "mode"),
    ("answer-slash-external-id", "post", "/answer", {"question": "dogs?", "external_id": "a/b"}, 422, "external_id"),
    ("answer-taken-external-id", "post", "/answer", {"question": "dogs?", "external_id": "chat-0"}, 409, None),
    ("conflicts-offset-huge", "get", "/conflicts?offset=99999999999999999999", None, 422, "offset"),
    ("conflicts-offset-negative", "get", "/conflicts?offset=-1", None, 422, "offset"),
    ("conflicts-limit-zero", "get", "/conflicts?limit=0", None, 422, "limit"),
    ("conflicts-limit-huge", "get", "/conflicts?limit=1e400", None, 422, "limit"),
    ("conflicts-status-nul", "get", "/conflicts?status=open%00", None, 422, "status"),
    ("conflicts-status-unknown", "get", "/conflicts?status=closed", None, 422, "status"),
]


@pytest.fixture
def existing_turn(api, fare_articles):
    response = api("post", "/turns", {**GOOD, "external_id": "chat-0"})
    assert response.status_code == 202, response.content
    return Turn.objects.get()


@pytest.mark.django_db
@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[case[0] for case in BAD_REQUESTS])
def test_bad_request_is_refused_naming_the_field(api, existing_turn, case):
    _, method, path, body, status, field = case
    turns, usages, audit = Turn.objects.count(), ArticleUsage.objects.count(), AuditEvent.objects.count()
    response = api(method, path, body)
    assert response.status_code == status, response.content[:500]
    payload = response.json()  # always JSON, never an HTML or plain-text traceback
    assert "Traceback" not in response.content.decode()
    if field is not None:
        assert field in [error["field"] for error in payload["detail"]], payload
        assert all(error["loc"][0] in ("body", "path", "query") for error in payload["detail"])
        assert "payload" not in json.dumps(payload)  # no internal parameter names
    assert (Turn.objects.count(), ArticleUsage.objects.count(), AuditEvent.objects.count()) == (turns, usages, audit)
    existing_turn.refresh_from_db()
    assert existing_turn.reply == ""


@pytest.mark.django_db
def test_accepted_edge_values_read_back(api, fare_articles):
    """The widest values the API accepts are stored and read back unchanged."""
    external_id = "A_z.0:@~+=-" + "x" * 189
    body = {
        **GOOD,
        "external_id": external_id,
        "question": "Tabs\tand ünïcödé, RTL \u202e and zero-width \u200b are text " + "q" * 9_900,
        "retrieved": [{"ref": "faq-fare-old", "rank": 2**31 - 1}, {"ref": "web-fares", "rank": 1}],
        "reply": "line one\nline two\r\n\tindented [[web-fares]]",
        "sent_at": "2100-12-31T23:59:59+00:00",
    }
    assert api("post", "/turns", body).status_code == 202
    again = api("post", "/turns", body)
    assert again.status_code == 200, again.content
    read = api("get", f"/turns/{external_id}")
    assert read.status_code == 200
    assert read.json()["question"] == body["question"] and read.json()["reply"] == body["reply"]


@pytest.mark.django_db
def test_missing_or_wrong_token_is_401_with_www_authenticate(client, api, fare_articles):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer nope"}, {"HTTP_AUTHORIZATION": "Bearer \u00e9\u00e9"}):
        response = client.get("/api/v1/conflicts", **headers)
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db
def test_second_different_reply_is_409_unless_it_replaces(api, existing_turn):
    assert api("post", "/turns/chat-0/reply", {"reply": "It is €22 [[web-fares]]"}).status_code == 200
    assert api("post", "/turns/chat-0/reply", {"reply": "It is €22 [[web-fares]]"}).status_code == 200
    refused = api("post", "/turns/chat-0/reply", {"reply": "It is €18 [[faq-fare-old]]"})
    assert refused.status_code == 409 and refused.json()["fields"] == ["reply"]
    replaced = api("post", "/turns/chat-0/reply", {"reply": "It is €18 [[faq-fare-old]]", "replaces": True})
    assert replaced.status_code == 200 and replaced.json()["cited"] == ["faq-fare-old"]
    assert AuditEvent.objects.filter(action="turn.reply_replaced").count() == 1


@pytest.mark.django_db
def test_every_status_code_is_in_the_openapi_document(client):
    document = client.get("/api/v1/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            documented = set(operation["responses"])
            assert {"400", "401", "413", "422", "429"} <= documented, (method, path)
            if "{external_id}" in path:
                assert "404" in documented
