"""The article screens: list, retrieval search, history, diff, edit, restore (with the confirmation when reviewed
conflicts would come back)."""
import re

import pytest
from django.urls import reverse

from articles.models import Article, ArticleStatus
from articles.selectors import search
from articles.services import article_delete, article_edit
from tests.conflicts.console_support import make_conflict
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_article_list_search_and_deleted_toggle(client, kb, reviewer):
    make_article(kb, "faq-pets", "Dogs travel free.", title="Travelling with pets", index=False)
    gone = make_article(kb, "faq-old", "Old text.", title="Old timetable", index=False)
    article_delete(article=gone)
    client.force_login(reviewer)
    html = client.get(reverse("article_list")).content.decode()
    assert "Travelling with pets" in html and "Old timetable" not in html
    html = client.get(reverse("article_list"), {"q": "pets"}, **HTMX).content.decode()
    assert "Travelling with pets" in html and "<html" not in html
    assert "Old timetable" in client.get(reverse("article_list"), {"deleted": "1"}).content.decode()


def test_retrieval_search_mode_shows_what_search_returns(client, kb, reviewer):
    make_article(kb, "faq-pets", "Dogs travel free on the outer deck.", title="Travelling with pets")
    make_article(kb, "faq-fares", "A car ticket costs €32.", title="Car fares")
    client.force_login(reviewer)
    response = client.get(reverse("article_list"), {"q": "can I bring my dog", "mode": "retrieval"})
    hits = response.context["hits"]
    assert hits and hits[0].external_ref == "faq-pets"
    assert "outer deck" in response.content.decode()


def test_article_detail_history_diff_conflicts_and_version_restore(client, kb, reviewer):
    a = make_article(kb, "faq-fares", "A car ticket costs €25.", title="Car fares")
    b = make_article(kb, "faq-fares-new", "A car ticket costs €32.", title="New fares", index=False)
    v1 = a.current_version
    article_edit(article=a, expected_version_id=v1.pk, body="A car ticket costs €28.")
    a.refresh_from_db()
    conflict = make_conflict(kb, a, b)
    client.force_login(reviewer)
    page = client.get(reverse("article_detail", args=[a.pk])).content.decode()
    assert "v1" in page and "v2" in page and f"/conflicts/{conflict.pk}/" in page and "Restore this version" in page
    diff = client.get(reverse("article_detail", args=[a.pk]), {"from": v1.pk, "to": a.current_version_id}, **HTMX)
    assert "<del>€25.</del><ins>€28.</ins>" in diff.content.decode() and "<html" not in diff.content.decode()
    response = client.post(reverse("article_version_restore", args=[a.pk, v1.pk]), {"expected_version_id": a.current_version_id})
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.current_version.number == 3 and a.current_version.body == "A car ticket costs €25."
    assert a.current_version.reason == "restore" and a.indexed_version_id == a.current_version_id


def test_version_restore_from_a_stale_page_is_refused(client, kb, reviewer):
    a = make_article(kb, "faq-fares", "A car ticket costs €25.", index=False)
    v1 = a.current_version
    article_edit(article=a, expected_version_id=v1.pk, body="A car ticket costs €28.")
    a.refresh_from_db()
    client.force_login(reviewer)
    response = client.post(reverse("article_version_restore", args=[a.pk, v1.pk]), {"expected_version_id": v1.pk})
    assert response.status_code == 409 and "changed by someone else" in response.content.decode()
    assert Article.objects.get(pk=a.pk).current_version.number == 2


