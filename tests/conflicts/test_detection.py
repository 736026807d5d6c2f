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


@pytest.mark.django_db
def test_a_turns_check_embeds_nothing_for_indexed_articles(kb, inline_detection, monkeypatch):
    """The index sync stored the claim vectors of each version; a worker that has seen none of these texts
    reads them instead of embedding. Only a version without stored vectors (never indexed) is embedded."""
    from articles.indexing import articles_reindex
    from conflicts.services.detection import detector
    from tests.factories import make_article

    indexed = [make_article(kb, "faq-day-pass", "A day pass for the climbing wall costs €12.\n\nShoes can be hired "
                            "at the desk.", index=False),
               make_article(kb, "web-prices", "Prices\n\nA day pass for the climbing wall costs €15. Chalk is sold "
                            "at the desk.", index=False)]
    articles_reindex(article_ids=[article.pk for article in indexed])  # an index sync, as after an import
    unindexed = make_article(kb, "faq-lockers", "Lockers take a €1 coin, returned when you open them.", index=False)
    real_embed = detector.embed_texts
    embedded: list[list[str]] = []
    monkeypatch.setattr(detector, "embed_texts", lambda texts: embedded.append(list(texts)) or real_embed(texts))
    detector.claim_vectors.cache_clear()  # a fresh worker: no claim vectors in memory
    try:
        run = turn_detect(turn_id=report(kb, "t-1", refs=("faq-day-pass", "web-prices")).pk)
        assert run.outcome == DetectionOutcome.OK and run.conflicts_found == 1
        assert embedded == []
        turn_detect(turn_id=report(kb, "t-2", refs=("faq-day-pass", "faq-lockers")).pk)
        version = unindexed.current_version
        assert embedded == [detector.claim_texts_of(version.title, version.body)]
    finally:
        detector.claim_vectors.cache_clear()  # later tests get the real encoder again


# --- what recording costs: set-based, so the queries do not grow with the findings -----------------


