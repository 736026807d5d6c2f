"""Security of the console: roles on every write (HTMX partial posts too), knowledge-base isolation
(404 for another's ids on every page, partial and post), CSRF, and inert article/reply text."""
import pytest
from django.test import Client
from django.urls import reverse

from articles.models import Article, ArticleVersion, IndexSyncJob
from articles.services import article_delete, article_edit
from conflicts.models import ApiToken, Conflict, ConflictActivity
from conflicts.services import api_token_create
from tests.conflicts.console_support import add_occurrence, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world(kb, other_kb):
    """Two knowledge bases, each with articles, a conflict, an old version, a sync job and a token."""
    def build(knowledge_base, prefix):
        a = make_article(knowledge_base, f"{prefix}-a", "Tickets cost €10.", title=f"{prefix} A", index=False)
        b = make_article(knowledge_base, f"{prefix}-b", "Tickets cost €12.", title=f"{prefix} B", index=False)
        old_version = a.current_version
        article_edit(article=a, expected_version_id=a.current_version_id, body="Tickets cost €11.")
        a.refresh_from_db()
        conflict = make_conflict(knowledge_base, a, b)
        done = make_conflict(knowledge_base, b, make_article(knowledge_base, f"{prefix}-c", "Tickets cost €13.", index=False),
                             status="processed")
        job = IndexSyncJob.objects.create(knowledge_base=knowledge_base)
        token, _ = api_token_create(knowledge_base=knowledge_base, name=f"{prefix} bot")
        return {"a": a, "b": b, "old_version": old_version, "conflict": conflict, "done": done, "job": job, "token": token}

    return {"mine": build(kb, "mine"), "theirs": build(other_kb, "theirs")}


def posts(objects, resolve_data=None):
    """Every write endpoint of the console with its data, for one knowledge base's objects."""
    c, a = objects["conflict"], objects["a"]
    return [
        (reverse("conflict_bulk"), {"ids": [c.pk], "reason": "r"}),
        (reverse("conflict_resolve", args=[c.pk]), {"low_action": "keep", "high_action": "keep", "note": "n",
                                                     "low_expected_version_id": a.current_version_id,
                                                     "high_expected_version_id": objects["b"].current_version_id}),
        (reverse("conflict_preview", args=[c.pk]), {"side": "low", "low_body": "x"}),
        (reverse("conflict_dismiss", args=[c.pk]), {"reason": "r"}),
        (reverse("conflict_reopen", args=[objects["done"].pk]), {"note": ""}),
        (reverse("article_edit", args=[a.pk]), {"title": "T", "body": "new body", "expected_version_id": a.current_version_id}),
        (reverse("article_restore", args=[a.pk]), {}),
        (reverse("article_version_restore", args=[a.pk, objects["old_version"].pk]), {"expected_version_id": a.current_version_id}),
        (reverse("ops_resync"), {}),
        (reverse("ops_token_create"), {"name": "new"}),
        (reverse("ops_token_revoke", args=[objects["token"].pk]), {}),
    ]


def pages(objects):
    """Every page and partial of the console that shows one knowledge base's objects."""
    a, old = objects["a"], objects["old_version"]
    return [
        reverse("conflict_detail", args=[objects["conflict"].pk]),
        reverse("article_detail", args=[a.pk]),
        reverse("article_detail", args=[a.pk]) + f"?from={old.pk}&to={a.current_version_id}",
        reverse("ops_sync_job", args=[objects["job"].pk]),
    ]


def snapshot():
    return (
        list(Conflict.objects.order_by("pk").values_list("pk", "status")),
        ArticleVersion.objects.count(),
        list(Article.objects.order_by("pk").values_list("pk", "status", "current_version_id")),
        ConflictActivity.objects.count(),
        list(ApiToken.objects.order_by("pk").values_list("pk", "revoked_at")),
        ApiToken.objects.count(),
        IndexSyncJob.objects.count(),
    )


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_viewer_gets_403_on_every_post_and_nothing_changes(client, kb, world, htmx):
    client.force_login(make_user("vic", kb, "viewer"))
    before = snapshot()
    for url, data in posts(world["mine"]):
        response = client.post(url, data, **(HTMX if htmx else {}))
        assert response.status_code == 403, url
    assert snapshot() == before


