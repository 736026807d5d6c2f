"""conflicts.services.disagreements: "the model disagrees with this article" findings, recorded on the article
version a turn retrieved (off unless the knowledge base turns it on), one finding per version with one occurrence
per turn; and how review, MACR and the Observer treat a finding about one article."""
import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.igd.pipeline import MemoryDisagreement
from articles.models import AuditEvent
from articles.services import article_edit
from conflicts.models import ActivityKind, AnswerSettings, Conflict, ConflictActivity, ConflictStatus
from conflicts.services import ArticleFix, ConflictStateError, conflict_dismiss, conflict_reopen, conflict_resolve
from conflicts.services.answering import answer_settings_update
from conflicts.services.disagreements import model_disagreement_record, model_disagreements_recorded
from conflicts.services.induction import staff_decisions
from conflicts.services.review import conflict_resolve_by_deleting_older
from conflicts.services.suggestions import suggestion_enqueue
from conflicts.services.turns import RetrievedRef, turn_report
from tests.factories import make_article

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(kb):
    return make_article(kb, "faq-lake", "The lake ferry leaves at 9 am daily.", title="Lake ferry", index=False)


@pytest.fixture
def other(kb):
    return make_article(kb, "faq-bus", "The bus leaves at noon.", title="Bus", index=False)


def disagreement(ref="faq-lake", memory="10 am", context="9 am"):
    return MemoryDisagreement(ref=ref, passage="The lake ferry leaves at 9 am daily.", context_preview=context,
                              memory_preview=memory, memory_ratio=8.0, user_ratio=0.5)


def a_turn(kb, external_id, *refs, reply=""):
    turn, _ = turn_report(knowledge_base=kb, external_id=external_id, question="When does the lake ferry leave?",
                          retrieved=[RetrievedRef(ref=ref, rank=i) for i, ref in enumerate(refs, 1)],
                          reply=reply or None)
    return turn


@pytest.fixture
def recording(kb):
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)


def test_off_by_default_nothing_is_recorded(kb, lake, other):
    assert not model_disagreements_recorded(knowledge_base=kb)
    turn = a_turn(kb, "t1", "faq-lake", "faq-bus")
    assert model_disagreement_record(turn=turn, disagreement=disagreement()) is None
    assert not Conflict.objects.exists()
    # turned on, then off again: still nothing
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=True)
    answer_settings_update(knowledge_base=kb, default_mode="strict", record_model_disagreements=False)
    assert model_disagreement_record(turn=turn, disagreement=disagreement()) is None
    assert not Conflict.objects.exists()


def test_turning_it_on_is_per_knowledge_base_and_audited(kb, other_kb, django_user_model):
    ops = django_user_model.objects.create_user("otto")
    answer_settings_update(knowledge_base=kb, default_mode="truth", record_model_disagreements=True, user=ops)
    assert model_disagreements_recorded(knowledge_base=kb)
    assert not model_disagreements_recorded(knowledge_base=other_kb)
    event = AuditEvent.objects.get(action="answer.settings")
    assert event.actor == ops and event.knowledge_base == kb
    assert event.detail["before"] == {"default_mode": "strict", "record_model_disagreements": False}
    assert event.detail["after"] == {"default_mode": "truth", "record_model_disagreements": True}
    # leaving the switch out (None) keeps it; saving the same values writes no second audit row
    answer_settings_update(knowledge_base=kb, default_mode="truth", user=ops)
    assert AnswerSettings.objects.get(knowledge_base=kb).record_model_disagreements is True
    assert AuditEvent.objects.filter(action="answer.settings").count() == 1


def test_one_finding_on_the_article_version_with_the_turn_as_occurrence(kb, lake, other, recording):
    turn = a_turn(kb, "t1", "faq-bus", "faq-lake", reply="At 9 am. [[faq-lake]]")
    finding = model_disagreement_record(turn=turn, disagreement=disagreement())
    assert finding.type == "model_disagrees" and finding.status == ConflictStatus.OPEN
    assert finding.article_low == lake and finding.article_high is None and not finding.is_pair
    assert finding.disputed_version_id == lake.current_version_id
    assert finding.explanation == (
        "The answer model, answering closed-book, disagrees with faq-lake: it answered “10 am” where the article says “9 am”."
    )
    assert finding.snippet_low == "The lake ferry leaves at 9 am daily." and finding.detector == "igd"
    assert finding.times_seen == 1 and finding.times_cited == 1  # the reply cited the article
    occurrence = finding.occurrences.get()
    assert occurrence.turn == turn and occurrence.version_low_id == lake.current_version_id
    assert occurrence.version_high is None and occurrence.citation == "one"
    assert (occurrence.context_preview, occurrence.memory_preview) == ("9 am", "10 am")
    opened = ConflictActivity.objects.get(conflict=finding)
    assert opened.kind == ActivityKind.OPENED
    assert opened.detail["question"] == "When does the lake ferry leave?" and opened.detail["memory_preview"] == "10 am"


