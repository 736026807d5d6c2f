"""Review services: regressions (a reviewed pair detected again on other texts comes back to Open),
what a restore would bring back, and the activity rows each writes."""
import pytest

from articles.models import ArticleVersion
from articles.services import article_restore, article_version_restore
from conflicts.models import ActivityKind, Conflict, ConflictActivity
from conflicts.selectors import conflicts_brought_back, dashboard_figures
from conflicts.services import ArticleFix, conflict_dismiss, conflict_resolve
from conflicts.services.turns import RetrievedRef, turn_report
from tests.conflicts.console_support import detected_pair, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def detected(kb, inline_detection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        a, b, _ = detected_pair(kb)
    return Conflict.objects.get(knowledge_base=kb), a, b


def ask_again(kb, a, b, external_id, capture):
    with capture(execute=True):
        turn, _ = turn_report(
            knowledge_base=kb, external_id=external_id, question="How much is a car ticket?",
            retrieved=[RetrievedRef(ref=a.external_ref, rank=1), RetrievedRef(ref=b.external_ref, rank=2)],
        )
    return turn


def resolve_by_editing(conflict, article, body, actor):
    article.refresh_from_db()
    return conflict_resolve(
        conflict=conflict, actor=actor,
        fixes=[ArticleFix(article_id=article.pk, expected_version_id=article.current_version_id, action="edit", body=body)],
    )


def test_restoring_the_old_text_brings_the_resolved_conflict_back_to_open_as_regressed(
    kb, detected, django_capture_on_commit_callbacks
):
    conflict, old, new = detected
    rita = make_user("rita", kb)
    resolve_by_editing(conflict, old, "A standard car ticket costs €32 one way.", rita)
    ask_again(kb, old, new, "after-fix", django_capture_on_commit_callbacks)
    assert Conflict.objects.get(pk=conflict.pk).status == "processed"  # the fix holds: no conflict seen

    old.refresh_from_db()
    first = ArticleVersion.objects.get(article=old, number=1)
    article_version_restore(article=old, version=first, expected_version_id=old.current_version_id, actor=rita)
    turn = ask_again(kb, old, new, "after-restore", django_capture_on_commit_callbacks)

    conflict.refresh_from_db()
    assert (conflict.status, conflict.substatus, conflict.recurred_after_review) == ("open", "regressed", True)
    row = ConflictActivity.objects.filter(conflict=conflict).first()
    assert row.kind == ActivityKind.REGRESSED and (row.from_status, row.to_status) == ("processed", "open")
    assert row.detail["turn"] == turn.external_id
    assert row.detail["changes"] == [
        {"article_id": old.pk, "title": old.title, "version": 3, "reviewed_version": 2}
    ]
    assert "v3 (reviewed v2)" in row.note and "after-restore" in row.note
    figures = dashboard_figures(knowledge_base=kb)
    assert (figures.open_count, figures.regressed_count, figures.regressed_last_7_days) == (1, 1, 1)


def test_a_dismissed_pair_seen_again_on_the_same_texts_stays_dismissed(kb, detected, django_capture_on_commit_callbacks):
    conflict, a, b = detected
    conflict_dismiss(conflict=conflict, reason="Different seasons.")
    ask_again(kb, a, b, "again", django_capture_on_commit_callbacks)
    conflict.refresh_from_db()
    assert (conflict.status, conflict.substatus, conflict.times_seen) == ("dismissed", "", 2)
    assert not ConflictActivity.objects.filter(conflict=conflict, kind=ActivityKind.REGRESSED).exists()


def test_undeleting_the_article_the_review_deleted_regresses_and_resolving_again_clears_the_marker(
    kb, detected, django_capture_on_commit_callbacks
):
    conflict, old, new = detected
    old.refresh_from_db()
    conflict_resolve(conflict=conflict, fixes=[ArticleFix(article_id=old.pk, expected_version_id=old.current_version_id, action="delete")])
    conflict.refresh_from_db()
    side = "low" if conflict.article_low_id == old.pk else "high"
    assert getattr(conflict, f"reviewed_version_{side}_id") is None  # the review deleted it

    old.refresh_from_db()
    assert [c.conflict.pk for c in conflicts_brought_back(knowledge_base=kb, article=old)] == [conflict.pk]
    article_restore(article=old)
    ask_again(kb, old, new, "after-undelete", django_capture_on_commit_callbacks)
    conflict.refresh_from_db()
    assert (conflict.status, conflict.substatus) == ("open", "regressed")
    assert "deleted by the review" in ConflictActivity.objects.filter(conflict=conflict).first().note

    old.refresh_from_db()
    conflict_dismiss(conflict=conflict, reason="Both right for their season.")
    conflict.refresh_from_db()
    assert (conflict.status, conflict.substatus, conflict.recurred_after_review) == ("dismissed", "", False)


def test_what_a_restore_would_bring_back(kb, detected):
    conflict, old, new = detected
    resolve_by_editing(conflict, old, "A standard car ticket costs €32 one way.", None)
    old.refresh_from_db()
    v1, v2 = ArticleVersion.objects.filter(article=old).order_by("number")
    back = conflicts_brought_back(knowledge_base=kb, article=old, version=v1)
    assert [(c.conflict.pk, c.confirmed) for c in back] == [(conflict.pk, True)]
    assert conflicts_brought_back(knowledge_base=kb, article=old, version=v2) == []  # the reviewed text itself
