"""The conflict queue: sign-in, tabs and counts, impact ordering, filters, pagination, bulk dismiss, KB switch."""
import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from conflicts.models import Conflict, ConflictActivity
from tests.conflicts.console_support import PASSWORD, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def reviewer(kb):
    return make_user("rita", kb, "reviewer")


def test_anonymous_is_sent_to_login_and_can_sign_in_and_out(client, kb, reviewer):
    response = client.get(reverse("conflict_queue"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    page = client.get(reverse("login"))
    assert b'name="username"' in page.content
    response = client.post(reverse("login"), {"username": "rita", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("conflict_queue")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("home")).status_code == 302


def test_anonymous_htmx_request_gets_a_client_redirect_to_login(client, kb):
    response = client.get(reverse("conflict_queue"), **HTMX)
    assert response["HX-Redirect"].startswith(reverse("login"))


def test_user_without_membership_sees_no_knowledge_base(client, kb):
    client.force_login(make_user("nobody"))
    response = client.get(reverse("conflict_queue"))
    assert response.status_code == 403
    assert b"not a member of any knowledge base" in response.content


def test_tabs_show_counts_and_rows(client, kb, articles, reviewer):
    a = articles
    make_conflict(kb, a[0], a[1], explanation="Car fare differs", times_cited=2)
    make_conflict(kb, a[2], a[3], status="processed")
    make_conflict(kb, a[4], a[5], status="dismissed")
    make_conflict(kb, a[6], a[7], status="dismissed")
    client.force_login(reviewer)
    response = client.get(reverse("conflict_queue"))
    tabs = {t["status"]: t["count"] for t in response.context["tabs"]}
    assert tabs == {"open": 1, "processed": 1, "dismissed": 2}
    html = response.content.decode()
    assert "Article 0" in html and "Article 1" in html and "Car fare differs" in html
    assert "cited in 2 replies" in html and "retrieved in 1" in html
    assert "Impact order: replies that cited either article" in html
    dismissed = client.get(reverse("conflict_queue"), {"status": "dismissed"}).content.decode()
    assert "Article 6" in dismissed and "Article 0" not in dismissed


def test_regressed_conflicts_are_marked_in_open_and_filterable(client, kb, articles, reviewer):
    a = articles
    make_conflict(kb, a[0], a[1])
    regressed = make_conflict(kb, a[2], a[3], substatus="regressed", recurred_after_review=True)
    client.force_login(reviewer)
    html = client.get(reverse("conflict_queue")).content.decode()
    assert html.count('class="badge regressed"') == 1
    response = client.get(reverse("conflict_queue"), {"regressed": "1"})
    assert [c.pk for c in response.context["conflicts"]] == [regressed.pk]
    assert response.context["tabs"][0]["count"] == 1


def test_htmx_tab_switch_renders_only_the_partial_with_href_fallback(client, kb, articles, reviewer):
    make_conflict(kb, articles[0], articles[1], status="processed")
    client.force_login(reviewer)
    full = client.get(reverse("conflict_queue"), {"status": "processed"}).content.decode()
    assert "<html" in full and 'hx-push-url="true"' in full and 'href="/conflicts/?status=processed"' in full
    partial = client.get(reverse("conflict_queue"), {"status": "processed"}, **HTMX)
    body = partial.content.decode()
    assert "<html" not in body and "Article 0" in body
    assert "HX-Request" in partial["Vary"]
    # A history restore (back button) gets the whole page again.
    restore = client.get(reverse("conflict_queue"), {"status": "processed"}, HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HTMX)
    assert "<html" in restore.content.decode()


def test_default_order_is_cited_then_impact_then_recency_and_sort_by_recent(client, kb, articles, reviewer):
    now = timezone.now()
    a = articles
    old_cited = make_conflict(kb, a[0], a[1], times_cited=1, impact=1.0, last_seen=now - dt.timedelta(days=20))
    high_impact = make_conflict(kb, a[2], a[3], times_cited=0, impact=9.0, last_seen=now - dt.timedelta(days=5))
    recent = make_conflict(kb, a[4], a[5], times_cited=0, impact=2.0, last_seen=now)
    client.force_login(reviewer)
    ids = [c.pk for c in client.get(reverse("conflict_queue")).context["conflicts"]]
    assert ids == [old_cited.pk, high_impact.pk, recent.pk]
    ids = [c.pk for c in client.get(reverse("conflict_queue"), {"sort": "recent"}).context["conflicts"]]
    assert ids == [recent.pk, high_impact.pk, old_cited.pk]


def test_text_search_uses_words_stems_passages_titles_and_refs(client, kb, articles, reviewer):
    a = articles
    delivery = make_conflict(kb, a[0], a[1], explanation="Delivery times differ.", snippets=("ships in 2 days", "ships in 5 days"))
    refund = make_conflict(kb, a[2], a[3], explanation="Refund windows differ.")
    client.force_login(reviewer)
    get = lambda q: [c.pk for c in client.get(reverse("conflict_queue"), {"q": q}).context["conflicts"]]  # noqa: E731
    assert get("deliveries") == [delivery.pk]  # stemmed: deliveries ~ delivery
    assert get("ships") == [delivery.pk]  # the passages are searched
    assert get("refund -delivery") == [refund.pk]  # web-search syntax
    assert get("Article 3") == [refund.pk]  # titles (all words)
    assert get("faq-2") == [refund.pk]  # refs
    assert get("nothing-like-this") == []


def test_search_exclusion_holds_across_the_conflicts_text_and_its_titles(client, kb, reviewer):
    """Issue 29 (8): `islander -terms` left in a conflict whose title has "islander" and whose passage has
    "terms": each text was tested alone."""
    islander = make_article(kb, "faq-islander", "Residents pay less.", title="Islander discount", index=False)
    other = make_article(kb, "faq-other", "Residents pay the standard fare.", title="Standard fares", index=False)
    third = make_article(kb, "faq-third", "Everyone pays the same.", title="Islander cards", index=False)
    with_terms = make_conflict(kb, islander, other, explanation="The discounts differ.",
                               snippets=("see the terms of the card", "no discount"))
    plain = make_conflict(kb, third, other, explanation="The fares differ.")
    client.force_login(reviewer)
    get = lambda q: sorted(c.pk for c in client.get(reverse("conflict_queue"), {"q": q}).context["conflicts"])  # noqa: E731
    assert get("islander") == sorted([with_terms.pk, plain.pk])
    assert get("islander -terms") == [plain.pk]
    assert get("islander -standard") == []  # the other side's title counts too
    assert get("-terms") == [plain.pk]
    assert get("faq-islander") == [with_terms.pk]  # a ref needs no words


def test_an_over_long_search_is_refused_with_a_message_not_dropped(client, kb, articles, reviewer):
    make_conflict(kb, articles[0], articles[1], explanation="Fares differ.")
    client.force_login(reviewer)
    long_query = "fares " * 100
    response = client.get(reverse("conflict_queue"), {"q": long_query, "type": "price"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "<html" not in html
    assert "600 characters" in html and "at most 200" in html
    assert "conflict-row" not in html  # never the whole queue as if nothing was asked
    full = client.get(reverse("conflict_queue"), {"q": long_query, "type": "price"})
    assert full.status_code == 400
    assert list(full.context["conflicts"]) == [] and full.context["filters"]["type"] == "price"  # other filters hold


def test_text_search_follows_a_renamed_article_and_counts_leave_out_snoozed_ones(client, kb, articles, reviewer):
    """Titles are searched through a tsvector PostgreSQL keeps with the row: a renamed article is found by its
    new title at once (and no longer by the old one). The tab counts under a search leave out snoozed conflicts,
    as the Open tab's rows do, and count them under "snoozed only"."""
    a = articles
    first = make_conflict(kb, a[0], a[1], explanation="Fares differ.")
    second = make_conflict(kb, a[0], a[2], explanation="Fares differ again.")
    make_conflict(kb, a[3], a[4], explanation="Opening hours differ.")
    make_article(kb, "faq-0", "Body number 0.", title="Parcel lockers", index=False)  # renamed through the service
    client.force_login(reviewer)

    def search(q, **extra):
        context = client.get(reverse("conflict_queue"), {"q": q, **extra}).context
        return sorted(c.pk for c in context["conflicts"]), context["tabs"][0]["count"]

    assert search("lockers") == (sorted([first.pk, second.pk]), 2)  # stemmed, in the new title
    assert search("Article 0") == ([], 0)
    Conflict.objects.filter(pk=second.pk).update(snoozed_until=timezone.now() + dt.timedelta(days=2))
    assert search("lockers") == ([first.pk], 1)
    assert search("lockers", snoozed="1") == ([second.pk], 1)
    assert search("hours") == ([c.pk for c in Conflict.objects.filter(explanation__startswith="Opening")], 1)


def test_filters_by_type_text_and_article(client, kb, articles, reviewer):
    a = articles
    price = make_conflict(kb, a[0], a[1], type="price", explanation="fares differ")
    hours = make_conflict(kb, a[2], a[3], type="hours", explanation="opening hours differ")
    client.force_login(reviewer)
    get = lambda **p: [c.pk for c in client.get(reverse("conflict_queue"), p).context["conflicts"]]  # noqa: E731
    assert get(type="hours") == [hours.pk]
    assert get(q="opening") == [hours.pk]
    assert get(q="Article 1") == [price.pk]  # titles are searched too
    assert get(article=a[2].pk) == [hours.pk]
    counts = client.get(reverse("conflict_queue"), {"type": "price"}).context["tabs"]
    assert counts[0]["count"] == 1


def test_pagination(client, kb, reviewer):
    base = make_article(kb, "base", "Base text.", index=False)
    others = [make_article(kb, f"o-{i}", f"Other {i}.", index=False) for i in range(27)]
    for other in others:
        make_conflict(kb, base, other)
    client.force_login(reviewer)
    first = client.get(reverse("conflict_queue"))
    assert len(first.context["conflicts"]) == 25 and first.context["next_url"] and not first.context["prev_url"]
    second = client.get(first.context["next_url"])
    assert len(second.context["conflicts"]) == 2 and not second.context["next_url"] and second.context["prev_url"]
    back = client.get(second.context["prev_url"])
    assert [c.pk for c in back.context["conflicts"]] == [c.pk for c in first.context["conflicts"]]
    last = client.get(first.context["last_url"])  # the last 25 rows, ending with the last conflict
    every = [c.pk for c in first.context["conflicts"]] + [c.pk for c in second.context["conflicts"]]
    assert [c.pk for c in last.context["conflicts"]] == every[-25:] and not last.context["next_url"]
    assert client.get(reverse("conflict_queue"), {"after": "not a cursor"}).status_code == 200  # first page


@pytest.mark.parametrize("sort", ["impact", "recent", "seen", "reviewed"])
def test_keyset_pages_cover_every_conflict_once_in_order(client, kb, reviewer, sort):
    import datetime as dt

    from django.utils import timezone

    base = make_article(kb, "base", "Base text.", index=False)
    now = timezone.now()
    for i in range(60):
        other = make_article(kb, f"o-{i}", f"Other {i}.", index=False)
        # ties on purpose (times_cited, impact, last_seen repeat) and some NULL reviewed_at
        make_conflict(kb, base, other, times_cited=i % 3, impact=float(i % 4), times_seen=i % 5 + 1,
                      last_seen=now - dt.timedelta(hours=i % 7), reviewed_at=None if i % 2 else now - dt.timedelta(days=i % 6))
    client.force_login(reviewer)
    expected = [c.pk for c in client.get(reverse("conflict_queue"), {"sort": sort}).context["conflicts"]]
    from conflicts.models import Conflict
    from conflicts.selectors import QUEUE_SORTS

    everything = list(Conflict.objects.filter(knowledge_base=kb).order_by(*QUEUE_SORTS[sort]).values_list("pk", flat=True))
    assert expected == everything[:25]
    seen, url = [], reverse("conflict_queue") + f"?sort={sort}"
    while url:
        response = client.get(url)
        seen += [c.pk for c in response.context["conflicts"]]
        url = response.context["next_url"]
    assert seen == everything
    backwards, url = [], client.get(reverse("conflict_queue"), {"sort": sort}).context["last_url"]
    while url:
        response = client.get(url)
        backwards = [c.pk for c in response.context["conflicts"]] + backwards
        url = response.context["prev_url"]
    assert backwards == everything


def test_queue_queries_do_not_grow_with_page_size(client, kb, reviewer, django_assert_max_num_queries):
    base = make_article(kb, "base", "Base text.", index=False)
    for i in range(30):
        make_conflict(kb, base, make_article(kb, f"o-{i}", f"Other {i}.", index=False))
    client.force_login(reviewer)
    client.get(reverse("conflict_queue"))  # warm the session
    with django_assert_max_num_queries(8):
        client.get(reverse("conflict_queue"))


def test_bulk_dismiss_with_reason_calls_the_service_per_conflict(client, kb, articles, reviewer):
    a = articles
    first, second, third = make_conflict(kb, a[0], a[1]), make_conflict(kb, a[2], a[3]), make_conflict(kb, a[4], a[5])
    client.force_login(reviewer)
    response = client.post(reverse("conflict_bulk"), {"ids": [first.pk, second.pk], "reason": "seasonal prices"}, **HTMX)
    assert response.status_code == 200
    assert "Dismissed 2 conflict(s)." in response.content.decode()
    for conflict in (first, second):
        conflict.refresh_from_db()
        assert conflict.status == "dismissed" and conflict.review_note == "seasonal prices"
        assert ConflictActivity.objects.filter(conflict=conflict, kind="dismissed", actor=reviewer).count() == 1
    third.refresh_from_db()
    assert third.status == "open"


def test_bulk_dismiss_requires_a_reason_and_changes_nothing_without(client, kb, articles, reviewer):
    conflict = make_conflict(kb, articles[0], articles[1])
    client.force_login(reviewer)
    response = client.post(reverse("conflict_bulk"), {"ids": [conflict.pk], "reason": "  "}, **HTMX)
    assert response.status_code == 400 and "reason is required" in response.content.decode()
    conflict.refresh_from_db()
    assert conflict.status == "open"


def test_bulk_dismiss_without_htmx_redirects_back_to_the_queue(client, kb, articles, reviewer):
    conflict = make_conflict(kb, articles[0], articles[1])
    client.force_login(reviewer)
    response = client.post(reverse("conflict_bulk"), {"ids": [conflict.pk], "reason": "ok", "type": "price"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("conflict_queue"))
    assert Conflict.objects.get(pk=conflict.pk).status == "dismissed"


def test_kb_switcher_changes_the_current_knowledge_base(client, kb, other_kb, articles):
    user = make_user("multi", kb, "reviewer")
    from articles.models import Membership

    Membership.objects.create(user=user, knowledge_base=other_kb, role="viewer")
    theirs = [make_article(other_kb, f"x-{i}", f"Other KB {i}.", title=f"Theirs {i}", index=False) for i in range(2)]
    make_conflict(other_kb, theirs[0], theirs[1])
    make_conflict(kb, articles[0], articles[1])
    client.force_login(user)
    page = client.get(reverse("conflict_queue")).content.decode()
    assert "Knowledge base" in page and "Other Business" in page  # the switcher
    assert "Article 0" in page and "Theirs 0" not in page
    client.post(reverse("kb_switch"), {"knowledge_base": other_kb.pk, "next": "/conflicts/"})
    page = client.get(reverse("conflict_queue")).content.decode()
    assert "Theirs 0" in page and "Article 0" not in page
    # ?kb=<slug> switches too; a knowledge base the user is not a member of is a 404
    assert "Article 0" in client.get(reverse("conflict_queue"), {"kb": "acme"}).content.decode()
    assert client.post(reverse("kb_switch"), {"knowledge_base": 999999}).status_code == 404
    assert client.get(reverse("conflict_queue"), {"kb": "nope"}).status_code == 404


def test_resolved_and_dismissed_tabs_say_who_when_and_why_in_the_consoles_words(client, kb, articles, reviewer):
    """Issue 29 (9): the Resolved and Dismissed tabs showed neither who nor when nor the reason, and the
    activity log said "processed → open" while every screen says "Resolved"."""
    from conflicts.services import conflict_dismiss, conflict_reopen
    from conflicts.services.review import conflict_resolve_by_deleting_older

    a = articles
    resolved = make_conflict(kb, a[0], a[1], explanation="Fares differ.")
    dismissed = make_conflict(kb, a[2], a[3], explanation="Hours differ.")
    conflict_resolve_by_deleting_older(conflict=resolved, actor=reviewer, note="The older page was retired.")
    conflict_dismiss(conflict=dismissed, actor=reviewer, reason="Summer and winter hours, both right.")
    client.force_login(reviewer)
    for status, conflict, why in (("processed", resolved, "The older page was retired."),
                                  ("dismissed", dismissed, "Summer and winter hours, both right.")):
        html = client.get(reverse("conflict_queue"), {"status": status}).content.decode()
        row = html[html.index(f'data-conflict="{conflict.pk}"'):]
        row = row[:row.index("</tr>")]
        conflict.refresh_from_db()
        assert "rita" in row and why in row, row
        assert conflict.reviewed_at.strftime("%Y-%m-%d %H:%M") in row, row
    conflict_reopen(conflict=Conflict.objects.get(pk=resolved.pk), actor=reviewer)
    page = client.get(reverse("conflict_detail", args=[resolved.pk])).content.decode()
    assert "(Resolved → Open)" in page and "(Open → Resolved)" in page
    assert "processed" not in page.replace('data-status="processed"', "").replace("status=processed", "")