def _record_counting(turn, findings):
    """conflicts_record in the check's transaction (as _record calls it), and the queries it took."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from conflicts.models import ArticleUsage
    from conflicts.services.detection import conflicts_record

    usages = {u.article.external_ref: u for u in ArticleUsage.objects.filter(turn=turn).select_related("article")}
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        conflicts_record(turn=turn, findings=findings, usages=usages)
    return len(queries.captured_queries)


@pytest.mark.django_db
def test_recording_findings_takes_the_same_few_queries_for_one_pair_or_ten(kb, articles, settings):
    """What a check found (plain data from the detector) is recorded in a fixed number of queries."""
    from itertools import combinations

    from agents.types import ConflictFinding, pair_key
    from conflicts.models import ConflictActivity, ConflictOccurrence, NotificationSettings, SuggestionJob

    settings.DETECTION_DISPATCH = "celery"  # queued, never run: the test records by hand
    NotificationSettings.objects.create(knowledge_base=kb, min_seen=100, min_cited=100)  # no announcement here
    refs = [a.external_ref for a in articles[:5]]

    def found(pairs):
        return [ConflictFinding(refs=pair_key(a, b), type="price", explanation=f"{a} and {b} disagree",
                                snippets={a: f"{a} says so", b: f"{b} says otherwise"}) for a, b in pairs]

    one, ten = found([refs[:2]]), found(combinations(refs, 2))
    # Each count includes the savepoint pair standing for the check's transaction inside the test's own.
    # New conflicts: the pairs read and locked, new ones, their occurrences and OPENED activities inserted, the
    # counts written, the threshold settings read, the suggestions' versions read, their jobs looked up and queued.
    new_one = _record_counting(report(kb, "t-1", refs), one)
    new_ten = _record_counting(report(kb, "t-2", refs), ten)
    assert new_one <= new_ten <= 13
    assert ConflictActivity.objects.filter(kind="opened").count() == 10 and SuggestionJob.objects.count() == 10
    # Known conflicts: one more sighting each (suggestions still pending: looked up, not queued again).
    known_one = _record_counting(report(kb, "t-3", refs), one)
    known_ten = _record_counting(report(kb, "t-4", refs), ten)
    assert known_one == known_ten <= 8
    first = Conflict.objects.get(article_low__external_ref=refs[0], article_high__external_ref=refs[1])
    assert first.times_seen == 4 and first.snippet_for(articles[0].pk) == f"{refs[0]} says so"
    assert ConflictOccurrence.objects.count() == 1 + 10 + 1 + 10
    assert SuggestionJob.objects.count() == 10


@pytest.mark.django_db
def test_turns_retrieving_the_same_set_are_checked_once_and_each_counted(kb, fare_articles, inline_detection,
                                                                        monkeypatch):
    from agents import claims
    from conflicts.models import ConflictOccurrence

    checked = []
    real = claims.detect_claim_conflicts
    monkeypatch.setattr(claims, "detect_claim_conflicts", lambda **kw: checked.append(kw["articles"]) or real(**kw))
    runs = [turn_detect(turn_id=report(kb, f"t-{n}").pk) for n in range(3)]
    assert len(checked) == 1
    assert [run.conflicts_found for run in runs] == [1, 1, 1]
    assert sorted(ConflictOccurrence.objects.values_list("turn_id", flat=True)) == sorted(run.turn_id for run in runs)
    assert Conflict.objects.get().times_seen == 3


@pytest.mark.django_db
def test_a_turn_without_findings_takes_five_queries(kb, fare_articles, inline_detection, django_assert_max_num_queries):
    turn = report(kb, "t-1", ("faq-pets", "web-fares"))
    # claim, read the run and the texts, hold, save; + the stored claim vectors of versions this process has
    # not looked up yet (once per version); + the savepoint pair standing for the transaction in the test's own
    with django_assert_max_num_queries(5 + 1 + 2):
        run = turn_detect(turn_id=turn.pk)
    assert run.outcome == DetectionOutcome.OK and run.conflicts_found == 0


@pytest.fixture
def queued_claims_check(settings):
    """Turns stay queued until the test checks them (by hand) with the claims detector and no LLM."""
    settings.DETECTION_DISPATCH = "celery"
    settings.DETECTION_DETECTOR = "claims"
    settings.LLM = {**settings.LLM, "base_url": None}


@pytest.mark.django_db
def test_a_check_whose_claim_was_taken_over_meanwhile_records_nothing(kb, fare_articles, queued_claims_check, monkeypatch):
    import datetime as dt

    from django.utils import timezone

    from conflicts.models import ConflictOccurrence, DetectionRun
    from conflicts.services.detection import judging

    turn = report(kb, "t-1")
    real = judging._article_texts

    def read_then_lose_the_claim(**kwargs):
        # Our claim outlived its expiry and another worker took the check over.
        DetectionRun.objects.filter(turn=turn).update(claimed_at=timezone.now() + dt.timedelta(seconds=1))
        return real(**kwargs)

    monkeypatch.setattr(judging, "_article_texts", read_then_lose_the_claim)
    run = turn_detect(turn_id=turn.pk)
    assert run.outcome == DetectionOutcome.QUEUED
    assert not Conflict.objects.exists() and not ConflictOccurrence.objects.exists()


@pytest.mark.django_db
def test_a_check_locks_its_run_with_the_outcome_write_before_recording_what_it_found(kb, fare_articles, queued_claims_check):
    """The conditional UPDATE of the outcome checks the claim and locks the run: no separate locking read."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    turn = report(kb, "t-1")
    with CaptureQueriesContext(connection) as queries:
        run = turn_detect(turn_id=turn.pk)
    assert run.outcome == DetectionOutcome.OK and Conflict.objects.get().times_seen == 1
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [s for s in statements if s.startswith("SELECT") and "FOR UPDATE" in s and '"conflicts_detectionrun"' in s]
    outcome_write = next(i for i, s in enumerate(statements)
                         if s.startswith('UPDATE "conflicts_detectionrun"') and "'ok'" in s)
    occurrence_insert = next(i for i, s in enumerate(statements) if s.startswith('INSERT INTO "conflicts_conflictoccurrence"'))
    assert outcome_write < occurrence_insert


