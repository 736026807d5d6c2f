"""No dead ends, readable everywhere: progress on every HTMX action, input kept after a refusal,
next conflict and undo after an action, styled error pages, a read-only notice, safe Markdown, titles
instead of refs, v-numbers, the dashboard chart's values and today, a favicon."""
import itertools
import re

import pytest
from django.test import RequestFactory
from django.urls import reverse

from articles.services import article_edit
from conflicts.models import Conflict, ConflictActivity
from conflicts.services import conflict_dismiss
from tests.conflicts.console_support import add_occurrence, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
HTMX_TAG = re.compile(r"<(\w+)\b[^>]*\bhx-(?:get|post)=[^>]*>", re.S)


@pytest.fixture
def pair(kb):
    a = make_article(kb, "faq-car-2025", "A car ticket costs **€25** one way.\n\n<script>alert(1)</script> [site](javascript:alert(2))",
                     title="Car fares 2025", index=False)
    b = make_article(kb, "faq-car-2026", "A car ticket costs €32 one way.", title="Car fares 2026", index=False)
    return a, b


@pytest.fixture
def reviewer(kb):
    return make_user("rita", kb, "reviewer")


def test_every_htmx_action_shows_progress_and_disables_its_control(client, kb, pair, reviewer):
    a, b = pair
    conflict = make_conflict(kb, a, b)
    add_occurrence(conflict, external_id="t1", question="q", reply="r", citation="one")
    client.force_login(reviewer)
    pages = [reverse("conflict_queue"), reverse("conflict_detail", args=[conflict.pk]), reverse("article_list"),
             reverse("article_detail", args=[a.pk]), reverse("rule_list")]
    seen = 0
    for url in pages:
        html = client.get(url).content.decode()
        assert 'id="progress"' in html
        for match in HTMX_TAG.finditer(html):
            tag, element = match.group(1), match.group(0)
            seen += 1
            assert 'hx-indicator="#progress"' in element, (url, element)
            if tag in ("form", "a"):
                assert "hx-disabled-elt=" in element, (url, element)
    assert seen >= 12


