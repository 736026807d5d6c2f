"""Conflict detail, resolve / dismiss / reopen through the views, stale-edit and concurrent refusals."""
import pytest
from django.urls import reverse

from articles.models import Article, ArticleStatus, ArticleVersion
from articles.selectors import search
from articles.services import article_edit
from conflicts.models import Conflict, ConflictActivity
from conflicts.services import conflict_dismiss
from tests.conflicts.console_support import add_occurrence, detected_pair, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def detected(kb, settings, django_capture_on_commit_callbacks):
    settings.DETECTION_DISPATCH = "inline"
    settings.DETECTION_DETECTOR = "claims"
    with django_capture_on_commit_callbacks(execute=True):
        a, b, turn = detected_pair(kb)
    conflict = Conflict.objects.get(knowledge_base=kb)
    return conflict, a, b, turn


@pytest.fixture
def reviewer(kb):
    return make_user("rita", kb, "reviewer")


def resolve_data(conflict, **changes):
    conflict = Conflict.objects.select_related("article_low__current_version", "article_high__current_version").get(pk=conflict.pk)
    data = {
        "low_action": "keep", "low_body": conflict.article_low.current_version.body,
        "low_expected_version_id": conflict.article_low.current_version_id,
        "high_action": "keep", "high_body": conflict.article_high.current_version.body,
        "high_expected_version_id": conflict.article_high.current_version_id,
        "winner": "", "note": "",
    }
    data.update(changes)
    return data


