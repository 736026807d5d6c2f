"""Model-disagreement findings in the console: the queue (filtered by type, with a readable explanation), the article
page, the finding's own page, review through the views (CSRF on HTMX posts), who may act, and the per-KB switch."""
import pytest
from django.test import Client
from django.urls import reverse

from agents.igd.pipeline import MemoryDisagreement
from conflicts.models import AnswerSettings, Conflict, ConflictStatus
from conflicts.services.answering import answer_settings_update
from conflicts.services.disagreements import model_disagreement_record
from conflicts.services.turns import RetrievedRef, turn_report
from tests.conflicts.console_support import make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
EVIL_TITLE = "Lake <b>ferry</b> <script>alert(1)</script>"


@pytest.fixture
def lake(kb):
    return make_article(kb, "faq-lake", "The lake ferry leaves at 9 am daily.", title=EVIL_TITLE, index=False)


@pytest.fixture
def finding(kb, lake):
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    turn, _ = turn_report(knowledge_base=kb, external_id="t1", question="When does the <i>lake</i> ferry leave?",
                          retrieved=[RetrievedRef(ref="faq-lake", rank=1)])
    return model_disagreement_record(turn=turn, disagreement=MemoryDisagreement(
        ref="faq-lake", passage="The lake ferry leaves at 9 am daily.", context_preview="9 am",
        memory_preview="<em>10 am</em>", memory_ratio=8.0, user_ratio=0.5,
    ))


@pytest.fixture
def pair(kb):
    a = make_article(kb, "faq-fare-a", "A ticket costs €18.", title="Fares A", index=False)
    b = make_article(kb, "faq-fare-b", "A ticket costs €22.", title="Fares B", index=False)
    return make_conflict(kb, a, b, explanation="The fares differ.")


def test_the_queue_lists_findings_filterable_by_type_with_a_readable_escaped_explanation(client, kb, finding, pair):
    client.force_login(make_user("vera", kb, "viewer"))
    everything = client.get(reverse("conflict_queue")).content.decode()
    assert f'data-conflict="{finding.pk}"' in everything and f'data-conflict="{pair.pk}"' in everything
    assert '<option value="model_disagrees">Model disagrees with article</option>' in everything
    html = client.get(reverse("conflict_queue"), {"type": "model_disagrees"}).content.decode()
    assert f'data-conflict="{finding.pk}"' in html and f'data-conflict="{pair.pk}"' not in html
    assert '<span class="memory">the model\'s memory</span>' in html
    # the explanation names the article by its (escaped) title, never as markup
    assert "The answer model, answering closed-book, disagrees with “Lake &lt;b&gt;ferry&lt;/b&gt; &lt;script&gt;" in html
    assert "it answered “&lt;em&gt;10 am&lt;/em&gt;” where the article says “9 am”" in html
    assert "<script>alert(1)</script>" not in html and "<em>10 am</em>" not in html
    prices = client.get(reverse("conflict_queue"), {"type": "price"}).content.decode()
    assert f'data-conflict="{finding.pk}"' not in prices and f'data-conflict="{pair.pk}"' in prices


def test_the_article_page_shows_its_open_findings(client, kb, lake, finding, django_user_model):
    client.force_login(make_user("vera", kb, "viewer"))
    html = client.get(reverse("article_detail", args=[lake.pk])).content.decode()
    assert "The model disagrees with this article" in html and f'data-conflict="{finding.pk}"' in html
    assert "&lt;em&gt;10 am&lt;/em&gt;" in html and "<script>alert(1)</script>" not in html
    assert "(v1 · seen 1×)" in html
    # not among the pairs the article is part of
    pairs = html.split("Conflicts this article is part of")[1].split("The model disagrees")[0]
    assert "None." in pairs
    Conflict.objects.filter(pk=finding.pk).update(status=ConflictStatus.DISMISSED)
    assert "The model disagrees with this article" not in client.get(reverse("article_detail", args=[lake.pk])).content.decode()


