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
    from conflicts.services import detection
    from tests.factories import make_article

    from articles.services import articles_reindex

    indexed = [make_article(kb, "faq-day-pass", "A day pass for the climbing wall costs €12.\n\nShoes can be hired "
                            "at the desk.", index=False),
               make_article(kb, "web-prices", "Prices\n\nA day pass for the climbing wall costs €15. Chalk is sold "
                            "at the desk.", index=False)]
    articles_reindex(article_ids=[article.pk for article in indexed])  # an index sync, as after an import
    unindexed = make_article(kb, "faq-lockers", "Lockers take a €1 coin, returned when you open them.", index=False)
    real_embed = detection.embed_texts
    embedded: list[list[str]] = []
    monkeypatch.setattr(detection, "embed_texts", lambda texts: embedded.append(list(texts)) or real_embed(texts))
    detection.claim_vectors.cache_clear()  # a fresh worker: no claim vectors in memory
    try:
        run = turn_detect(turn_id=report(kb, "t-1", refs=("faq-day-pass", "web-prices")).pk)
        assert run.outcome == DetectionOutcome.OK and run.conflicts_found == 1
        assert embedded == []
        turn_detect(turn_id=report(kb, "t-2", refs=("faq-day-pass", "faq-lockers")).pk)
        version = unindexed.current_version
        assert embedded == [detection.claim_texts_of(version.title, version.body)]
    finally:
        detection.claim_vectors.cache_clear()  # later tests get the real encoder again
