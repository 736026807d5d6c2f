"""The answer path with Intent-Guided Decoding: the API's `mode`, the knowledge base's default, and the fail-back to
the plain answer when the IGD server misbehaves (scripted OpenAI-compatible server: real HTTP, scripted log-probs)."""
import json
import math

import pytest

from conflicts.models import AnswerSettings, Conflict, Turn
from conflicts.services import api_token_create
from conflicts.services.answering import answer_default_mode, answer_settings_update
from tests.support.igd_script import branch_of, dist, freedonia
from tests.support.scripted_llm import NextToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client, kb):
    token = api_token_create(knowledge_base=kb, name="bot")[1]

    def post(body):
        return client.post("/api/v1/answer", data=json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")

    return post


def test_the_default_mode_is_strict_until_set(kb, other_kb):
    assert answer_default_mode(knowledge_base=kb) == "strict"
    answer_settings_update(knowledge_base=kb, default_mode="truth")
    assert answer_default_mode(knowledge_base=kb) == "truth"
    assert answer_default_mode(knowledge_base=other_kb) == "strict"
    with pytest.raises(ValueError, match="default_mode"):
        answer_settings_update(knowledge_base=kb, default_mode="sometimes")
    assert AnswerSettings.objects.get(knowledge_base=kb).default_mode == "truth"


def test_the_mode_changes_which_source_the_reply_follows(api, capital, igd_server):
    strict = api({"question": "What is the capital of Freedonia?", "mode": "strict"}).json()
    truth = api({"question": "What is the capital of Freedonia?", "mode": "truth"}).json()
    assert strict["mode"] == "strict" and strict["answer_source"] == "igd_context"
    assert strict["reply"] == "Sylvania [[faq-capital]]" and strict["citations"] == ["faq-capital"]
    # TRUTH: the model's memory overrides the article, and the reply cites nothing it did not use
    assert truth["mode"] == "truth" and truth["answer_source"] == "igd_memory"
    assert truth["reply"] == "Fredville" and truth["citations"] == []
    assert Turn.objects.get(pk=truth["turn_id"]).reply == "Fredville"


def test_without_a_mode_the_knowledge_base_default_applies(api, kb, capital, igd_server):
    assert api({"question": "What is the capital of Freedonia?"}).json()["mode"] == "strict"
    answer_settings_update(knowledge_base=kb, default_mode="truth")
    body = api({"question": "What is the capital of Freedonia?"}).json()
    assert body["mode"] == "truth" and body["answer_source"] == "igd_memory"


def test_an_unknown_mode_is_a_422_naming_the_field(api, capital, igd_server):
    response = api({"question": "What is the capital of Freedonia?", "mode": "sometimes"})
    assert response.status_code == 422
    assert "mode" in json.dumps(response.json())


def test_a_server_without_logprobs_falls_back_to_the_plain_answer(api, capital, igd_server):
    igd_server.respond = lambda request: NextToken(None) if "prompt" in request else {"reply": "Sylvania. [[faq-capital]]"}
    response = api({"question": "What is the capital of Freedonia?", "mode": "truth"})
    assert response.status_code == 200
    body = response.json()
    assert body["answer_source"] == "plain" and body["reply"] == "Sylvania. [[faq-capital]]"


def test_an_igd_timeout_falls_back_to_the_plain_answer(api, capital, igd_server):
    igd_server.respond = lambda request: (
        NextToken({" x": math.log(0.9), "\n": math.log(0.1)}, delay_s=5.0) if "prompt" in request
        else {"reply": "Sylvania. [[faq-capital]]"}
    )
    body = api({"question": "What is the capital of Freedonia?", "mode": "strict"}).json()
    assert body["answer_source"] == "plain" and body["citations"] == ["faq-capital"]


def test_with_igd_off_the_extractive_answer_serves_either_mode(api, capital, inline_detection, settings):
    settings.IGD_BACKEND = "off"
    body = api({"question": "What is the capital of Freedonia?", "mode": "truth"}).json()
    assert body["answer_source"] == "plain" and body["mode"] == "truth"
    assert "Sylvania" in body["reply"] and body["citations"] == ["faq-capital"]


def test_an_answer_computed_here_is_foreground_work(api, capital, settings, tmp_path, monkeypatch):
    """Background work on this machine waits for the extractive answer's sentence vectors (kbreview/foreground.py)."""
    from conflicts.services import answering
    from kbreview import foreground

    settings.IGD_BACKEND = "off"
    settings.FOREGROUND_LOCK_FILE = str(tmp_path / "foreground.lock")
    real = answering.generate_answer
    waited = []

    def generate_answer(**kwargs):  # no LLM configured: the extractive answer, computed here
        waited.append(foreground.wait_for_gap(0.2))
        return real(**kwargs)

    monkeypatch.setattr(answering, "generate_answer", generate_answer)
    assert api({"question": "What is the capital of Freedonia?"}).status_code == 200
    assert waited and waited[0] >= 0.2


# --- "the model disagrees with this article": recorded when the answer-level filter routes to memory ---------------

QUESTION = "What is the capital of Freedonia?"


def test_a_route_to_memory_is_recorded_on_the_article_when_the_knowledge_base_asks(api, kb, capital, igd_server):
    assert api({"question": QUESTION, "mode": "truth"}).json()["answer_source"] == "igd_memory"
    assert not Conflict.objects.exists()  # off by default
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    first = api({"question": QUESTION, "mode": "truth"}).json()
    second = api({"question": QUESTION, "mode": "truth"}).json()
    finding = Conflict.objects.get()
    assert finding.type == "model_disagrees" and finding.article_low == capital and finding.article_high is None
    assert finding.disputed_version_id == capital.current_version_id
    assert "it answered “Fredville” where the article says “Sylvania”" in finding.explanation
    assert "The capital of Freedonia is Sylvania." in finding.snippet_low
    occurrences = finding.occurrences.order_by("pk")
    assert [o.turn_id for o in occurrences] == [first["turn_id"], second["turn_id"]]
    assert all(o.turn.question == QUESTION and o.turn.reply == "Fredville" for o in occurrences)
    assert {(o.context_preview, o.memory_preview, o.citation) for o in occurrences} == {("Sylvania", "Fredville", "neither")}
    assert finding.times_seen == 2
    # detection still ran beside the answer (one article retrieved: skipped, never left queued)
    assert Turn.objects.get(pk=first["turn_id"]).detection.outcome == "skipped"


def test_the_conflicts_api_lists_a_finding_with_its_one_article(client, kb, capital, igd_server):
    token = api_token_create(knowledge_base=kb, name="reader")[1]
    answer_settings_update(knowledge_base=kb, default_mode="truth", record_model_disagreements=True)
    client.post("/api/v1/answer", data=json.dumps({"question": QUESTION}), content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {token}")
    listed = client.get("/api/v1/conflicts", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert [(c["refs"], c["type"], c["detector"]) for c in listed] == [(["faq-capital"], "model_disagrees", "igd")]


def test_no_route_to_memory_records_nothing(api, kb, capital, igd_server):
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    # the scripted STRICT user branch prefers the context's answer: the filter does not route to memory
    body = api({"question": QUESTION, "mode": "strict"}).json()
    assert body["answer_source"] == "igd_context" and body["citations"] == ["faq-capital"]
    assert not Conflict.objects.exists()


def test_in_strict_mode_a_route_is_recorded_while_the_reply_keeps_to_the_article(api, kb, capital, igd_server):
    def user_does_not_object(request):
        prompt = request.get("prompt", "")
        if branch_of(prompt) == "user_strict" and not prompt.rsplit("Answer:", 1)[1]:
            return NextToken(dist(**{" Sylvania": 0.45, " Fredville": 0.50, "\n": 0.05}))
        return freedonia(request) if prompt else {"reply": "Plain answer: Sylvania. [[faq-capital]]"}

    igd_server.respond = user_does_not_object
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    body = api({"question": QUESTION}).json()
    assert body["mode"] == "strict" and body["answer_source"] != "igd_memory"  # STRICT: the article stays authoritative
    finding = Conflict.objects.get(type="model_disagrees")
    assert finding.article_low == capital and finding.occurrences.get().turn_id == body["turn_id"]


def test_the_playground_records_nothing(client, kb, capital, igd_server):
    from tests.conflicts.console_support import make_user

    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    client.force_login(make_user("rita", kb, role="reviewer"))
    response = client.post("/answer/playground/", {"question": QUESTION, "mode": "truth"})
    html = response.content.decode()
    assert response.status_code == 200 and 'id="playground-winner">memory<' in html
    assert 'id="playground-disagrees-with">faq-capital<' in html and "the answer path records this on the article" in html
    assert not Conflict.objects.exists() and not Turn.objects.exists()


def test_a_failure_to_record_the_finding_never_reaches_the_customer(api, kb, capital, igd_server, monkeypatch):
    from django.db import connection

    def database_fails(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 / 0")  # a real error from PostgreSQL, mid-transaction

    monkeypatch.setattr("conflicts.services.disagreements.conflict_sighting_count", database_fails)
    answer_settings_update(knowledge_base=kb, default_mode="truth", record_model_disagreements=True)
    response = api({"question": QUESTION})
    assert response.status_code == 200 and response.json()["reply"] == "Fredville"
    assert Turn.objects.get(pk=response.json()["turn_id"]).reply == "Fredville"
    assert not Conflict.objects.exists()  # the half-written finding was rolled back
