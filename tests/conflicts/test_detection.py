"""Detection of a turn through the LLM detector against the scripted server: verdicts, cache, fail-open."""
import pytest

from conflicts.models import Conflict, DetectionOutcome, PairVerdict
from conflicts.services import turn_detect
from conflicts.services.turns import RetrievedRef, turn_report
from tests.support.scripted_llm import answer, http_error, invalid_json, slow, verdict, verdicts


def report(kb, external_id, refs=("faq-fare-old", "web-fares")):
    turn, _ = turn_report(
        knowledge_base=kb,
        external_id=external_id,
        question="How much is a ticket?",
        retrieved=[RetrievedRef(ref=r, rank=i) for i, r in enumerate(refs, 1)],
    )
    return turn


def conflict_answer():
    return answer(verdicts(verdict(
        "faq-fare-old", "web-fares", type="price", explanation="€18 against €22",
        snippets={"faq-fare-old": "costs €18", "web-fares": "costs €22"},
    )))


@pytest.mark.django_db
def test_llm_verdict_creates_conflict_and_is_cached_by_versions(kb, fare_articles, llm_detection):
    llm_detection.push(conflict_answer())
    run = turn_detect(turn_id=report(kb, "t-1").pk)
    assert run.outcome == DetectionOutcome.OK and run.llm_calls == 1
    conflict = Conflict.objects.get()
    assert conflict.snippet_for(fare_articles["old"].pk) == "costs €18"
    assert PairVerdict.objects.filter(is_conflict=True).count() == 1

    # same versions again: the cache answers, nothing is sent to the LLM
    run = turn_detect(turn_id=report(kb, "t-2").pk)
    assert run.outcome == DetectionOutcome.OK and run.llm_calls == 0 and run.cache_hits == 1
    assert len(llm_detection.requests) == 1
    assert Conflict.objects.get().times_seen == 2


@pytest.mark.django_db
def test_a_new_version_is_judged_again(kb, fare_articles, llm_detection):
    from articles.services import article_edit

    llm_detection.push(conflict_answer(), answer(verdicts(verdict("faq-fare-old", "web-fares", conflict=False))))
    turn_detect(turn_id=report(kb, "t-1").pk)
    old = fare_articles["old"]
    article_edit(article=old, expected_version_id=old.current_version_id, body="A single adult ticket costs €22.")
    run = turn_detect(turn_id=report(kb, "t-2").pk)
    assert run.llm_calls == 1 and run.cache_hits == 0
    assert PairVerdict.objects.count() == 2


@pytest.mark.parametrize(
    "behaviour, outcome, reason",
    [
        (http_error(500), DetectionOutcome.ERROR, "http_error"),
        (invalid_json(), DetectionOutcome.ERROR, "invalid_json"),
        (slow(5.0), DetectionOutcome.TIMEOUT, "no verdict within"),
    ],
)
@pytest.mark.django_db
def test_faults_fail_open_with_the_reason(kb, fare_articles, llm_detection, behaviour, outcome, reason):
    llm_detection.push(behaviour)
    turn = report(kb, "t-1")
    run = turn_detect(turn_id=turn.pk)
    assert run.outcome == outcome
    assert reason in run.reason and "no conflicts" in run.reason
    assert not Conflict.objects.exists()
    assert not PairVerdict.objects.exists()  # nothing cached from a failed call
    # finished runs are not re-run (idempotent)
    assert turn_detect(turn_id=turn.pk).outcome == outcome


@pytest.mark.django_db
def test_invented_refs_are_dropped_and_counted(kb, fare_articles, llm_detection):
    llm_detection.push(answer(verdicts(verdict("faq-fare-old", "kb-invented", snippets={}))))
    run = turn_detect(turn_id=report(kb, "t-1").pk)
    assert run.outcome == DetectionOutcome.OK
    assert run.dropped_invented_refs >= 1
    assert not Conflict.objects.exists()


@pytest.mark.django_db
def test_more_than_twenty_articles_are_capped(kb, llm_detection, settings):
    from tests.factories import make_article

    settings.DETECTION_TIMEOUT_S = 30.0  # this test is about the cap: 22 new articles' claims are embedded first

    refs = [make_article(kb, f"faq-{i:02d}", f"Article number {i} about lockers.", index=False).external_ref for i in range(22)]
    llm_detection.push(answer(verdicts()))
    run = turn_detect(turn_id=report(kb, "t-1", refs=refs).pk)
    assert run.outcome == DetectionOutcome.CAPPED
    assert run.articles_checked == 20
    prompt = llm_detection.requests[0]["messages"][-1]["content"]
    assert "faq-19" in prompt and "faq-20" not in prompt and "faq-21" not in prompt


# --- what recording costs: set-based, so the queries do not grow with the findings -----------------


@pytest.fixture
def priced_articles(kb):
    """Five articles each stating another price for the same ticket: every pair of them conflicts."""
    from tests.factories import make_article

    return [make_article(kb, f"fare-{i}", f"A single adult ticket to Inishmara costs €{18 + 4 * i}.", index=False)
            for i in range(5)]


def _detect_counting(turn):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        run = turn_detect(turn_id=turn.pk)
    return run, len(queries.captured_queries)


@pytest.mark.django_db
def test_recording_findings_takes_the_same_few_queries_for_one_pair_or_ten(
    kb, priced_articles, inline_detection, django_assert_max_num_queries
):
    from conflicts.models import ConflictActivity, ConflictOccurrence, NotificationSettings, SuggestionJob

    NotificationSettings.objects.create(knowledge_base=kb, min_seen=100, min_cited=100)  # no announcement here
    refs = [a.external_ref for a in priced_articles]
    one_pair, all_pairs = refs[:2], refs

    # Counted inside the test's transaction, so the check's own transaction is a savepoint pair (2 queries).
    # New conflicts: read the pairs, insert the new ones, their occurrences, activities and suggestion jobs at once.
    run, new_one = _detect_counting(report(kb, "t-1", one_pair))
    assert run.conflicts_found == 1
    turn = report(kb, "t-2", all_pairs)
    with django_assert_max_num_queries(18):
        run = turn_detect(turn_id=turn.pk)
    assert run.conflicts_found == 10 and Conflict.objects.count() == 10
    assert ConflictActivity.objects.filter(kind="opened").count() == 10 and SuggestionJob.objects.count() == 10

    # Known conflicts: one more sighting each, whatever their number.
    run, known_one = _detect_counting(report(kb, "t-3", one_pair))
    turn = report(kb, "t-4", all_pairs)
    with django_assert_max_num_queries(13):
        run = turn_detect(turn_id=turn.pk)
    assert run.conflicts_found == 10
    _, known_ten = _detect_counting(report(kb, "t-5", all_pairs))
    assert known_ten == known_one <= new_one
    counts = dict(Conflict.objects.values_list("article_low__external_ref", "times_seen").filter(article_high__external_ref="fare-1"))
    assert counts == {"fare-0": 5}  # t-1, t-2, t-3, t-4, t-5
    assert ConflictOccurrence.objects.count() == 1 + 10 + 1 + 10 + 10
    assert SuggestionJob.objects.count() == 10  # pending ones are not queued again


@pytest.mark.django_db
def test_a_turn_without_findings_takes_five_queries(kb, fare_articles, inline_detection, django_assert_max_num_queries):
    turn = report(kb, "t-1", ("faq-pets", "web-fares"))
    with django_assert_max_num_queries(5 + 2):  # claim, read the run and the texts, hold, save; + the savepoint pair
        run = turn_detect(turn_id=turn.pk)
    assert run.outcome == DetectionOutcome.OK and run.conflicts_found == 0
