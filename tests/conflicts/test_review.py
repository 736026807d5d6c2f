"""Review services: regressions (a reviewed pair detected again on other texts comes back to Open),
what a restore would bring back, and the activity rows each writes."""
import pytest

from articles.models import ArticleVersion
from articles.services import article_restore, article_version_restore
from conflicts.models import ActivityKind, Conflict, ConflictActivity
from conflicts.selectors import dashboard_figures
from conflicts.services import ArticleFix, conflict_dismiss, conflict_resolve
from conflicts.services.restores import conflicts_brought_back
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


def test_a_regression_goes_through_the_status_transition_and_changes_the_callers_instance(kb, detected):
    """conflict_regress changes status like every review does: under conflict_transition's check, with its
    timeline row, and on the instance detection holds (it goes on counting on it)."""
    from conflicts.services.review import conflict_regress

    conflict, old, new = detected
    resolve_by_editing(conflict, old, "A standard car ticket costs €32 one way.", None)
    old.refresh_from_db()
    article_version_restore(article=old, version=ArticleVersion.objects.get(article=old, number=1),
                            expected_version_id=old.current_version_id)
    old.refresh_from_db()
    new.refresh_from_db()
    held = Conflict.objects.get(pk=conflict.pk)
    current = {old.pk: old.current_version_id, new.pk: new.current_version_id}
    turn = held.occurrences.first().turn
    assert conflict_regress(conflict=held, turn=turn, version_low_id=current[held.article_low_id],
                            version_high_id=current[held.article_high_id])
    assert (held.status, held.substatus, held.recurred_after_review) == ("open", "regressed", True)
    stored = Conflict.objects.get(pk=conflict.pk)
    assert (stored.status, stored.substatus, stored.recurred_after_review) == ("open", "regressed", True)
    kinds = list(ConflictActivity.objects.filter(conflict=conflict).values_list("kind", "from_status", "to_status"))
    assert kinds[0] == (ActivityKind.REGRESSED, "processed", "open")

    # Seen on those texts again while open: not a regression, and nothing written.
    assert not conflict_regress(conflict=held, turn=turn, version_low_id=current[held.article_low_id],
                                version_high_id=current[held.article_high_id])
    assert ConflictActivity.objects.filter(conflict=conflict).count() == len(kinds)


def test_a_status_change_cannot_be_written_as_a_note(kb, detected):
    from conflicts.services.review import conflict_activity_note

    conflict, _, _ = detected
    for kind in (ActivityKind.RESOLVED, ActivityKind.DISMISSED, ActivityKind.REOPENED, ActivityKind.REGRESSED):
        with pytest.raises(ValueError, match="conflict_transition"):
            conflict_activity_note(conflict=conflict, kind=kind, note="sneaky")
    assert not ConflictActivity.objects.filter(conflict=conflict, note="sneaky").exists()


def test_the_timeline_has_one_writer():
    """ConflictActivity rows are created in conflicts/services/review.py's _activity_write only (read by
    walking the source: a new writer elsewhere fails here)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    allowed = {("conflicts/services/review.py", "_activity_write")}
    writers = set()
    for path in [*root.glob("conflicts/**/*.py"), *root.glob("articles/**/*.py"), *root.glob("kbreview/**/*.py")]:
        if "migrations" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                text = ast.unparse(node) if isinstance(node, ast.Call) else ""
                if text.startswith(("ConflictActivity.objects.create", "ConflictActivity.objects.bulk_create",
                                    "ConflictActivity(")):
                    writers.add((str(path.relative_to(root)), function.name))
    assert writers - allowed == set()
    assert ("conflicts/services/review.py", "_activity_write") in writers