def test_a_viewer_sees_the_finding_but_cannot_act(client, kb, finding):
    client.force_login(make_user("vera", kb, "viewer"))
    response = client.get(reverse("conflict_detail", args=[finding.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "What the model answered" in html and "About v1 of the article" in html
    assert 'class="memory-preview">&lt;em&gt;10 am&lt;/em&gt;</q>' in html and "When does the &lt;i&gt;lake" in html
    assert 'data-side="low"' in html and 'data-side="high"' not in html
    assert 'id="suggestion"' not in html and "The two passages, compared" not in html  # no MACR, no second side
    assert "dismiss-form" not in html and 'id="resolve-form"' not in html
    assert client.post(reverse("conflict_dismiss", args=[finding.pk]), {"reason": "no"}, **HTMX).status_code == 403
    assert client.post(reverse("conflict_resolve", args=[finding.pk]), {"note": "x"}, **HTMX).status_code == 403
    assert Conflict.objects.get(pk=finding.pk).status == ConflictStatus.OPEN


def test_a_reviewer_dismisses_it_over_htmx_with_the_csrf_token(kb, finding):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_user("rita", kb, "reviewer"))
    url = reverse("conflict_dismiss", args=[finding.pk])
    assert csrf_client.post(url, {"reason": "The timetable is right."}, **HTMX).status_code == 403
    page = csrf_client.get(reverse("conflict_detail", args=[finding.pk])).content.decode()
    assert "dismiss-form" in page and "the article is right" in page
    assert 'name="high_action"' not in page and 'name="winner"' not in page  # one article, no side to choose
    token = csrf_client.cookies["csrftoken"].value
    response = csrf_client.post(url, {"reason": "The timetable is right."}, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"].endswith(f"/conflicts/{finding.pk}/?done=dismissed")
    dismissed = Conflict.objects.get(pk=finding.pk)
    assert dismissed.status == ConflictStatus.DISMISSED and dismissed.activity.filter(kind="dismissed").exists()


def test_a_reviewer_resolves_it_by_editing_the_article(client, kb, lake, finding):
    client.force_login(make_user("rita", kb, "reviewer"))
    assert "changed since" not in client.get(reverse("conflict_detail", args=[finding.pk])).content.decode()
    url = reverse("conflict_resolve", args=[finding.pk])
    refused = client.post(url, {"low_action": "keep", "low_body": "", "low_expected_version_id": lake.current_version_id,
                                "note": ""}, **HTMX)
    assert refused.status_code == 400 and "say in a note what was done" in refused.content.decode()
    response = client.post(url, {"low_action": "edit", "low_body": "The lake ferry leaves at 10 am daily.",
                                 "low_expected_version_id": lake.current_version_id, "note": "New timetable."}, **HTMX)
    assert response.status_code == 200 and "HX-Redirect" in response
    lake.refresh_from_db()
    assert lake.current_version.body == "The lake ferry leaves at 10 am daily."
    assert Conflict.objects.get(pk=finding.pk).status == ConflictStatus.PROCESSED
    # no suggestion to recompute and no second side to preview
    assert client.post(reverse("conflict_suggestion", args=[finding.pk])).status_code == 404
    assert client.post(reverse("conflict_preview", args=[finding.pk]), {"side": "high"}, **HTMX).status_code == 404
    page = client.get(reverse("conflict_detail", args=[finding.pk])).content.decode()
    assert "the article has changed since" in page  # the finding disputes the version before the edit


def test_only_ops_switch_recording_on_and_off(client, kb):
    client.force_login(make_user("rita", kb, "reviewer"))
    page = client.get(reverse("answer_playground")).content.decode()
    assert 'id="records-disagreements">not recorded<' in page and "record_model_disagreements" not in page
    data = {"default_mode": "strict", "record_model_disagreements": "on"}
    assert client.post(reverse("answer_settings"), data).status_code == 403
    assert not AnswerSettings.objects.exists()
    client.force_login(make_user("otto", kb, "ops"))
    assert 'name="record_model_disagreements"' in client.get(reverse("answer_playground")).content.decode()
    assert client.post(reverse("answer_settings"), data).status_code == 302
    assert AnswerSettings.objects.get(knowledge_base=kb).record_model_disagreements is True
    assert 'id="records-disagreements">recorded<' in client.get(reverse("answer_playground")).content.decode()
    assert client.post(reverse("answer_settings"), {"default_mode": "strict"}).status_code == 302  # unticked: off
    assert AnswerSettings.objects.get(knowledge_base=kb).record_model_disagreements is False


def test_queue_queries_do_not_grow_with_findings_beside_pairs(client, kb, django_assert_max_num_queries):
    """A finding has no second article: the queue reads it with the pairs, without a query per row."""
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    base = make_article(kb, "base", "Base text.", index=False)
    for i in range(12):
        make_conflict(kb, base, make_article(kb, f"o-{i}", f"Other {i}.", index=False))
        make_article(kb, f"f-{i}", f"The ferry {i} leaves at 9 am.", title=f"Ferry {i}", index=False)
        turn, _ = turn_report(knowledge_base=kb, external_id=f"t-f-{i}", question="When?",
                              retrieved=[RetrievedRef(ref=f"f-{i}", rank=1)])
        model_disagreement_record(turn=turn, disagreement=MemoryDisagreement(
            ref=f"f-{i}", passage="", context_preview="9 am", memory_preview="10 am", memory_ratio=8.0, user_ratio=0.5))
    client.force_login(make_user("rita", kb, "reviewer"))
    client.get(reverse("conflict_queue"))  # warm the session
    with django_assert_max_num_queries(8):  # as for pairs alone (test_views_queue)
        html = client.get(reverse("conflict_queue")).content.decode()
    assert html.count('<span class="memory">the model\'s memory</span>') == 12
