"""Triage as a team: assign, comment, snooze (by date or sightings), filters mine / unassigned /
snoozed, and bulk assign / snooze / resolve-by-deletion, each through the services with activity rows."""
import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from articles.models import ArticleStatus
from conflicts.models import Conflict, ConflictActivity
from conflicts.services import ConflictStateError, conflict_assign, conflict_snooze
from conflicts.services.turns import RetrievedRef, turn_report
from tests.conflicts.console_support import detected_pair, make_conflict, make_user
from tests.factories import make_article

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def rita(kb):
    return make_user("rita", kb, "reviewer")


def kinds(conflict):
    return list(ConflictActivity.objects.filter(conflict=conflict).order_by("pk").values_list("kind", flat=True))


def queue_ids(client, **params):
    # The Open tab with these filters only (a bare queue URL would bring back the filters last used).
    return [c.pk for c in client.get(reverse("conflict_queue"), {"status": "open", **params}).context["conflicts"]]


def test_assign_and_filter_mine_and_unassigned(client, kb, articles, rita):
    otto = make_user("otto", kb, "ops")
    mine, theirs, nobodys = (make_conflict(kb, articles[i], articles[i + 1]) for i in (0, 2, 4))
    client.force_login(rita)
    response = client.post(reverse("conflict_assign", args=[mine.pk]), {"assignee": rita.pk}, **HTMX)
    assert response.status_code == 200 and "Assigned to rita." in response.content.decode()
    client.post(reverse("conflict_assign", args=[theirs.pk]), {"assignee": otto.pk})
    assert queue_ids(client, assignee="mine") == [mine.pk]
    assert queue_ids(client, assignee="unassigned") == [nobodys.pk]
    assert kinds(mine) == ["opened", "assigned"]
    row = ConflictActivity.objects.filter(conflict=mine, kind="assigned").get()
    assert row.actor == rita and row.detail["assignee"] == "rita"
    client.post(reverse("conflict_assign", args=[mine.pk]), {"assignee": ""})
    assert Conflict.objects.get(pk=mine.pk).assignee is None and kinds(mine)[-1] == "assigned"


def test_only_reviewers_can_be_assigned_and_viewers_cannot_assign(client, kb, articles, rita):
    vic = make_user("vic", kb, "viewer")
    conflict = make_conflict(kb, articles[0], articles[1])
    with pytest.raises(ConflictStateError):
        conflict_assign(conflict=conflict, assignee=vic, actor=rita)
    client.force_login(rita)
    assert client.post(reverse("conflict_assign", args=[conflict.pk]), {"assignee": vic.pk}, **HTMX).status_code == 400
    client.force_login(vic)
    assert client.post(reverse("conflict_assign", args=[conflict.pk]), {"assignee": rita.pk}).status_code == 403
    assert client.post(reverse("conflict_comment", args=[conflict.pk]), {"text": "hi"}).status_code == 403
    assert kinds(conflict) == ["opened"]


def test_another_knowledge_bases_conflict_is_404_for_every_triage_action(client, kb, other_kb, rita):
    theirs = make_conflict(other_kb, make_article(other_kb, "x", "x.", index=False), make_article(other_kb, "y", "y.", index=False))
    client.force_login(rita)
    for name, data in (("conflict_assign", {"assignee": rita.pk}), ("conflict_comment", {"text": "x"}),
                       ("conflict_snooze", {"more_sightings": 2}), ("conflict_unsnooze", {})):
        assert client.post(reverse(name, args=[theirs.pk]), data).status_code == 404, name
    assert kinds(theirs) == ["opened"]