@pytest.mark.django_db
def test_statements_judged_consistent_are_not_asked_about_again_in_this_knowledge_base(kb, other_kb, llm_detection):
    from articles.models import ArticleVersion
    from conflicts.models import ClaimPairVerdict
    from tests.factories import make_article

    hours = "The ticket office opens at 8 am. Bikes can be hired at the pier."
    late = "The ticket office opens at 8 am on weekdays. Bikes can be hired at the pier until 5 pm."
    for base in (kb, other_kb):
        make_article(base, "faq-hours", hours, title="Opening hours", index=False)
        make_article(base, "web-hours", late, index=False)
        # A copy of faq-hours under another ref: the same title and text.
        make_article(base, "pdf-hours", hours, title="Opening hours", index=False)
    llm_detection.push(answer(verdicts(verdict("faq-hours", "web-hours", conflict=False))))
    first = turn_detect(turn_id=report(kb, "t-1", refs=("faq-hours", "web-hours")).pk)
    assert first.llm_calls == 1 and first.known_claim_pairs == 0
    stored = set(ClaimPairVerdict.objects.filter(knowledge_base=kb).values_list("key", flat=True))
    assert stored and not ClaimPairVerdict.objects.filter(knowledge_base=other_kb).exists()

    # Another pair of articles stating the same statements: its "no conflict" comes from those verdicts.
    second = turn_detect(turn_id=report(kb, "t-2", refs=("pdf-hours", "web-hours")).pk)
    assert second.outcome == DetectionOutcome.OK and second.llm_calls == 0 and second.known_claim_pairs == 1
    assert len(llm_detection.requests) == 1
    pdf, web = (ArticleVersion.objects.get(article__knowledge_base=kb, article__external_ref=ref) for ref in ("pdf-hours", "web-hours"))
    verdict_row = PairVerdict.objects.get(version_low_id=min(pdf.pk, web.pk), version_high_id=max(pdf.pk, web.pk))
    assert not verdict_row.is_conflict and verdict_row.detector == "llm"

    # Verdicts belong to their knowledge base: another business's same texts are asked about.
    llm_detection.push(answer(verdicts(verdict("pdf-hours", "web-hours", conflict=False))))
    elsewhere = turn_detect(turn_id=report(other_kb, "t-3", refs=("pdf-hours", "web-hours")).pk)
    assert elsewhere.llm_calls == 1 and elsewhere.known_claim_pairs == 0


@pytest.mark.django_db
def test_forgetting_verdicts_has_pairs_judged_again_in_that_knowledge_base_only(kb, other_kb, fare_articles, llm_detection):
    import io

    from django.core.management import call_command

    from articles.models import AuditAction, AuditEvent
    from conflicts.models import ClaimPairVerdict
    from tests.factories import make_article

    llm_detection.push(conflict_answer())
    turn_detect(turn_id=report(kb, "t-1").pk)
    # The same model's verdict in another knowledge base, and another model's in this one: both stay.
    elsewhere = [make_article(other_kb, ref, body, index=False).current_version for ref, body in
                 (("faq-fare-old", "A ticket costs €18."), ("web-fares", "A ticket costs €22."))]
    older = make_article(kb, "faq-older", "A ticket costs €16.", index=False).current_version
    for low, high, model in ((*elsewhere, llm_detection.model), (fare_articles["new"].current_version, older, "an-older-model")):
        low, high = sorted((low, high), key=lambda version: version.pk)
        PairVerdict.objects.create(version_low=low, version_high=high, is_conflict=False, detector="llm", model=model)
    ClaimPairVerdict.objects.create(knowledge_base=kb, key="a" * 32, model=llm_detection.model)
    ClaimPairVerdict.objects.create(knowledge_base=kb, key="b" * 32, model="an-older-model")
    ClaimPairVerdict.objects.create(knowledge_base=other_kb, key="a" * 32, model=llm_detection.model)

    out = io.StringIO()
    call_command("forget_verdicts", "--kb", kb.slug, "--model", llm_detection.model, stdout=out)
    assert "forgot 1 pair verdict(s) and 1 claim-pair verdict(s)" in out.getvalue()
    assert set(PairVerdict.objects.values_list("version_low__article__knowledge_base__slug", "model")) == {
        (other_kb.slug, llm_detection.model), (kb.slug, "an-older-model")}
    assert set(ClaimPairVerdict.objects.values_list("knowledge_base__slug", "model")) == {
        (kb.slug, "an-older-model"), (other_kb.slug, llm_detection.model)}
    event = AuditEvent.objects.get(action=AuditAction.VERDICTS_FORGOTTEN)
    assert event.knowledge_base == kb and event.detail["pair_verdicts"] == 1 and event.detail["model"] == llm_detection.model

    llm_detection.push(conflict_answer())  # the same versions again: asked again, counted on the same conflict
    run = turn_detect(turn_id=report(kb, "t-2").pk)
    assert run.llm_calls == 1 and run.cache_hits == 0 and Conflict.objects.get().times_seen == 2


@pytest.mark.django_db
def test_a_check_yields_to_the_foreground_again_before_recording_its_outcome(kb, fare_articles, llm_detection,
                                                                          monkeypatch):
    """The judging takes seconds; by then replies may be searching again (kbreview/foreground.py)."""
    from conflicts.models import DetectionRun
    from conflicts.services.detection import recording

    outcomes_when_yielding = []
    monkeypatch.setattr(recording, "yield_to_foreground", lambda: outcomes_when_yielding.append(
        (DetectionRun.objects.get().outcome, len(llm_detection.requests))) or 0.0)
    llm_detection.push(conflict_answer())
    run = turn_detect(turn_id=report(kb, "t-1").pk)
    assert run.outcome == DetectionOutcome.OK
    assert outcomes_when_yielding == [(DetectionOutcome.QUEUED, 1)]  # after the LLM answered, before the outcome
