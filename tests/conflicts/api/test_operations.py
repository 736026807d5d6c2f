import json

import pytest

from conflicts.models import ApiToken, Turn
from conflicts.services import api_token_create

TURN = {
    "external_id": "chat-1",
    "question": "How much is a ticket to Inishmara?",
    "retrieved": [{"ref": "faq-fare-old", "rank": 1}, {"ref": "web-fares", "rank": 2}],
}


@pytest.mark.django_db
def test_tokens_are_stored_hashed(kb, token):
    row = ApiToken.objects.get()
    assert token not in (row.token_hash, row.prefix) and len(row.token_hash) == 64


@pytest.mark.django_db
def test_turn_report_then_reply_then_read(api, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api("post", "/turns", TURN)
    assert response.status_code == 202, response.content
    assert response.json()["detection"] == "queued"
    response = api("post", "/turns/chat-1/reply", {"reply": "It is €22 [[web-fares]]"})
    assert response.status_code == 200 and response.json()["cited"] == ["web-fares"]
    body = api("get", "/turns/chat-1").json()
    assert body["detection"]["outcome"] == "ok"
    assert body["conflicts"][0]["refs"] == ["faq-fare-old", "web-fares"]
    assert body["conflicts"][0]["times_cited"] == 1
    assert body["conflicts"][0]["detector"] == "claims"
    listed = api("get", "/conflicts?status=open").json()
    assert [c["refs"] for c in listed] == [["faq-fare-old", "web-fares"]]
    assert api("get", "/conflicts?status=dismissed").json() == []


@pytest.mark.django_db
def test_repeated_report_changes_nothing(api, fare_articles, inline_detection):
    first = api("post", "/turns", TURN)
    again = api("post", "/turns", TURN)
    assert again.status_code == 200
    assert again.json()["turn_id"] == first.json()["turn_id"]


@pytest.mark.django_db
def test_repeated_report_with_a_different_body_is_409_naming_what_differs(api, fare_articles, inline_detection):
    api("post", "/turns", TURN)
    changed = api("post", "/turns", {**TURN, "question": "changed", "retrieved": TURN["retrieved"][:1]})
    assert changed.status_code == 409
    assert changed.json()["fields"] == ["question", "retrieved"]
    assert Turn.objects.get().question == TURN["question"]


@pytest.mark.django_db
def test_single_article_is_skipped(api, fare_articles):
    response = api("post", "/turns", {**TURN, "retrieved": [{"ref": "faq-pets", "rank": 1}]})
    assert response.status_code == 202 and response.json()["detection"] == "skipped"


@pytest.mark.django_db
def test_missing_token_is_401_and_revoked_token_too(client, api, kb, fare_articles):
    assert client.post("/api/v1/turns", data=TURN, content_type="application/json").status_code == 401
    ApiToken.objects.update(revoked_at="2026-01-01T00:00:00Z")
    assert api("post", "/turns", TURN).status_code == 401


@pytest.mark.django_db
def test_validation_errors_name_the_field(api, fare_articles):
    missing_question = api("post", "/turns", {k: v for k, v in TURN.items() if k != "question"})
    assert missing_question.status_code == 422
    assert "question" in json.dumps(missing_question.json())
    unknown = api("post", "/turns", {**TURN, "retrieved": [{"ref": "nope", "rank": 1}, {"ref": "web-fares", "rank": 2}]})
    assert unknown.status_code == 422
    assert unknown.json()["detail"][0]["refs"] == ["nope"]
    bad_json = api("post", "/turns", "{not json")
    assert bad_json.status_code in (400, 422)
    bad_rank = api("post", "/turns", {**TURN, "retrieved": [{"ref": "web-fares", "rank": 0}]})
    assert bad_rank.status_code == 422 and "rank" in json.dumps(bad_rank.json())
    assert not Turn.objects.exists()


@pytest.mark.django_db
def test_oversize_body_is_413(api, fare_articles, settings):
    settings.API_MAX_BODY_BYTES = 1000
    response = api("post", "/turns", {**TURN, "question": "x" * 2000})
    assert response.status_code == 413
    assert "exceeds" in response.json()["detail"]


@pytest.mark.django_db
def test_other_knowledge_base_turns_are_404(api, other_kb, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    other_token = api_token_create(knowledge_base=other_kb, name="other")[1]
    with django_capture_on_commit_callbacks(execute=True):
        api("post", "/turns", TURN)
    assert api("get", "/conflicts").json() != []
    response = api("get", "/turns/chat-1", HTTP_AUTHORIZATION=f"Bearer {other_token}")
    assert response.status_code == 404
    assert api("get", "/conflicts", HTTP_AUTHORIZATION=f"Bearer {other_token}").json() == []


@pytest.mark.django_db
def test_answer_path_replies_with_citations_and_records_the_turn(api, kb, inline_detection):
    from tests.factories import make_article

    make_article(kb, "faq-pets", "Dogs travel free on the outer deck when kept on a lead.")
    make_article(kb, "faq-parking", "The harbour car park costs 12 euros per day.")
    response = api("post", "/answer", {"question": "can my dog come on the ferry?"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["citations"] == ["faq-pets"]
    assert "[[faq-pets]]" in body["reply"]
    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.reply == body["reply"] and turn.source == "answer"
    assert turn.usages.filter(cited=True).get().article.external_ref == "faq-pets"


@pytest.mark.django_db
def test_openapi_document_is_served(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert "/api/v1/turns" in response.json()["paths"]


@pytest.mark.django_db
def test_conflicts_accept_resolved_for_processed(api, kb, fare_articles):
    from tests.conflicts.console_support import make_conflict

    make_conflict(kb, fare_articles["old"], fare_articles["new"], status="processed")
    resolved = api("get", "/conflicts?status=resolved")
    assert resolved.status_code == 200 and [c["status"] for c in resolved.json()] == ["processed"]
    assert resolved.json() == api("get", "/conflicts?status=processed").json()
    assert api("get", "/conflicts?status=closed").status_code == 422


@pytest.mark.django_db
def test_turn_detail_shows_what_the_check_saved_on_the_llm(api, kb, fare_articles):
    from conflicts.models import DetectionRun
    from conflicts.services.turns import RetrievedRef, turn_report

    turn, _ = turn_report(knowledge_base=kb, external_id="chat-9", question="Fares?",
                          retrieved=[RetrievedRef(ref="faq-fare-old", rank=1), RetrievedRef(ref="web-fares", rank=2)])
    DetectionRun.objects.filter(turn=turn).update(outcome="ok", batch_turns=3, unrelated_pairs=4, known_claim_pairs=5,
                                                  llm_confirmed=1, llm_rejected=2)
    detection = api("get", "/turns/chat-9").json()["detection"]
    assert (detection["batch_turns"], detection["unrelated_pairs"], detection["known_claim_pairs"],
            detection["llm_confirmed"], detection["llm_rejected"]) == (3, 4, 5, 1, 2)


@pytest.mark.django_db
def test_reporting_a_turn_takes_the_same_few_queries_however_many_articles_it_retrieved(
    api, articles, settings, django_assert_max_num_queries
):
    settings.DETECTION_DISPATCH = "celery"  # queued for a worker once committed (never, in this test)

    def turn(external_id, refs):
        return {"external_id": external_id, "question": "Which body?",
                "retrieved": [{"ref": ref, "rank": rank} for rank, ref in enumerate(refs, 1)]}

    assert api("post", "/turns", turn("warm", ["faq-0", "faq-1"])).status_code == 202  # stamps the token's last use
    # the token, the articles, the turn, its retrieved articles and its queued check, the one indexed look-up of
    # open conflicts among the refs (the answer policy); + the savepoint pair that stands for the transaction's
    # BEGIN and COMMIT inside the test's own transaction
    with django_assert_max_num_queries(6 + 2):
        assert api("post", "/turns", turn("two", ["faq-0", "faq-1"])).status_code == 202
    with django_assert_max_num_queries(6 + 2):
        response = api("post", "/turns", turn("eight", [a.external_ref for a in articles]))
    assert response.status_code == 202 and response.json()["detection"] == "queued"
    assert Turn.objects.get(external_id="eight").usages.count() == 8