def test_comments_go_to_the_activity_timeline(client, kb, articles, rita):
    conflict = make_conflict(kb, articles[0], articles[1])
    client.force_login(rita)
    empty = client.post(reverse("conflict_comment", args=[conflict.pk]), {"text": "  "}, **HTMX)
    assert empty.status_code == 400 and "Write something to comment." in empty.content.decode()
    response = client.post(reverse("conflict_comment", args=[conflict.pk]), {"text": "Asked the fares team <b>today</b>."}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "Asked the fares team &lt;b&gt;today&lt;/b&gt;." in html and 'class="activity-commented"' in html
    assert ConflictActivity.objects.get(conflict=conflict, kind="commented").actor == rita


def test_snooze_until_a_date_hides_it_from_open_until_then_and_can_end_by_hand(client, kb, articles, rita):
    conflict = make_conflict(kb, articles[0], articles[1])
    other = make_conflict(kb, articles[2], articles[3])
    client.force_login(rita)
    past = client.post(reverse("conflict_snooze", args=[conflict.pk]), {"until": "2020-01-01"}, **HTMX)
    assert past.status_code == 400 and "Pick a date after today." in past.content.decode()
    neither = client.post(reverse("conflict_snooze", args=[conflict.pk]), {}, **HTMX)
    assert neither.status_code == 400 and "Snooze until a date or for a number of sightings." in neither.content.decode()
    tomorrow = timezone.localdate() + dt.timedelta(days=1)
    assert client.post(reverse("conflict_snooze", args=[conflict.pk]), {"until": tomorrow.isoformat()}, **HTMX).status_code == 200
    assert queue_ids(client) == [other.pk]
    assert queue_ids(client, snoozed="1") == [conflict.pk]
    assert client.get(reverse("conflict_queue"), {"status": "open"}).context["tabs"][0]["count"] == 1
    Conflict.objects.filter(pk=conflict.pk).update(snoozed_until=timezone.now() - dt.timedelta(minutes=1))
    assert set(queue_ids(client)) == {conflict.pk, other.pk}  # the date passed: back without anyone acting
    conflict_snooze(conflict=conflict, actor=rita, until=timezone.now() + dt.timedelta(days=3))
    client.post(reverse("conflict_unsnooze", args=[conflict.pk]), {})
    assert set(queue_ids(client)) == {conflict.pk, other.pk}
    assert kinds(conflict) == ["opened", "snoozed", "snoozed", "unsnoozed"]


def test_snooze_for_more_sightings_wakes_when_detection_has_seen_it_that_often(
    client, kb, rita, inline_detection, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        a, b, _ = detected_pair(kb)
    conflict = Conflict.objects.get(knowledge_base=kb)
    conflict_snooze(conflict=conflict, actor=rita, more_sightings=2)
    for i in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            turn_report(knowledge_base=kb, external_id=f"again-{i}", question="How much is a car ticket?",
                        retrieved=[RetrievedRef(ref=a.external_ref, rank=1), RetrievedRef(ref=b.external_ref, rank=2)])
        conflict.refresh_from_db()
        assert conflict.snoozed_at(timezone.now()) == (i == 0)
    assert kinds(conflict)[-2:] == ["snoozed", "unsnoozed"]
    assert "seen 3 times" in ConflictActivity.objects.filter(conflict=conflict, kind="unsnoozed").get().note


def test_bulk_assign_snooze_and_resolve_by_deleting_the_older_article(client, kb, articles, rita):
    first, second, third = (make_conflict(kb, articles[i], articles[i + 1]) for i in (0, 2, 4))
    client.force_login(rita)
    url = reverse("conflict_bulk")
    response = client.post(url, {"ids": [first.pk, second.pk], "action": "assign", "assignee": rita.pk}, **HTMX)
    assert response.status_code == 200 and "Assigned 2 conflict(s)." in response.content.decode()
    assert [kinds(c)[-1] for c in (first, second)] == ["assigned", "assigned"]
    refused = client.post(url, {"ids": [third.pk], "action": "snooze"}, **HTMX)
    assert refused.status_code == 400 and f'value="{third.pk}" aria-label="Select conflict {third.pk}" checked' in refused.content.decode()
    response = client.post(url, {"ids": [third.pk], "action": "snooze", "more_sightings": "5"}, **HTMX)
    assert "Snoozed 1 conflict(s)." in response.content.decode() and kinds(third)[-1] == "snoozed"
    response = client.post(url, {"ids": [first.pk, second.pk], "action": "delete_older", "reason": "old pages"}, **HTMX)
    assert "Resolved 2 conflict(s)." in response.content.decode()
    for conflict in (first, second):
        conflict.refresh_from_db()
        assert conflict.status == "processed" and kinds(conflict)[-1] == "resolved" and conflict.review_note == "old pages"
        deleted = [a for a in (conflict.article_low, conflict.article_high) if a.status == ArticleStatus.DELETED]
        assert len(deleted) == 1