def test_edit_article_reindexes_and_stale_edit_is_refused(client, kb, reviewer):
    a = make_article(kb, "faq-hours", "The office opens at 9:00.", title="Office hours")
    client.force_login(reviewer)
    url = reverse("article_edit", args=[a.pk])
    data = {"title": "Office hours", "body": "The office opens at 8:30 on weekdays.", "expected_version_id": a.current_version_id}
    assert client.post(url, data).status_code == 302
    a.refresh_from_db()
    assert a.current_version.number == 2 and a.indexed_version_id == a.current_version_id
    assert any("8:30" in hit.chunk_text for hit in search(knowledge_base=kb, question="when does the office open"))
    stale = client.post(url, {**data, "body": "Opens at 10."}, **HTMX)
    assert stale.status_code == 409 and "changed by someone else" in stale.content.decode()
    assert Article.objects.get(pk=a.pk).current_version.number == 2


def test_restore_deleted_article_brings_it_back_into_retrieval(client, kb, reviewer):
    a = make_article(kb, "faq-pets", "Dogs travel free on the outer deck.", title="Pets")
    article_delete(article=a)
    assert not search(knowledge_base=kb, question="dogs on board")
    client.force_login(reviewer)
    page = client.get(reverse("article_detail", args=[a.pk])).content.decode()
    assert "Restore this article" in page
    assert client.post(reverse("article_restore", args=[a.pk])).status_code == 302
    assert Article.objects.get(pk=a.pk).status == ArticleStatus.ACTIVE
    assert [h.external_ref for h in search(knowledge_base=kb, question="dogs on board")] == ["faq-pets"]


def test_restore_that_would_bring_back_a_reviewed_conflict_says_which_and_asks_first(client, kb, reviewer):
    from conflicts.services import ArticleFix, conflict_resolve

    # No year in the titles: a year a heading names scopes its prices (two years' price lists do not conflict).
    a = make_article(kb, "fares-2025", "A car ticket costs €25 one way.", title="Car fares", index=False)
    b = make_article(kb, "fares-2026", "A car ticket costs €32 one way.", title="Fares for cars", index=False)
    v1 = a.current_version
    conflict = make_conflict(kb, a, b)
    conflict_resolve(conflict=conflict, actor=reviewer, fixes=[
        ArticleFix(article_id=a.pk, expected_version_id=v1.pk, action="edit", body="A car ticket costs €32 one way.")])
    a.refresh_from_db()
    client.force_login(reviewer)
    url = reverse("article_version_restore", args=[a.pk, v1.pk])
    response = client.post(url, {"expected_version_id": a.current_version_id})
    html = response.content.decode()
    assert response.status_code == 200 and "1 reviewed conflict will come back to Open" in html
    assert f'data-conflict="{conflict.pk}"' in html and "finds the contradiction in the restored text" in html
    assert 'name="confirm" value="1"' in html
    assert Article.objects.get(pk=a.pk).current_version.number == 2  # nothing restored yet
    response = client.post(url, {"expected_version_id": a.current_version_id, "confirm": "1"})
    assert response.status_code == 302 and Article.objects.get(pk=a.pk).current_version.number == 3


def test_undelete_of_the_article_a_review_deleted_asks_first(client, kb, reviewer):
    from conflicts.services import ArticleFix, conflict_resolve

    a = make_article(kb, "fares-2025", "A car ticket costs €25 one way.", title="Car fares 2025", index=False)
    b = make_article(kb, "fares-2026", "A car ticket costs €32 one way.", title="Car fares 2026", index=False)
    conflict = make_conflict(kb, a, b)
    conflict_resolve(conflict=conflict, actor=reviewer, fixes=[
        ArticleFix(article_id=a.pk, expected_version_id=a.current_version_id, action="delete")])
    client.force_login(reviewer)
    response = client.post(reverse("article_restore", args=[a.pk]))
    assert response.status_code == 200 and "resolved by deleting this article" in response.content.decode()
    assert Article.objects.get(pk=a.pk).status == ArticleStatus.DELETED
    assert client.post(reverse("article_restore", args=[a.pk]), {"confirm": "1"}).status_code == 302
    assert Article.objects.get(pk=a.pk).status == ArticleStatus.ACTIVE