def test_detail_shows_both_articles_highlighted_diff_occurrences_and_timeline(client, detected, reviewer):
    conflict, a, b, turn = detected
    client.force_login(reviewer)
    response = client.get(reverse("conflict_detail", args=[conflict.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "fare car fares" in html and "fare fares for cars" in html
    assert "<mark>A standard car ticket costs €25 one way.</mark>" in html
    assert "<del>€25</del>" in html and "<ins>€32</ins>" in html  # the two passages compared
    assert "How much is a car ticket?" in html and "A car ticket costs €25. [[fare-2025]]" in html
    assert "reply cited one of them" in html
    assert "disagree about" in html  # the detector's explanation
    assert "Detected" in html  # the activity timeline
    assert 'id="suggestion"' in html
    assert "fare-2025.json" in html  # sources


def test_detail_queries_do_not_grow_with_occurrences(client, kb, reviewer, django_assert_max_num_queries):
    a = make_article(kb, "a", "Tickets cost €10.", index=False)
    b = make_article(kb, "b", "Tickets cost €12.", index=False)
    conflict = make_conflict(kb, a, b)
    for i in range(40):
        add_occurrence(conflict, external_id=f"t{i}", question=f"q{i}", reply=f"r{i}")
    client.force_login(reviewer)
    client.get(reverse("conflict_detail", args=[conflict.pk]))
    with django_assert_max_num_queries(11):  # 10, and one for the answer policy's effect (issue 30)
        response = client.get(reverse("conflict_detail", args=[conflict.pk]))
    assert len(response.context["occurrences"]) == 20


def test_occurrences_filter_by_what_the_reply_cited(client, kb, reviewer):
    a = make_article(kb, "a", "Tickets cost €10.", index=False)
    b = make_article(kb, "b", "Tickets cost €12.", index=False)
    conflict = make_conflict(kb, a, b)
    for i, citation in enumerate(["both", "one", "one", "neither"]):
        add_occurrence(conflict, external_id=f"t{i}-{citation}", question=f"q{i}", reply=f"r{i}", citation=citation)
    client.force_login(reviewer)
    url = reverse("conflict_detail", args=[conflict.pk])
    page = client.get(url)
    counts = {f["name"]: f["count"] for f in page.context["occurrence_filters"]}
    assert counts == {"": 4, "cited": 3, "both": 1, "one": 2, "neither": 1}
    partial = client.get(url, {"cited": "one"}, **HTMX)
    html = partial.content.decode()
    assert "<html" not in html and html.count('class="occurrence"') == 2 and "t1-one" in html and "t0-both" not in html
    assert [o.turn.external_id for o in client.get(url, {"cited": "cited"}).context["occurrences"]] == ["t2-one", "t1-one", "t0-both"]
    assert len(client.get(url, {"cited": "bogus"}).context["occurrences"]) == 4  # unknown filter: all


def test_resolve_by_editing_one_article_reindexes_and_search_shows_the_fix(client, kb, detected, reviewer):
    conflict, a, b, _ = detected
    low_is_a = conflict.article_low_id == a.pk
    side = "low" if low_is_a else "high"
    new_text = "A standard car ticket costs €32 one way since January 2026."
    client.force_login(reviewer)
    response = client.post(
        reverse("conflict_resolve", args=[conflict.pk]),
        resolve_data(conflict, **{f"{side}_action": "edit", f"{side}_body": new_text, "note": "old fare"}),
        **HTMX,
    )
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("conflict_detail", args=[conflict.pk]) + "?done=resolved"
    conflict.refresh_from_db()
    assert conflict.status == "processed" and conflict.reviewed_by == reviewer and conflict.review_note == "old fare"
    assert conflict.winner == ("high" if low_is_a else "low")  # the edited side lost
    a.refresh_from_db()
    assert a.current_version.body == new_text and a.current_version.reason == "resolve"
    assert a.indexed_version_id == a.current_version_id
    activity = ConflictActivity.objects.filter(conflict=conflict, kind="resolved").get()
    assert activity.actor == reviewer and activity.from_status == "open" and activity.to_status == "processed"
    hits = search(knowledge_base=kb, question="car ticket price")
    texts = " ".join(chunk for hit in hits for chunk in hit.chunks)
    assert "since January 2026" in texts and "€25" not in texts
    # ...and it is listed under Resolved now
    resolved = client.get(reverse("conflict_queue"), {"status": "processed"}).context["conflicts"]
    assert [c.pk for c in resolved] == [conflict.pk]


def test_resolve_by_deleting_one_article_is_soft(client, detected, reviewer):
    conflict, a, b, _ = detected
    side = "low" if conflict.article_low_id == a.pk else "high"
    client.force_login(reviewer)
    response = client.post(reverse("conflict_resolve", args=[conflict.pk]), resolve_data(conflict, **{f"{side}_action": "delete"}))
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.status == ArticleStatus.DELETED and a.versions.count() == 1
    assert Conflict.objects.get(pk=conflict.pk).status == "processed"


def test_resolve_with_nothing_done_and_no_note_is_refused(client, detected, reviewer):
    conflict, *_ = detected
    client.force_login(reviewer)
    response = client.post(reverse("conflict_resolve", args=[conflict.pk]), resolve_data(conflict), **HTMX)
    assert response.status_code == 400
    assert "say in a note what was done" in response.content.decode()
    assert "<html" not in response.content.decode()  # only the form partial
    assert Conflict.objects.get(pk=conflict.pk).status == "open"


def test_resolve_with_a_note_only_and_an_explicit_winner(client, detected, reviewer):
    conflict, *_ = detected
    client.force_login(reviewer)
    client.post(reverse("conflict_resolve", args=[conflict.pk]), resolve_data(conflict, note="fixed upstream", winner="neither"))
    conflict.refresh_from_db()
    assert conflict.status == "processed" and conflict.winner == "neither"


def test_stale_edit_is_refused_with_409_and_nothing_written(client, kb, detected, reviewer):
    conflict, a, b, _ = detected
    side = "low" if conflict.article_low_id == a.pk else "high"
    data = resolve_data(conflict, **{f"{side}_action": "edit", f"{side}_body": "A car ticket costs €40."})
    # someone else edits the article after the reviewer opened the page
    article_edit(article=a, expected_version_id=a.current_version_id, body="A car ticket costs €35 now.")
    versions_before = ArticleVersion.objects.filter(article=a).count()
    client.force_login(reviewer)
    response = client.post(reverse("conflict_resolve", args=[conflict.pk]), data, **HTMX)
    assert response.status_code == 409
    assert "changed by someone else" in response.content.decode()
    assert "A car ticket costs €40." in response.content.decode()  # the reviewer's text is kept in the form
    assert ArticleVersion.objects.filter(article=a).count() == versions_before
    assert Article.objects.get(pk=a.pk).current_version.body == "A car ticket costs €35 now."
    conflict.refresh_from_db()
    assert conflict.status == "open" and not ConflictActivity.objects.filter(conflict=conflict, kind="resolved").exists()


def test_concurrent_resolve_second_reviewer_is_told_and_nothing_written(client, kb, detected, reviewer):
    conflict, a, b, _ = detected
    side = "low" if conflict.article_low_id == a.pk else "high"
    data = resolve_data(conflict, **{f"{side}_action": "edit", f"{side}_body": "A car ticket costs €99."})
    other = make_user("olga", kb, "reviewer")
    conflict_dismiss(conflict=conflict, actor=other, reason="intentional")  # the other reviewer wins
    client.force_login(reviewer)
    response = client.post(reverse("conflict_resolve", args=[conflict.pk]), data, **HTMX)
    assert response.status_code == 409
    assert "already dismissed by olga" in response.content.decode()
    assert Article.objects.get(pk=a.pk).current_version.body == "A standard car ticket costs €25 one way."


def test_unchanged_edit_is_a_form_error(client, detected, reviewer):
    conflict, *_ = detected
    client.force_login(reviewer)
    response = client.post(reverse("conflict_resolve", args=[conflict.pk]), resolve_data(conflict, low_action="edit"))
    assert response.status_code == 400 and "The text is unchanged" in response.content.decode()


def test_preview_renders_a_diff_partial_and_writes_nothing(client, detected, reviewer):
    conflict, *_ = detected
    client.force_login(reviewer)
    body = conflict.article_low.current_version.body.replace("one way", "return")
    response = client.post(reverse("conflict_preview", args=[conflict.pk]), {"side": "low", "low_body": body}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<del>one way.</del><ins>return.</ins>" in html
    assert "<html" not in html
    assert ArticleVersion.objects.filter(article_id=conflict.article_low_id).count() == 1


def test_dismiss_requires_reason_then_dismisses_and_reopen_works(client, detected, reviewer):
    conflict, *_ = detected
    client.force_login(reviewer)
    url = reverse("conflict_dismiss", args=[conflict.pk])
    refused = client.post(url, {"reason": " "}, **HTMX)
    assert refused.status_code == 400 and "reason is required" in refused.content.decode()
    assert Conflict.objects.get(pk=conflict.pk).status == "open"
    done = client.post(url, {"reason": "Island and mainland fares differ on purpose"}, **HTMX)
    assert done.status_code == 200 and done["HX-Redirect"]
    conflict.refresh_from_db()
    assert conflict.status == "dismissed" and conflict.review_note.startswith("Island")
    page = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    assert "Island and mainland fares differ on purpose" in page and "Reopen" in page
    again = client.post(url, {"reason": "twice"}, **HTMX)
    assert again.status_code == 409 and "already dismissed" in again.content.decode()
    reopened = client.post(reverse("conflict_reopen", args=[conflict.pk]), {"note": "new prices"})
    assert reopened.status_code == 302
    conflict.refresh_from_db()
    assert conflict.status == "open"
    kinds = list(ConflictActivity.objects.filter(conflict=conflict).order_by("pk").values_list("kind", flat=True))
    assert kinds == ["opened", "dismissed", "reopened"]
    assert client.post(reverse("conflict_reopen", args=[conflict.pk]), {}).status_code == 409


def test_reopen_from_resolved_shows_it_under_open_again(client, kb, reviewer):
    a = make_article(kb, "a", "Tickets cost €10.", index=False)
    b = make_article(kb, "b", "Tickets cost €12.", index=False)
    conflict = make_conflict(kb, a, b, status="processed")
    client.force_login(reviewer)
    response = client.post(reverse("conflict_reopen", args=[conflict.pk]), {"note": "prices changed again"}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"]
    assert [c.pk for c in client.get(reverse("conflict_queue")).context["conflicts"]] == [conflict.pk]
    activity = ConflictActivity.objects.get(conflict=conflict, kind="reopened")
    assert (activity.from_status, activity.to_status, activity.note, activity.actor) == ("processed", "open", "prices changed again", reviewer)


def test_admin_actions_call_the_services_per_conflict(client, kb):
    a, b, c = (make_article(kb, ref, f"Text {ref}.", index=False) for ref in ("a", "b", "c"))
    first, second = make_conflict(kb, a, b), make_conflict(kb, a, c, status="dismissed")
    admin = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    url = reverse("admin:conflicts_conflict_changelist")
    response = client.post(url, {"action": "dismiss_intentional", "_selected_action": [first.pk, second.pk]}, follow=True)
    assert response.status_code == 200
    first.refresh_from_db()
    assert first.status == "dismissed" and first.reviewed_by == admin
    assert ConflictActivity.objects.filter(conflict=first, kind="dismissed", actor=admin).count() == 1
    assert ConflictActivity.objects.filter(conflict=second, kind="dismissed").count() == 0  # refused, not rewritten
    client.post(url, {"action": "reopen", "_selected_action": [first.pk]})
    first.refresh_from_db()
    assert first.status == "open"


def test_detail_says_which_detector_found_the_pair_and_each_occurrence(client, kb, reviewer):
    from conflicts.models import ConflictOccurrence

    first = make_article(kb, "fare-old", "A car ticket costs €25.", index=False)
    second = make_article(kb, "fare-new", "A car ticket costs €32.", index=False)
    conflict = make_conflict(kb, first, second)
    add_occurrence(conflict, external_id="t-1", question="Car fare?", reply="€25")
    add_occurrence(conflict, external_id="t-2", question="Car fare now?", reply="€32")
    ConflictOccurrence.objects.filter(turn__external_id="t-2").update(detector="both")
    Conflict.objects.filter(pk=conflict.pk).update(detector="both")
    client.force_login(reviewer)
    html = client.get(reverse("conflict_detail", args=[conflict.pk])).content.decode()
    assert 'data-detector="both">found by the claim detector and the LLM</span>' in html
    assert html.count('data-detector="claims">found by the claim detector</span>') == 1  # t-1's occurrence
    assert html.count('data-detector="both">') == 2  # the conflict and t-2's occurrence
