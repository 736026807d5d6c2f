"""The answer path with Intent-Guided Decoding: the API's `mode`, the knowledge base's default, and the fail-back to
the plain answer when the IGD server misbehaves (scripted OpenAI-compatible server: real HTTP, scripted log-probs)."""
import json
import math

import pytest

from conflicts.models import AnswerSettings, Turn
from conflicts.services import api_token_create
from conflicts.services.answering import answer_default_mode, answer_settings_update
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