def test_saving_from_the_article_page_loads_the_page_not_a_page_inside_the_form(client, kb, reviewer):
    """Issue 29 (1): the edit form posts by HTMX and swaps itself; a success must send the browser to
    the article page (HX-Redirect), never answer a whole page for the form's place."""
    a = make_article(kb, "faq-hours", "The office opens at 9:00.", title="Office hours", index=False)
    client.force_login(reviewer)
    data = {"title": "Office hours", "body": "The office opens at 8:30.", "expected_version_id": a.current_version_id}
    response = client.post(reverse("article_edit", args=[a.pk]), data, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("article_detail", args=[a.pk])
    assert b"<nav" not in response.content
    page = client.get(response["HX-Redirect"]).content.decode()
    assert page.count("<nav") == 1 and "Saved as a new version" in page and "8:30" in page


def _restorable(kb):
    a = make_article(kb, "faq-fares", "A car ticket costs €25.", title="Car fares", index=False)
    v1 = a.current_version
    article_edit(article=a, expected_version_id=v1.pk, body="A car ticket costs €28.")
    a.refresh_from_db()
    return a, v1


def test_restore_urls_opened_by_get_go_back_to_the_article(client, kb, reviewer):
    """Issue 29 (7): a reload, the back button or a shared link opens the restore URL by GET: never a
    blank 405, and nothing is restored."""
    a, v1 = _restorable(kb)
    client.force_login(reviewer)
    response = client.get(reverse("article_version_restore", args=[a.pk, v1.pk]), follow=True)
    assert response.status_code == 200 and response.redirect_chain[-1][0] == reverse("article_detail", args=[a.pk])
    assert "Nothing was restored yet" in response.content.decode()
    assert a.versions.count() == 2
    gone = make_article(kb, "faq-old", "Old text.", title="Old", index=False)
    article_delete(article=gone)
    response = client.get(reverse("article_restore", args=[gone.pk]), follow=True)
    assert response.status_code == 200 and "Restore this article" in response.content.decode()
    assert Article.objects.get(pk=gone.pk).status == ArticleStatus.DELETED


def test_restore_url_by_get_shows_the_confirm_page_when_reviewed_conflicts_would_come_back(client, kb, reviewer, viewer):
    a, v1 = _restorable(kb)
    b = make_article(kb, "faq-fares-new", "A car ticket costs €32.", title="New fares", index=False)
    conflict = make_conflict(kb, a, b)
    from conflicts.services import conflict_dismiss

    conflict_dismiss(conflict=conflict, reason="Both right.")
    client.force_login(reviewer)
    url = reverse("article_version_restore", args=[a.pk, v1.pk])
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and "will come back to Open" in html and "Restore anyway" in html
    assert f'name="expected_version_id" value="{a.current_version_id}"' in html
    client.force_login(viewer)
    refused = client.get(url, follow=True)
    assert refused.status_code == 200 and "needs the reviewer role" in refused.content.decode()
    assert a.versions.count() == 2


def test_a_too_long_title_is_said_at_the_form_never_cut(client, kb, reviewer):
    """Issue 29 (13): the title input's maxlength cut a long title at 500 characters mid-word without a
    word, and a too-long title posted anyway came back without a message."""
    a = make_article(kb, "faq-hours", "The office opens at 9:00.", title="Office hours", index=False)
    client.force_login(reviewer)
    page = client.get(reverse("article_detail", args=[a.pk])).content.decode()
    title_input = re.search(r'<input[^>]*name="title"[^>]*>', page).group(0)
    assert "maxlength" not in title_input and 'data-max-chars="500"' in title_input
    assert "At most 500 characters." in page
    long_title = "Timetable " * 61  # 610 characters
    response = client.post(reverse("article_edit", args=[a.pk]), {
        "title": long_title, "body": "The office opens at 8:30.", "expected_version_id": a.current_version_id}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "The title is 609 characters long; at most 500 fit." in html
    assert Article.objects.get(pk=a.pk).current_version.number == 1
