"""The answer playground: reviewers and ops decode questions and see the decoding, under the knowledge base's answer
policy; viewers and strangers cannot; only ops set the knowledge base's default mode."""
import pytest
from django.db import OperationalError, connection
from django.urls import reverse

from conflicts.models import AnswerSettings, PolicyDecision, Turn
from tests.conflicts.console_support import PASSWORD, make_user
from tests.conflicts.test_answer_policy import QUESTION as FARE_QUESTION
from tests.conflicts.test_answer_policy import fares, set_policy  # noqa: F401 (fares: a fixture)

pytestmark = pytest.mark.django_db
QUESTION = "What is the capital of Freedonia?"


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_viewers_and_anonymous_users_are_kept_out(client, kb):
    url = reverse("answer_playground")
    assert client.get(url).status_code == 302  # to the sign-in page
    login(client, make_user("vera", kb, role="viewer"))
    assert client.get(url).status_code == 403
    assert client.post(url, {"question": QUESTION, "mode": "strict"}).status_code == 403


def test_a_reviewer_sees_a_real_decoding(client, kb, capital, igd_server):
    login(client, make_user("rita", kb, role="reviewer"))
    page = client.get(reverse("answer_playground"))
    assert page.status_code == 200 and b'value="strict" selected' in page.content
    response = client.post(reverse("answer_playground"), {"question": QUESTION, "mode": "strict"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="playground-winner">context<' in html
    assert "Sylvania" in html and "Fredville" in html  # the previews
    assert "faq-capital" in html  # the retrieved passage and the snippet
    assert 'id="playground-chart"' in html and "<rect" in html  # λ_t and the gate per token
    truth = client.post(reverse("answer_playground"), {"question": QUESTION, "mode": "truth"}, HTTP_HX_REQUEST="true")
    assert 'id="playground-winner">memory<' in truth.content.decode()
    assert "<html" not in truth.content.decode()  # HTMX gets the partial only


def test_bad_input_is_a_400_naming_the_field(client, kb, igd_server):
    login(client, make_user("rita", kb, role="reviewer"))
    response = client.post(reverse("answer_playground"), {"question": "", "mode": "sometimes"})
    assert response.status_code == 400
    assert "question" in response.content.decode() and "mode" in response.content.decode()


def test_only_ops_set_the_default_mode(client, kb):
    login(client, make_user("rita", kb, role="reviewer"))
    assert client.post(reverse("answer_settings"), {"default_mode": "truth"}).status_code == 403
    assert not AnswerSettings.objects.exists()
    client.logout()
    ops = make_user("otto", kb, role="ops")
    login(client, ops)
    assert client.post(reverse("answer_settings"), {"default_mode": "truth"}).status_code == 302
    row = AnswerSettings.objects.get(knowledge_base=kb)
    assert row.default_mode == "truth" and row.updated_by == ops


def test_questions_are_escaped(client, kb, capital, igd_server):
    login(client, make_user("rita", kb, role="reviewer"))
    response = client.post(reverse("answer_playground"), {"question": "<script>alert(1)</script>", "mode": "strict"})
    assert b"<script>alert(1)</script>" not in response.content


def test_the_playground_decodes_on_the_real_local_model(client, kb, capital, settings):
    # No IGD backend on the answer path: the playground still decodes, on the local model (Gemma 3 270M here).
    settings.IGD_BACKEND = "off"
    settings.IGD_MAX_NEW_TOKENS = 6
    login(client, make_user("rita", kb, role="reviewer"))
    response = client.post(reverse("answer_playground"), {"question": QUESTION, "mode": "strict"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and "The IGD backend failed" not in html
    assert "faq-capital" in html  # the retrieved passage
    assert 'id="playground-chart"' in html and "<rect" in html  # λ_t and the gate per generated token
    winner = html.split('id="playground-winner">', 1)[1].split("<", 1)[0]
    assert winner in {"context", "memory", "user"}


def test_the_page_says_when_the_local_model_is_too_small_and_shows_that_it_works(client, kb, settings):
    """Issue 29 (12): the bundled Gemma 3 270M is named as too small to trust; asking shows a working state."""
    settings.IGD_BACKEND, settings.LOCAL_LM_PATH = "local", ""
    login(client, make_user("rita", kb, role="reviewer"))
    html = client.get(reverse("answer_playground")).content.decode()
    assert "Too small to trust:" in html and "Gemma 3 270M" in html
    form = html[:html.index('class="card playground-form"')]
    form = form[form.rindex("<form"):]
    assert 'hx-disabled-elt="find button[type=submit]"' in form and "#playground-busy" in form
    assert 'id="playground-busy"' in html and "the first answer also loads the model" in html


def test_the_playground_keeps_quiet_about_a_model_it_cannot_judge(client, kb, settings, igd_server):
    login(client, make_user("rita", kb, role="reviewer"))
    assert "Too small to trust" not in client.get(reverse("answer_playground")).content.decode()  # an endpoint


@pytest.mark.parametrize("ratio, words", [
    (5.45578871627709e300, "far more likely (over ×1,000)"), (float("inf"), "far more likely (over ×1,000)"),
    (3.2, "×3.2 as likely"), (999.4, "×999 as likely"), (1.0, "×1 as likely"), (0.25, "less likely (×0.25)"),
    (1e-9, "far less likely (under ×0.001)"), (float("nan"), "no clear preference"),
])
def test_likelihood_ratios_are_read_as_words_past_a_thousand(ratio, words):
    from kbreview.views.display import likelihood_words

    assert likelihood_words(ratio) == words


def test_a_huge_ratio_is_shown_in_words_on_the_page(client, kb, capital, igd_server, monkeypatch):
    from agents.igd import arithmetic

    real = arithmetic.FilterDecision

    def huge(memory_ratio, user_ratio, memory_disagrees):
        return real(memory_ratio=5.45578871627709e300, user_ratio=user_ratio, memory_disagrees=memory_disagrees)

    monkeypatch.setattr(arithmetic, "FilterDecision", huge)
    login(client, make_user("rita", kb, role="reviewer"))
    html = client.post(reverse("answer_playground"), {"question": QUESTION, "mode": "truth"}).content.decode()
    assert 'class="memory-ratio">far more likely (over ×1,000)</span>' in html
    assert "545578" not in html


def test_the_playground_answers_under_the_knowledge_bases_policy_and_records_nothing(client, kb, fares, igd_server,
                                                                                      settings):
    settings.CONFLICT_LOOKUP_TIMEOUT_MS = 10_000  # a loaded machine's first look-up must not time out here
    set_policy(kb, "prefer_suggested")
    login(client, make_user("rita", kb, role="reviewer"))
    html = client.post(reverse("answer_playground"), {"question": FARE_QUESTION, "mode": "strict"}).content.decode()
    assert 'id="playground-policy-name">prefer_suggested<' in html
    assert '<code class="held-back">faq-fare-old</code>' in html
    passages = html.split("<h3>Retrieved passages</h3>", 1)[1]
    assert "web-fares" in passages and "faq-fare-old" not in passages  # the answer never read the held-back side
    set_policy(kb, "caveat", caveat_text="Our pages <b>disagree</b> here; please check with us.")
    html = client.post(reverse("answer_playground"), {"question": FARE_QUESTION, "mode": "strict"}).content.decode()
    reply = html.split('id="playground-reply">', 1)[1].split("</p>", 1)[0]
    assert reply.endswith(" Our pages &lt;b&gt;disagree&lt;/b&gt; here; please check with us.")
    assert 'id="playground-caveat-added"' in html and "faq-fare-old" in html.split("<h3>Retrieved passages</h3>", 1)[1]
    assert not Turn.objects.exists() and not PolicyDecision.objects.exists()


def test_the_playground_says_when_the_lookup_failed(client, kb, fares, igd_server):
    set_policy(kb, "prefer_suggested")
    login(client, make_user("rita", kb, role="reviewer"))

    def fail(execute, sql, params, many, context):
        if "/* conflict_check */" in sql:
            raise OperationalError("canceling statement due to statement timeout")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        html = client.post(reverse("answer_playground"), {"question": FARE_QUESTION, "mode": "strict"}).content.decode()
    assert "The open-conflict look-up failed" in html and 'class="held-back"' not in html
    assert "faq-fare-old" in html.split("<h3>Retrieved passages</h3>", 1)[1]  # answered as under off