def test_viewer_reads_but_sees_no_action_buttons(client, kb, world):
    client.force_login(make_user("vic", kb, "viewer"))
    queue = client.get(reverse("conflict_queue")).content.decode()
    assert "mine A" in queue and "Dismiss selected" not in queue and 'name="ids"' not in queue
    detail = client.get(reverse("conflict_detail", args=[world["mine"]["conflict"].pk])).content.decode()
    assert "mine A" in detail
    assert "Resolve" not in detail and 'action="/conflicts/' not in detail and "Dismiss" not in detail
    article = client.get(reverse("article_detail", args=[world["mine"]["a"].pk])).content.decode()
    assert "Restore this version" not in article and "Save as new version" not in article
    assert client.get(reverse("ops_home")).status_code == 403


def test_reviewer_cannot_reach_ops(client, kb, world):
    client.force_login(make_user("rita", kb, "reviewer"))
    assert client.get(reverse("ops_home")).status_code == 403
    assert client.get(reverse("ops_sync_job", args=[world["mine"]["job"].pk]), **HTMX).status_code == 403
    assert client.post(reverse("ops_resync"), {}, **HTMX).status_code == 403
    assert client.post(reverse("ops_token_create"), {"name": "x"}).status_code == 403
    assert "Ops</a>" not in client.get(reverse("home")).content.decode()


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_member_of_one_kb_gets_404_for_every_page_partial_and_post_of_another(client, kb, world, htmx):
    client.force_login(make_user("oscar", kb, "ops"))  # the strongest role, in the wrong knowledge base
    headers = HTMX if htmx else {}
    for url in pages(world["theirs"]):
        response = client.get(url, **headers)
        assert response.status_code == 404, url
        assert b"theirs" not in response.content
    before = snapshot()
    for url, data in posts(world["theirs"]):
        if url in (reverse("ops_resync"), reverse("ops_token_create")):
            continue  # these act on the current knowledge base only; no id to cross
        response = client.post(url, data, **headers)
        assert response.status_code == 404, url
    assert snapshot() == before
    # Mixed ids: one's own article with another's version id
    mine = world["mine"]["a"]
    url = reverse("article_version_restore", args=[mine.pk, world["theirs"]["old_version"].pk])
    assert client.post(url, {"expected_version_id": mine.current_version_id}).status_code == 404
    url = reverse("article_detail", args=[mine.pk]) + f"?from={world['theirs']['old_version'].pk}&to={mine.current_version_id}"
    assert client.get(url, **headers).status_code == 404
    # Bulk dismiss mixing one's own id with another's refuses all of it
    data = {"ids": [world["mine"]["conflict"].pk, world["theirs"]["conflict"].pk], "reason": "r"}
    assert client.post(reverse("conflict_bulk"), data, **headers).status_code == 404
    assert Conflict.objects.get(pk=world["mine"]["conflict"].pk).status == "open"
    # Lists never show the other's rows
    assert b"theirs" not in client.get(reverse("conflict_queue")).content
    assert b"theirs" not in client.get(reverse("article_list")).content
    assert b"theirs bot" not in client.get(reverse("ops_home")).content


def test_anonymous_is_sent_to_login_from_every_page_and_post(client, world):
    for url in pages(world["mine"]) + [reverse("home"), reverse("conflict_queue"), reverse("article_list"), reverse("ops_home")]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    before = snapshot()
    for url, data in posts(world["mine"]):
        response = client.post(url, data)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    assert snapshot() == before