def test_seen_again_on_the_same_version_it_is_one_finding_with_two_occurrences(kb, lake, recording):
    first = model_disagreement_record(turn=a_turn(kb, "t1", "faq-lake"), disagreement=disagreement())
    second = model_disagreement_record(turn=a_turn(kb, "t2", "faq-lake"), disagreement=disagreement(memory="11 am"))
    assert first.pk == second.pk and Conflict.objects.count() == 1
    assert second.times_seen == 2 and second.times_cited == 0 and second.occurrences.count() == 2
    assert sorted(second.occurrences.values_list("memory_preview", flat=True)) == ["10 am", "11 am"]
    assert ConflictActivity.objects.filter(conflict=second, kind=ActivityKind.OPENED).count() == 1
    # the same turn again (a retry) counts nothing
    again = model_disagreement_record(turn=second.occurrences.first().turn, disagreement=disagreement())
    assert again.times_seen == 2 and again.occurrences.count() == 2


def test_a_new_article_version_is_a_new_finding(kb, lake, recording):
    old = model_disagreement_record(turn=a_turn(kb, "t1", "faq-lake"), disagreement=disagreement())
    article_edit(article=lake, expected_version_id=lake.current_version_id, body="The lake ferry leaves at 10 am daily.")
    lake.refresh_from_db()
    new = model_disagreement_record(turn=a_turn(kb, "t2", "faq-lake"), disagreement=disagreement(memory="11 am", context="10 am"))
    assert new.pk != old.pk and new.disputed_version_id == lake.current_version_id != old.disputed_version_id
    assert Conflict.objects.filter(type="model_disagrees", article_low=lake).count() == 2


def test_an_article_the_turn_did_not_retrieve_records_nothing(kb, lake, other, recording):
    assert model_disagreement_record(turn=a_turn(kb, "t1", "faq-bus"), disagreement=disagreement()) is None
    assert not Conflict.objects.exists()


def test_the_database_allows_exactly_this_kind_to_lack_a_second_article(kb, lake, other):
    now = timezone.now()
    common = {"knowledge_base": kb, "article_low": lake, "first_seen": now, "last_seen": now}
    with pytest.raises(IntegrityError), transaction.atomic():
        Conflict.objects.create(type="price", disputed_version=lake.current_version, **common)  # a pair type, one article
    with pytest.raises(IntegrityError), transaction.atomic():
        Conflict.objects.create(type="model_disagrees", article_high=other, **common)  # a finding with a pair
    with pytest.raises(IntegrityError), transaction.atomic():
        Conflict.objects.create(type="model_disagrees", **common)  # a finding without its version
    Conflict.objects.create(type="model_disagrees", disputed_version=lake.current_version, **common)
    with pytest.raises(IntegrityError), transaction.atomic():
        Conflict.objects.create(type="model_disagrees", disputed_version=lake.current_version, **common)  # twice


def test_review_works_as_for_conflicts_without_sides_or_suggestions(kb, lake, recording, django_user_model):
    rita = django_user_model.objects.create_user("rita")
    finding = model_disagreement_record(turn=a_turn(kb, "t1", "faq-lake"), disagreement=disagreement())
    # MACR judges pairs: nothing is queued for a finding, reopened or not
    assert suggestion_enqueue(conflict_id=finding.pk) is None
    with pytest.raises(ConflictStateError, match="no older article"):
        conflict_resolve_by_deleting_older(conflict=finding, actor=rita, note="")
    with pytest.raises(ConflictStateError, match="no side"):
        conflict_resolve(conflict=finding, fixes=[], actor=rita, note="checked", winner="low")
    dismissed = conflict_dismiss(conflict=finding, actor=rita, reason="The timetable is right; the model is wrong.")
    assert dismissed.status == ConflictStatus.DISMISSED and dismissed.winner == ""
    assert dismissed.reviewed_version_low_id == lake.current_version_id and dismissed.reviewed_version_high_id is None
    reopened = conflict_reopen(conflict=dismissed, actor=rita)
    assert reopened.status == ConflictStatus.OPEN and not reopened.suggestion_jobs.exists()
    resolved = conflict_resolve(
        conflict=reopened, actor=rita, note="The ferry leaves at 10 now.",
        fixes=[ArticleFix(article_id=lake.pk, expected_version_id=lake.current_version_id, action="edit",
                          body="The lake ferry leaves at 10 am daily.")],
    )
    lake.refresh_from_db()
    assert resolved.status == ConflictStatus.PROCESSED and resolved.winner == ""
    assert resolved.reviewed_version_low_id == lake.current_version_id and lake.current_version.number == 2
    kinds = list(ConflictActivity.objects.filter(conflict=finding).order_by("pk").values_list("kind", flat=True))
    assert kinds == ["opened", "dismissed", "reopened", "resolved"]
    # the Observer learns which side of a pair was right: a finding is no demonstration
    assert staff_decisions(knowledge_base=kb) == []
