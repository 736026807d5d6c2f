import json

import pytest

from conflicts.services import api_token_create
from tests.factories import make_article
from tests.support.igd_script import freedonia


@pytest.fixture
def fare_articles(kb):
    """Two articles that disagree on a price, and one unrelated."""
    return {
        "old": make_article(kb, "faq-fare-old", "A single adult ticket to Inishmara costs €18.", index=False),
        "new": make_article(kb, "web-fares", "A single adult ticket to Inishmara costs €22.", index=False),
        "pets": make_article(kb, "faq-pets", "Dogs travel free on the outer deck.", index=False),
    }


@pytest.fixture
def token(kb):
    return api_token_create(knowledge_base=kb, name="bot")[1]


@pytest.fixture
def api(client, token):
    """Call the API as the chatbot holding `token`: api("post", "/turns", {...})."""

    def call(method, path, body=None, **headers):
        headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {token}")
        kwargs = {"content_type": "application/json"}
        if body is not None:
            kwargs["data"] = body if isinstance(body, str) else json.dumps(body)
        return getattr(client, method)(f"/api/v1{path}", **kwargs, **headers)

    return call


@pytest.fixture
def capital(kb):
    return make_article(kb, "faq-capital", "Freedonia facts. The capital of Freedonia is Sylvania.", title="Freedonia")


@pytest.fixture
def igd_server(settings, inline_detection, scripted_llm):
    """IGD on the answer path through the scripted server; its chat route answers the plain path."""
    settings.IGD_BACKEND = "openai"
    settings.LLM = {**settings.LLM, "base_url": scripted_llm.base_url, "model": scripted_llm.model, "timeout_s": 2.0}
    settings.IGD_MAX_NEW_TOKENS = 4

    def respond(request):
        if "prompt" in request:
            return freedonia(request)
        return {"reply": "Plain answer: Sylvania. [[faq-capital]]"}

    scripted_llm.respond = respond
    return scripted_llm


@pytest.fixture
def articles(kb):
    """Eight plain articles, titled Article 0..7, for conflicts made directly."""
    return [make_article(kb, f"faq-{i}", f"Body number {i}.", title=f"Article {i}", index=False) for i in range(8)]
