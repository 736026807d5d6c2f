import threading

import pytest
from django.db import connection

from agents.types import ConflictFinding
from articles.models import AuditAction, AuditEvent
from conflicts.models import ArticleUsage, Conflict, ConflictOccurrence, DetectionOutcome, DetectionRun, Turn
from conflicts.services import ReplyAlreadyRecorded, TurnMismatch, UnknownArticleRefs, turn_reply_record, turn_report
from conflicts.services.detection import conflict_record
from conflicts.services.turns import RetrievedRef


def report(kb, external_id="t-1", refs=("faq-fare-old", "web-fares"), reply=None):
    return turn_report(
        knowledge_base=kb,
        external_id=external_id,
        question="How much is a ticket to Inishmara?",
        retrieved=[RetrievedRef(ref=r, rank=i) for i, r in enumerate(refs, 1)],
        reply=reply,
    )


@pytest.mark.django_db
def test_turn_records_retrieved_versions_and_detects_the_conflict(kb, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        turn, created = report(kb)
    assert created
    usages = {u.article.external_ref: u for u in ArticleUsage.objects.filter(turn=turn)}
    assert usages["faq-fare-old"].version_id == fare_articles["old"].current_version_id
    assert usages["faq-fare-old"].rank == 1
    run = Turn.objects.get(pk=turn.pk).detection
    assert run.outcome == DetectionOutcome.OK, run.reason
    conflict = Conflict.objects.get(knowledge_base=kb)
    assert {conflict.article_low_id, conflict.article_high_id} == {fare_articles["old"].pk, fare_articles["new"].pk}
    assert conflict.times_seen == 1 and conflict.type == "price"
    assert ConflictOccurrence.objects.get(conflict=conflict).turn_id == turn.pk


@pytest.mark.django_db
def test_same_external_id_twice_changes_nothing(kb, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first, created = report(kb)
        again, created_again = report(kb)
        with pytest.raises(TurnMismatch) as differs:
            report(kb, refs=("faq-pets",), reply="something else")
    assert created and not created_again
    assert again.pk == first.pk
    assert differs.value.fields == ["retrieved", "reply"]
    assert Turn.objects.count() == 1
    assert ArticleUsage.objects.filter(turn=first).count() == 2
    assert Conflict.objects.get().times_seen == 1


@pytest.mark.django_db
def test_fewer_than_two_articles_is_skipped(kb, fare_articles, inline_detection):
    turn, _ = report(kb, refs=("faq-pets",))
    assert turn.detection.outcome == DetectionOutcome.SKIPPED
    assert "at least 2" in turn.detection.reason


@pytest.mark.django_db
def test_unknown_refs_are_listed_and_nothing_written(kb, fare_articles):
    with pytest.raises(UnknownArticleRefs) as excinfo:
        report(kb, refs=("faq-pets", "nope-1", "nope-2"))
    assert excinfo.value.refs == ["nope-1", "nope-2"]
    assert not Turn.objects.exists()


@pytest.mark.django_db
def test_refs_of_another_knowledge_base_do_not_resolve(kb, other_kb, fare_articles):
    with pytest.raises(UnknownArticleRefs):
        report(other_kb, refs=("faq-fare-old", "web-fares"))


@pytest.mark.django_db
def test_reply_citations_are_parsed_and_marked_on_occurrences(kb, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        turn, _ = report(kb)
    turn_reply_record(turn=turn, reply="It costs €22 [[web-fares]]. Dogs go free [[faq-pets]].")
    cited = set(ArticleUsage.objects.filter(turn=turn, cited=True).values_list("article__external_ref", flat=True))
    assert cited == {"web-fares", "faq-pets"}
    pets = ArticleUsage.objects.get(turn=turn, article__external_ref="faq-pets")
    assert pets.rank is None  # cited without being retrieved
    conflict = Conflict.objects.get()
    assert conflict.times_cited == 1
    assert ConflictOccurrence.objects.get(conflict=conflict).citation == "one"
    # the same reply again changes nothing; a different one is refused unless it says it replaces
    turn_reply_record(turn=turn, reply="It costs €22 [[web-fares]]. Dogs go free [[faq-pets]].")
    with pytest.raises(ReplyAlreadyRecorded):
        turn_reply_record(turn=turn, reply="Another reply [[faq-fare-old]]")
    turn.refresh_from_db()
    assert turn.reply.startswith("It costs €22")
    assert Conflict.objects.get().times_cited == 1
    turn_reply_record(turn=turn, reply="Dogs go free [[faq-pets]].", replaces=True)
    cited = set(ArticleUsage.objects.filter(turn=turn, cited=True).values_list("article__external_ref", flat=True))
    assert cited == {"faq-pets"}
    assert Conflict.objects.get().times_cited == 0
    assert ConflictOccurrence.objects.get().citation == "neither"
    assert AuditEvent.objects.get(action=AuditAction.TURN_REPLY_REPLACED).target_id == str(turn.pk)


@pytest.mark.django_db
def test_a_reply_citing_both_articles_is_recorded_as_both_and_counted_once(
    kb, fare_articles, inline_detection, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        turn, _ = report(kb, reply="€18 [[faq-fare-old]] or €22 [[web-fares]]")
        other, _ = report(kb, external_id="t-2")
    assert ConflictOccurrence.objects.get(turn=turn).citation == "both"
    assert ConflictOccurrence.objects.get(turn=other).citation == "neither"
    assert Conflict.objects.get().times_cited == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_finding_the_same_pair_make_one_conflict(kb, fare_articles, inline_detection):
    turns = [report(kb, external_id=f"t-{i}")[0] for i in range(6)]
    finding = ConflictFinding(refs=("faq-fare-old", "web-fares"), type="price", explanation="€18 vs €22",
                              snippets={"faq-fare-old": "€18", "web-fares": "€22"})
    barrier = threading.Barrier(len(turns))
    errors = []

    def record(turn):
        try:
            usages = {u.article.external_ref: u for u in ArticleUsage.objects.filter(turn=turn).select_related("article")}
            barrier.wait()
            conflict_record(turn=turn, finding=finding, usages=usages, detector="claims")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=record, args=(t,)) for t in turns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conflicts = list(Conflict.objects.filter(knowledge_base=kb))
    assert len(conflicts) >= 1
    # detection also ran inline for each turn; whatever the order, one conflict with one occurrence per turn
    assert len(conflicts) == 1
    assert conflicts[0].times_seen == len(turns)
    assert ConflictOccurrence.objects.filter(conflict=conflicts[0]).count() == len(turns)


@pytest.mark.django_db
def test_deleting_a_knowledge_base_removes_all_it_owns(kb, fare_articles, inline_detection, django_capture_on_commit_callbacks):
    from articles.models import Article, ArticleVersion

    with django_capture_on_commit_callbacks(execute=True):
        report(kb)
    assert Conflict.objects.exists()
    kb.delete()
    assert not Article.objects.exists() and not ArticleVersion.objects.exists()
    assert not Turn.objects.exists() and not Conflict.objects.exists() and not ArticleUsage.objects.exists()


@pytest.mark.django_db
def test_detection_switched_off_records_why(kb, fare_articles, settings):
    settings.DETECTION_DISPATCH = "off"
    turn, _ = report(kb)
    assert turn.detection.outcome == DetectionOutcome.SKIPPED
    assert "switched off" in turn.detection.reason


@pytest.mark.django_db(transaction=True)
def test_a_new_turn_its_usages_and_its_queued_run_are_one_statement_sent_after_commit(kb, fare_articles, settings, monkeypatch):
    """Outside a caller's transaction the turn, its usages and its DetectionRun (the outbox row) are one INSERT
    statement, so no BEGIN/COMMIT round trips; the detection message goes out once that is committed."""
    from django.test.utils import CaptureQueriesContext

    from conflicts.models import DetectionRun
    from conflicts.tasks import detect_turn
    from kbreview import jobs

    settings.DETECTION_DISPATCH = "celery"
    seen_by_another_connection = []

    def sent(task_name, turn_id):  # what enqueue hands the publisher on commit (not run: no worker here)
        other = connection.copy()
        try:
            with other.cursor() as cursor:
                cursor.execute("SELECT outcome FROM conflicts_detectionrun WHERE turn_id = %s", [turn_id])
                seen_by_another_connection.append((task_name, cursor.fetchone()))
        finally:
            other.close()

    monkeypatch.setattr(jobs, "_hand_over", sent)
    with CaptureQueriesContext(connection) as queries:
        turn, created = report(kb)
    assert created
    assert len(queries.captured_queries) == 2, [q["sql"][:60] for q in queries.captured_queries]  # refs, then the insert
    assert seen_by_another_connection == [(detect_turn.name, (DetectionOutcome.QUEUED,))]
    assert turn.detection.outcome == DetectionOutcome.QUEUED and DetectionRun.objects.get(turn=turn).pk == turn.detection.pk
    assert sorted(ArticleUsage.objects.filter(turn=turn).values_list("article__external_ref", "rank", "version_id")) == [
        ("faq-fare-old", 1, fare_articles["old"].current_version_id),
        ("web-fares", 2, fare_articles["new"].current_version_id),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_repeated_report_outside_a_transaction_changes_nothing(kb, fare_articles, settings):
    settings.DETECTION_DISPATCH = "off"
    first, created = report(kb)
    again, created_again = report(kb)
    with pytest.raises(TurnMismatch):
        report(kb, refs=("faq-pets", "web-fares"))
    assert created and not created_again and again.pk == first.pk
    assert Turn.objects.count() == 1 and ArticleUsage.objects.count() == 2
    assert DetectionRun.objects.count() == 1 and first.detection.outcome == DetectionOutcome.SKIPPED


@pytest.mark.django_db
def test_a_duplicate_inside_a_callers_transaction_leaves_that_transaction_usable(kb, fare_articles, settings):
    from django.db import transaction

    settings.DETECTION_DISPATCH = "off"
    with transaction.atomic():
        first, _ = report(kb)
        again, created_again = report(kb)
        assert not created_again and again.pk == first.pk
        assert Turn.objects.filter(knowledge_base=kb).count() == 1  # the caller's transaction still works


@pytest.mark.django_db
def test_an_article_without_a_version_does_not_resolve(kb, fare_articles):
    from articles.models import Article

    Article.objects.filter(knowledge_base=kb, external_ref="web-fares").update(current_version=None)
    with pytest.raises(UnknownArticleRefs) as excinfo:
        report(kb)
    assert excinfo.value.refs == ["web-fares"] and not Turn.objects.exists()
