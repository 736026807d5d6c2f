"""Property-based: whatever a client sends (NULs, surrogates, control characters, extreme integers and
timestamps, ids that do not survive a URL), the API answers with a documented 2xx/4xx, never a 500,
and whatever it accepted reads back unchanged."""
import datetime as dt
import json
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conflicts.services import api_token_create

NASTY_TEXT = ["\x00", "a\x00b", "\ud800", "\udfff x", "   ", "\t\n", "\x1b[2J", "\x85", "a/b", "..", ".", "%00",
              "?x=1", "#frag", "\u202eevil", "zero\u200bwidth", "<script>alert(1)</script>", "x" * 201]
EXTREME_INTS = [0, 1, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63), 10**30]
EXTREME_TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1999-12-31T23:59:59+00:00",
                 "2000-01-01T00:00:00+00:00", "2100-12-31T23:59:59+00:00", "2101-01-01T00:00:00Z", "2026-13-01T00:00:00Z",
                 "not a time", "2026-06-01T12:00:00"]
KNOWN_REFS = ["faq-fare-old", "web-fares", "faq-pets"]

texts = st.one_of(
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=30),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x3F), max_size=10),
    st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"]), min_size=1, max_size=5),
)
ids = st.one_of(st.sampled_from(["chat-1", "chat-2", "A_b.c:d@e~f+g=h-i"]), texts)
ints = st.one_of(st.sampled_from(EXTREME_INTS), st.integers(min_value=-5, max_value=5))
times = st.one_of(
    st.sampled_from(EXTREME_TIMES),
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                 timezones=st.sampled_from([dt.timezone.utc, dt.timezone(dt.timedelta(hours=14)),
                                            dt.timezone(dt.timedelta(hours=-14))])).map(dt.datetime.isoformat),
)
retrieved_items = st.fixed_dictionaries({"ref": st.one_of(st.sampled_from(KNOWN_REFS), texts), "rank": ints})
turn_bodies = st.fixed_dictionaries(
    {"external_id": ids, "question": st.one_of(st.just("How much is a ticket?"), texts),
     "retrieved": st.lists(retrieved_items, max_size=4)},
    optional={"reply": texts, "sent_at": times},
)
reply_bodies = st.fixed_dictionaries({"reply": st.one_of(st.just("It is €22 [[web-fares]]"), texts)},
                                     optional={"sent_at": times, "replaces": st.booleans()})
query_values = st.one_of(texts, ints.map(str))

def in_path(value: str) -> str:
    # As a client would send it: UTF-8 bytes, percent-encoded (a lone surrogate as its raw bytes).
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


HYPOTHESIS = settings(max_examples=100, deadline=None, derandomize=True,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture
def call(client, kb, fare_articles):
    token = api_token_create(knowledge_base=kb, name="bot")[1]

    def request(method, path, body=None):
        kwargs = {"content_type": "application/json", "HTTP_AUTHORIZATION": f"Bearer {token}"}
        if body is not None:
            kwargs["data"] = json.dumps(body)
        response = getattr(client, method)(f"/api/v1{path}", **kwargs)
        assert response.status_code < 500, (method, path, body, response.content[:300])
        assert response["Content-Type"].startswith("application/json"), response.content[:300]
        return response

    return request


@pytest.mark.django_db
@HYPOTHESIS
@given(body=turn_bodies)
def test_any_turn_report_is_answered_and_what_is_accepted_reads_back(call, body):
    response = call("post", "/turns", body)
    assert response.status_code in (200, 202, 409, 422), response.content
    if response.status_code == 422:
        assert all(error["field"] for error in response.json()["detail"])
    if response.status_code == 202:
        read = call("get", f"/turns/{in_path(body['external_id'])}")
        assert read.status_code == 200
        assert read.json()["question"] == body["question"]
        assert read.json()["reply"] == body.get("reply", "")


@pytest.mark.django_db
@HYPOTHESIS
@given(external_id=ids, body=reply_bodies)
def test_any_reply_is_answered(call, external_id, body):
    call("post", "/turns", {"external_id": "chat-1", "question": "q?", "retrieved": [{"ref": "web-fares", "rank": 1}]})
    response = call("post", f"/turns/{in_path(external_id)}/reply", body)
    assert response.status_code in (200, 404, 409, 422), response.content


@pytest.mark.django_db
@HYPOTHESIS
@given(status=query_values, limit=query_values, offset=query_values)
def test_any_conflict_query_is_answered(call, status, limit, offset):
    query = "&".join(f"{name}={in_path(value)}" for name, value in
                     (("status", status), ("limit", limit), ("offset", offset)))
    response = call("get", f"/conflicts?{query}")
    assert response.status_code in (200, 422), response.content