def test_csrf_is_enforced_on_posts(kb, world):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_user("rita", kb, "reviewer"))
    conflict = world["mine"]["conflict"]
    url = reverse("conflict_dismiss", args=[conflict.pk])
    assert csrf_client.post(url, {"reason": "r"}, **HTMX).status_code == 403
    assert Conflict.objects.get(pk=conflict.pk).status == "open"
    page = csrf_client.get(reverse("conflict_detail", args=[conflict.pk]))
    token = csrf_client.cookies["csrftoken"].value
    # the token reaches every HTMX request through <body hx-headers>
    assert 'hx-headers=\'{"x-csrftoken": "' in page.content.decode()
    response = csrf_client.post(url, {"reason": "r"}, HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200
    assert Conflict.objects.get(pk=conflict.pk).status == "dismissed"


def test_article_and_reply_text_with_html_renders_inert(client, kb):
    evil = '<script>alert("x")</script> Tickets cost <b>€10</b> <img src=x onerror=alert(1)>.'
    a = make_article(kb, "evil-a", evil, title='<script>alert("title")</script>Evil', index=False)
    b = make_article(kb, "evil-b", "Tickets cost €12.", index=False)
    conflict = make_conflict(kb, a, b, explanation='<script>alert("exp")</script>',
                             snippets=('Tickets cost <b>€10</b>', "Tickets cost €12."))
    add_occurrence(conflict, external_id="t1", question="<script>alert('q')</script>",
                   reply="<script>alert('reply')</script><iframe src=//evil>")
    old = a.current_version
    article_edit(article=a, expected_version_id=old.pk, body=evil + " <script>v2()</script>")
    a.refresh_from_db()
    client.force_login(make_user("rita", kb, "reviewer"))
    responses = [
        client.get(reverse("conflict_queue")),
        client.get(reverse("conflict_detail", args=[conflict.pk])),
        client.get(reverse("article_list")),
        client.get(reverse("article_detail", args=[a.pk]) + f"?from={old.pk}&to={a.current_version_id}"),
        client.get(reverse("article_detail", args=[a.pk]) + f"?from={old.pk}&to={a.current_version_id}", **HTMX),
        client.get(reverse("home")),
        client.post(reverse("conflict_preview", args=[conflict.pk]), {"side": "low", "low_body": evil + "<script>p()</script>"}, **HTMX),
    ]
    for response in responses:
        html = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert" not in html and "<script>v2" not in html and "<script>p(" not in html
        assert "<img src=x" not in html and "<iframe" not in html and "<b>€10</b>" not in html
    detail = responses[1].content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in detail
    assert "<mark>Tickets cost &lt;b&gt;€10&lt;/b&gt;</mark>" in detail  # escaped first, then marked
    assert "&lt;script&gt;alert(&#x27;reply&#x27;)&lt;/script&gt;" in detail


def test_deleted_article_restore_through_view_requires_reviewer(client, kb, world):
    a = world["mine"]["a"]
    article_delete(article=a)
    client.force_login(make_user("vic", kb, "viewer"))
    assert client.post(reverse("article_restore", args=[a.pk])).status_code == 403
    assert Article.objects.get(pk=a.pk).status == "deleted"


def test_a_refusal_is_logged_once_in_one_line_without_a_traceback(client, kb, caplog):
    """Issue 29 (11): every 403 wrote the PermissionDenied traceback to the log, twice."""
    import logging

    from tests.conflicts.console_support import make_conflict, make_user
    from tests.factories import make_article

    a, b = (make_article(kb, f"faq-{n}", f"Text {n}.", index=False) for n in range(2))
    conflict = make_conflict(kb, a, b)
    client.force_login(make_user("vera", kb, "viewer"))
    with caplog.at_level(logging.INFO):
        assert client.post(reverse("conflict_dismiss", args=[conflict.pk]), {"reason": "x"}).status_code == 403
    [refusal] = [r for r in caplog.records if r.name == "django.request"]
    assert refusal.exc_info is None and "\n" not in refusal.getMessage()
    assert refusal.getMessage().startswith("Forbidden (Permission denied): /conflicts/")
    assert "needs the reviewer role" in refusal.getMessage()
    assert logging.getLogger("django").handlers == []  # printed by the root's handler only