def test_a_refused_bulk_dismiss_keeps_the_selection_and_the_typed_reason(client, kb, pair, reviewer):
    a, b = pair
    c = make_article(kb, "c", "Dogs travel free.", index=False)
    first, second, third = make_conflict(kb, a, b), make_conflict(kb, a, c), make_conflict(kb, b, c)
    client.force_login(reviewer)
    response = client.post(reverse("conflict_bulk"), {"ids": [first.pk, third.pk], "reason": " "}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "reason is required" in html
    checked = set(re.findall(r'name="ids" value="(\d+)"[^>]*checked', html))
    assert checked == {str(first.pk), str(third.pk)}
    response = client.post(reverse("conflict_bulk"), {"reason": "seasonal"}, **HTMX)
    assert response.status_code == 400 and 'value="seasonal"' in response.content.decode()
    assert not Conflict.objects.exclude(status="open").exists()
    assert second.pk  # untouched, never selected


def test_after_dismiss_the_page_offers_undo_and_the_next_open_conflict(client, kb, pair, reviewer):
    a, b = pair
    c = make_article(kb, "c", "Dogs travel free.", index=False)
    conflict = make_conflict(kb, a, b, times_cited=3)
    following = make_conflict(kb, a, c, times_cited=1)
    client.force_login(reviewer)
    done = client.post(reverse("conflict_dismiss", args=[conflict.pk]), {"reason": "on purpose"}, **HTMX)
    assert done["HX-Redirect"] == reverse("conflict_detail", args=[conflict.pk]) + "?done=dismissed"
    page = client.get(done["HX-Redirect"])
    html = page.content.decode()
    assert page.context["next_conflict"].pk == following.pk
    assert 'class="just-done' in html and ">Undo</button>" in html
    assert f'href="{reverse("conflict_detail", args=[following.pk])}"' in html
    undo = client.post(reverse("conflict_reopen", args=[conflict.pk]), {"note": "Undone right after the dismissed."}, **HTMX)
    assert undo.status_code == 200
    conflict.refresh_from_db()
    assert conflict.status == "open"
    assert ConflictActivity.objects.filter(conflict=conflict, kind="reopened", actor=reviewer).count() == 1
    # a viewer never sees the undo
    viewer = make_user("vic", kb, "viewer")
    conflict_dismiss(conflict=conflict, reason="again")
    client.force_login(viewer)
    assert ">Undo</button>" not in client.get(done["HX-Redirect"]).content.decode()


def test_error_pages_are_styled_inside_the_layout(client, kb, other_kb, reviewer):
    foreign = make_conflict(other_kb, make_article(other_kb, "x", "x.", index=False), make_article(other_kb, "y", "y.", index=False))
    client.force_login(reviewer)
    missing = client.get(reverse("conflict_detail", args=[foreign.pk]))
    assert missing.status_code == 404
    assert 'class="topbar"' in missing.content.decode() and "css/console.css" in missing.content.decode()
    make_user("vic", kb, "viewer")
    client.force_login(make_user("vera", kb, "viewer"))
    refused = client.post(reverse("conflict_bulk"), {"ids": [], "reason": "x"})
    assert refused.status_code == 403
    assert 'class="topbar"' in refused.content.decode() and "needs the reviewer role" in refused.content.decode()
    from django.views.defaults import server_error

    crashed = server_error(RequestFactory().get("/"))
    assert crashed.status_code == 500 and b'class="topbar"' in crashed.content and b"saved completely or not at all" in crashed.content


def test_viewers_see_a_read_only_notice_and_reviewers_do_not(client, kb, reviewer):
    client.force_login(make_user("vic", kb, "viewer"))
    assert "Read-only: you are a viewer" in client.get(reverse("conflict_queue")).content.decode()
    client.force_login(reviewer)
    assert "Read-only" not in client.get(reverse("conflict_queue")).content.decode()


def test_article_markdown_is_rendered_and_sanitised_and_refs_become_titles(client, kb, pair, reviewer):
    a, b = pair
    conflict = make_conflict(kb, a, b, explanation="faq-car-2025 and faq-car-2026 disagree on the car fare.",
                             snippets=("costs", "A car ticket costs €32 one way."))
    client.force_login(reviewer)
    html = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    bodies = " ".join(part.split("</div>", 1)[0] for part in html.split('<div class="body markdown">')[1:])
    assert "<strong>€25</strong>" in bodies and "**" not in bodies
    assert "<script>" not in bodies and "&lt;script&gt;alert(1)&lt;/script&gt;" in bodies
    assert "javascript:" not in html.replace("[site](javascript:alert(2))", "")  # only the editor's raw text has it
    assert "<mark>A car ticket costs €32 one way.</mark>" in bodies
    assert "“Car fares 2025” and “Car fares 2026” disagree" in html
    queue = client.get(reverse("conflict_queue")).content.decode()
    assert "“Car fares 2025” and “Car fares 2026” disagree" in queue
    filtered = client.get(reverse("conflict_queue"), {"article": a.pk}).content.decode()
    assert "article: Car fares 2025" in filtered
    article_page = client.get(reverse("article_detail", args=[a.pk])).content.decode()
    assert "<strong>€25</strong>" in article_page and " · v1 · " in article_page


def test_a_stale_edit_names_version_numbers_not_database_ids(client, kb, pair, reviewer):
    a, _ = pair
    opened = a.current_version_id
    article_edit(article=a, expected_version_id=opened, body="A car ticket costs €28 one way.")
    client.force_login(reviewer)
    response = client.post(reverse("article_edit", args=[a.pk]),
                           {"title": "Car fares 2025", "body": "Another text.", "expected_version_id": opened}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 409 and "you edited v1, the current one is v2" in html
    assert "version id" not in html


def test_dashboard_chart_has_values_and_today_and_the_favicon_resolves(client, kb, pair, reviewer):
    a, b = pair
    make_conflict(kb, a, b)
    client.force_login(reviewer)
    html = client.get(reverse("home")).content.decode()
    assert '<text x="' in html and 'class="value">1</text>' in html
    assert 'class="today"' in html and ">today</text>" in html
    assert 'rel="icon"' in html
    favicon = client.get("/favicon.ico")
    assert favicon.status_code == 301 and favicon["Location"].endswith("favicon.svg")


def test_dashboard_date_labels_never_overlap_today(client, kb, reviewer):
    """Issue 29 (11): "02 Dec" drawn over "today" — every label's span (10px text, ~6px a character) clears the next."""
    from conflicts.views.display import LABEL_CHAR_WIDTH

    client.force_login(reviewer)
    html = client.get(reverse("home")).content.decode()
    svg = html[html.index('<svg class="chart"'):html.index("</svg>")]
    spans = []
    for x, anchor, text in re.findall(r'<text x="([\d.]+)" y="[^"]*" text-anchor="(\w+)" class="[\w-]*label">([^<]+)</text>',
                                      svg):
        width = len(text) * LABEL_CHAR_WIDTH
        start = float(x) - (width / 2 if anchor == "middle" else width)
        spans.append((start, start + width, text))
    assert len(spans) >= 4 and spans[-1][2] == "today" and spans[0][0] >= 0
    for (_, end, text), (start, _, following) in itertools.pairwise(spans):
        assert end <= start, f"{text!r} overlaps {following!r}: {spans}"


def test_the_queue_remembers_its_filters_and_sort_and_the_conflict_page_follows_them(client, kb, pair, reviewer):
    """Also expected (issue 29): filters and sort survive leaving the queue (the menu's bare link, a conflict's
    back link), the next open conflict follows the queue's sort, and the filters can be cleared."""
    a, b = pair
    c = make_article(kb, "c", "Dogs travel free.", index=False)
    seen_most = make_conflict(kb, a, c, times_seen=9)
    newest = make_conflict(kb, a, b, times_seen=1)
    client.force_login(reviewer)
    assert client.get(reverse("conflict_queue")).status_code == 200  # nothing remembered yet: no redirect
    html = client.get(reverse("conflict_queue"), {"q": "car", "sort": "seen", "type": "price"}).content.decode()
    assert "Clear filters" in html

    back = client.get(reverse("conflict_queue"))  # the menu's link
    assert back.status_code == 302
    assert back["Location"].startswith("/conflicts/?") and "q=car" in back["Location"]
    assert "sort=seen" in back["Location"] and "type=price" in back["Location"]

    page = client.get(reverse("conflict_detail", args=[newest.pk])).content.decode()
    back_link = re.search(r'<a href="([^"]+)" data-shortcut="back">', page).group(1).replace("&amp;", "&")
    assert "sort=seen" in back_link and "q=car" in back_link and "status=open" in back_link
    assert client.get(reverse("conflict_detail", args=[newest.pk])).context["next_conflict"] == seen_most

    # The tab is not a filter: the menu opens on Open with the filters; the back button gets the URL it had.
    client.get(reverse("conflict_queue"), {"status": "dismissed", "sort": "seen"})
    bare = client.get(reverse("conflict_queue"))
    assert "sort=seen" in bare["Location"] and "status" not in bare["Location"]
    restored = client.get(reverse("conflict_queue"), HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert restored.status_code == 200 and restored.context["filters"]["sort"] == "impact"

    clear = client.get(reverse("conflict_queue"), {"status": "open", "sort": "impact"})
    assert clear.status_code == 200 and "Clear filters" not in clear.content.decode()
    assert client.get(reverse("conflict_queue")).status_code == 200  # forgotten


def test_snoozing_offers_the_next_open_conflict(client, kb, pair, reviewer):
    a, b = pair
    c = make_article(kb, "c", "Dogs travel free.", index=False)
    first, second = make_conflict(kb, a, b), make_conflict(kb, a, c)
    client.force_login(reviewer)
    html = client.post(reverse("conflict_snooze", args=[first.pk]), {"more_sightings": "3"}, **HTMX).content.decode()
    assert "Snoozed: it leaves the Open queue" in html
    assert f'href="/conflicts/{second.pk}/">Next open conflict' in html


def test_the_next_open_conflict_is_never_a_snoozed_one(client, kb, pair, reviewer):
    a, b = pair
    c = make_article(kb, "c", "Dogs travel free.", index=False)
    d = make_article(kb, "d", "Dogs travel for 5 euros.", index=False)
    # The snoozed one is the newest: with equal impact the queue would put it first.
    first, waiting, snoozed = make_conflict(kb, a, b), make_conflict(kb, a, d), make_conflict(kb, a, c)
    client.force_login(reviewer)
    client.post(reverse("conflict_snooze", args=[snoozed.pk]), {"more_sightings": "3"}, **HTMX)
    html = client.post(reverse("conflict_snooze", args=[first.pk]), {"more_sightings": "3"}, **HTMX).content.decode()
    assert f'href="/conflicts/{waiting.pk}/">Next open conflict' in html
    assert f'href="/conflicts/{snoozed.pk}/">Next open conflict' not in html


def test_every_page_title_names_the_page(client, kb, pair, reviewer):
    a, b = pair
    conflict = make_conflict(kb, a, b)
    ops = make_user("otto", kb, "ops")
    client.force_login(ops)
    expected = {
        reverse("home"): "Dashboard", reverse("conflict_queue"): "Conflicts · Open",
        reverse("conflict_queue") + "?status=dismissed": "Conflicts · Dismissed",
        reverse("conflict_detail", args=[conflict.pk]): f"Conflict #{conflict.pk}: Car fares 2025 vs Car fares 2026",
        reverse("article_list"): "Articles", reverse("article_detail", args=[a.pk]): "Car fares 2025 · Articles",
        reverse("rule_list"): "Rules", reverse("source_list"): "Sources", reverse("drift_list"): "Source changes",
        reverse("answer_playground"): "Answer playground", reverse("answer_policy"): "Answer policy",
        reverse("ops_home"): "Ops", reverse("ops_notifications"): "Notifications · Ops",
        reverse("notification_preferences"): "My notifications",
    }
    for url, title in expected.items():
        html = client.get(url).content.decode()
        assert re.search(r"<title>(.*?)</title>", html, re.S).group(1).strip() == f"{title} · kbreview", url


FORM_BLOCK = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S)


def test_every_htmx_control_on_every_screen_shows_progress_and_disables_what_it_names(client, kb, pair):
    """Also expected (issue 29): every HTMX action on every screen shows the progress bar and disables its
    control; a form's 'find button[type=submit]' finds one, and no control inside it inherits a selector that
    finds nothing from where it sits (htmx warned "returned no matches" on the conflict page)."""
    from articles.sources import source_create

    a, b = pair
    conflict = make_conflict(kb, a, b)
    source = source_create(knowledge_base=kb, name="Policies", kind="upload")
    client.force_login(make_user("otto", kb, "ops"))
    pages = [reverse(name) for name in ("home", "conflict_queue", "article_list", "rule_list", "source_list",
                                        "drift_list", "answer_playground", "answer_policy", "ops_home",
                                        "ops_notifications", "notification_preferences")]
    pages += [reverse("conflict_detail", args=[conflict.pk]), reverse("article_detail", args=[a.pk]),
              reverse("source_detail", args=[source.pk])]
    seen, problems = 0, []
    for url in pages:
        html = client.get(url).content.decode()
        for match in HTMX_TAG.finditer(html):
            tag, element = match.group(1), match.group(0)
            seen += 1
            if not ("hx-indicator=" in element and "#progress" in element or "every " in element):
                problems.append(("no progress", url, element))
            if tag in ("form", "a", "button") and "hx-disabled-elt=" not in element:
                problems.append(("nothing disabled", url, element))
        for attributes, inner in FORM_BLOCK.findall(html):
            if 'hx-disabled-elt="find button[type=submit]"' in attributes:
                if 'type="submit"' not in inner:
                    problems.append(("no submit button to find", url, attributes))
                nested = [m.group(0) for m in HTMX_TAG.finditer(inner) if "hx-disabled-elt=" not in m.group(0)]
                if nested and 'hx-disinherit="hx-disabled-elt"' not in attributes:
                    problems.append(("inherits a selector that finds nothing", url, nested))
    assert seen >= 25 and not problems, "\n".join(map(str, problems))
