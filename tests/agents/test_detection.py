"""agents.detection.run_detection: the ≥ 2 / ≤ 20 rule, the verdict cache, and how detectors combine.

The LLM is a real OpenAI-compatible server on loopback. The claim detector is replaced by a stand-in
flagging chosen pairs, so these tests pin down the combination rules, not the claim extraction.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import types

import pytest

from agents.detection import STATUS_CAPPED, STATUS_OK, STATUS_SKIPPED, ClaimChecks, plan_detection, run_detection
from agents.llm import LLMError
from agents.llm_detector import listed_pairs
from agents.types import ArticleText, ConflictFinding, PairJudgement
from tests.support.scripted_llm import answer, http_error, message_text, slow, verdict, verdicts

NOW = dt.date(2025, 3, 1)


def article(number: int, body: str | None = None) -> ArticleText:
    return ArticleText(ref=f"a{number:02d}", title=f"Article {number}", body=body or f"Body of article {number}.")


THREE = [article(1, "Tickets cost €25."), article(2, "Tickets cost €29."), article(3, "The office opens at 8:00.")]
PRICE = ConflictFinding(refs=("a01", "a02"), type="price", explanation="€25 vs €29",
                        snippets={"a01": "€25", "a02": "€29"})


@pytest.fixture
def claims_flag(monkeypatch):
    """Makes agents.claims.detect_claim_conflicts flag the given findings (and call the pairs in
    `flag.unrelated` about different things); records its calls."""
    calls: list[list[str]] = []
    flagged: list[ConflictFinding] = []
    unrelated: set[tuple[str, str]] = set()

    def detect_claim_conflicts(*, articles, now, vectors=None, judge=None):
        calls.append([a.ref for a in articles])
        refs = {a.ref for a in articles}
        return types.SimpleNamespace(findings=[finding for finding in flagged if set(finding.refs) <= refs],
                                     unrelated_pairs=lambda: {pair for pair in unrelated if set(pair) <= refs})

    monkeypatch.setitem(__import__("sys").modules, "agents.claims",
                        types.SimpleNamespace(detect_claim_conflicts=detect_claim_conflicts))

    def flag(*findings: ConflictFinding) -> list[list[str]]:
        flagged.extend(findings)
        return calls

    flag.unrelated = unrelated
    return flag


# --- the ≥ 2 / ≤ 20 rule -------------------------------------------------------------------------

@pytest.mark.parametrize("detector", ["claims", "llm", "auto"])
@pytest.mark.parametrize("articles", [[], [article(1)], [article(1), article(1)]], ids=["none", "one", "one-twice"])
def test_fewer_than_two_articles_skips_without_calling_anything(scripted_llm, claims_flag, detector, articles):
    calls = claims_flag()
    outcome = run_detection(articles=articles, detector=detector, now=NOW, llm_config=scripted_llm.config())
    assert outcome.status == STATUS_SKIPPED and not outcome.ran
    assert outcome.findings == [] and outcome.llm_calls == 0
    assert calls == [] and scripted_llm.requests == []


def test_more_than_twenty_articles_are_capped_to_the_first_twenty(scripted_llm, claims_flag):
    articles = [article(number) for number in range(1, 23)]
    calls = claims_flag()
    scripted_llm.push(answer(verdicts(verdict("a01", "a20", snippets={"a01": "article 1", "a20": "article 20"}))))
    outcome = run_detection(articles=articles, detector="auto", now=NOW, llm_config=scripted_llm.config())
    assert outcome.status == STATUS_CAPPED and outcome.articles_considered == 20
    assert calls == [[f"a{number:02d}" for number in range(1, 21)]]
    user = message_text(scripted_llm.requests[0], "user")
    assert 'ref="a20"' in user and 'ref="a21"' not in user and 'ref="a22"' not in user
    assert "every pair of the articles above" in user
    assert [finding.refs for finding in outcome.findings] == [("a01", "a20")]
    assert len(outcome.judgements) == 20 * 19 // 2


def test_twenty_articles_are_not_capped(claims_flag):
    claims_flag()
    outcome = run_detection(articles=[article(n) for n in range(1, 21)], detector="claims", now=NOW)
    assert outcome.status == STATUS_OK and outcome.articles_considered == 20


# --- the verdict cache ---------------------------------------------------------------------------

def test_cached_pairs_are_never_sent_to_the_llm(scripted_llm):
    cached = {("a01", "a02"): PRICE, ("a01", "a03"): None, ("a03", "a02"): None}
    outcome = run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config(), cached=cached)
    assert scripted_llm.requests == []
    assert outcome.findings == [PRICE]
    assert outcome.cache_hits == 3 and outcome.llm_calls == 0 and outcome.judgements == []


def test_only_uncached_pairs_are_asked_for_and_their_verdicts_returned(scripted_llm):
    scripted_llm.push(answer(verdicts(verdict("a02", "a03", conflict=False))))
    cached = {("a01", "a02"): PRICE}
    outcome = run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config(), cached=cached)
    (request,) = scripted_llm.requests
    user = message_text(request, "user")
    assert "a01 | a03\na02 | a03" in user and "a01 | a02" not in user
    assert outcome.findings == [PRICE]
    assert sorted(outcome.judgements, key=lambda j: j.refs) == [
        PairJudgement(refs=("a01", "a03"), conflict=None), PairJudgement(refs=("a02", "a03"), conflict=None),
    ]
    assert outcome.judged_pairs == [judgement.refs for judgement in outcome.judgements]
    assert outcome.llm_calls == 1 and outcome.tokens > 0 and outcome.model == scripted_llm.model


def test_llm_findings_and_drop_counts_reach_the_outcome(scripted_llm):
    scripted_llm.push(answer(verdicts(
        verdict("a01", "a02", snippets={"a01": "Tickets cost €25.", "a02": "Tickets cost €30."}),
        verdict("a01", "a09"),
    )))
    outcome = run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config())
    (finding,) = outcome.findings
    assert finding.refs == ("a01", "a02") and finding.snippets == {"a01": "Tickets cost €25."}
    assert (outcome.dropped_invented_refs, outcome.dropped_bad_snippets) == (1, 1)
    # a01's other pairs stay unjudged (the invented item might have meant one of them)
    assert outcome.judged_pairs == [("a01", "a02"), ("a02", "a03")]


# --- detectors -----------------------------------------------------------------------------------

def test_auto_sends_only_the_pairs_claims_did_not_flag_and_are_not_cached(scripted_llm, claims_flag):
    claims_flag(PRICE)
    articles = [*THREE, article(4, "Tickets cost €25 for adults.")]
    scripted_llm.push(answer(verdicts(verdict("a02", "a04", snippets={"a02": "€29", "a04": "€25"}))))
    outcome = run_detection(articles=articles, detector="auto", now=NOW, llm_config=scripted_llm.config(),
                            cached={("a03", "a04"): None})
    user = message_text(scripted_llm.requests[0], "user")
    assert listed_pairs(user) == [("a01", "a03"), ("a01", "a04"), ("a02", "a03"), ("a02", "a04")]
    assert [finding.refs for finding in outcome.findings] == [("a01", "a02"), ("a02", "a04")]
    assert outcome.llm_calls == 1


def test_auto_without_an_llm_is_the_claim_detector(scripted_llm, claims_flag):
    claims_flag(PRICE)
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=None)
    assert outcome.findings == [PRICE] and outcome.llm_calls == 0 and outcome.status == STATUS_OK
    assert scripted_llm.requests == []


def test_auto_asks_nothing_when_claims_and_cache_cover_every_pair(scripted_llm, claims_flag):
    claims_flag(PRICE)
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=scripted_llm.config(),
                            cached={("a01", "a03"): None, ("a02", "a03"): None})
    assert scripted_llm.requests == [] and outcome.findings == [PRICE]


def test_claims_detector_never_calls_the_llm(scripted_llm, claims_flag):
    calls = claims_flag(PRICE)
    outcome = run_detection(articles=THREE, detector="claims", now=NOW, llm_config=scripted_llm.config())
    assert outcome.findings == [PRICE] and calls == [["a01", "a02", "a03"]]
    assert scripted_llm.requests == []


def test_a_retrieval_set_checked_before_is_answered_without_running_the_claim_detector(claims_flag):
    calls = claims_flag(PRICE)
    claim_checks = ClaimChecks(None)
    first = plan_detection(articles=THREE, detector="claims", now=NOW, claim_checks=claim_checks)
    second = plan_detection(articles=list(THREE), detector="claims", now=NOW, claim_checks=claim_checks)
    assert calls == [["a01", "a02", "a03"]]
    assert first.found == second.found == {("a01", "a02"): PRICE}
    assert first.found is not second.found  # each turn's plan is its own to complete


@pytest.mark.parametrize("change", ["body", "updated_at", "source", "another set", "another day"])
def test_a_set_that_differs_in_any_text_or_day_is_checked_afresh(claims_flag, change):
    calls = claims_flag(PRICE)
    claim_checks = ClaimChecks(None)
    plan_detection(articles=THREE, detector="claims", now=NOW, claim_checks=claim_checks)
    articles, now = list(THREE), NOW
    if change == "another set":
        articles = THREE[:2]
    elif change == "another day":
        now = NOW + dt.timedelta(days=1)
    else:
        value = {"body": "Tickets cost €27.", "updated_at": NOW, "source": "pdf"}[change]
        articles[1] = dataclasses.replace(articles[1], **{change: value})
    plan_detection(articles=articles, detector="claims", now=now, claim_checks=claim_checks)
    assert len(calls) == 2


def test_claim_checks_keep_only_the_most_recent_sets(claims_flag):
    calls = claims_flag()
    claim_checks = ClaimChecks(None, max_sets=2)
    sets = [THREE[:2], THREE[1:], THREE]
    for articles in [*sets, sets[2], sets[0]]:
        plan_detection(articles=articles, detector="claims", now=NOW, claim_checks=claim_checks)
    assert len(calls) == 4  # the third set was kept, the first one had been dropped


def test_llm_detector_without_config_is_an_llm_error():
    with pytest.raises(LLMError) as raised:
        run_detection(articles=THREE, detector="llm", now=NOW, llm_config=None)
    assert raised.value.reason == "not_configured"


@pytest.mark.parametrize("fault, reason", [(http_error(500), "http_error"), (slow(3.0), "timeout")])
def test_llm_failures_propagate_as_llm_error(scripted_llm, fault, reason):
    scripted_llm.push(fault)
    with pytest.raises(LLMError) as raised:
        run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config(timeout_s=0.5))
    assert raised.value.reason == reason


def test_an_unknown_detector_is_refused():
    with pytest.raises(ValueError):
        run_detection(articles=THREE, detector="magic", now=NOW)  # type: ignore[arg-type]


def test_findings_are_ordered_by_pair(scripted_llm):
    pairs = list(itertools.combinations(["a01", "a02", "a03"], 2))
    scripted_llm.push(answer(verdicts(*[verdict(b, a) for a, b in reversed(pairs)])))
    outcome = run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config())
    assert [finding.refs for finding in outcome.findings] == pairs


# --- confidence, confirmation and pairs about different things -----------------------------------

UNSURE = dataclasses.replace(PRICE, confidence=0.55)


def test_auto_has_the_llm_confirm_an_unsure_claim_finding(scripted_llm, claims_flag):
    claims_flag(UNSURE)
    scripted_llm.push(answer(verdicts(verdict("a01", "a02", snippets={"a01": "Tickets cost €25.", "a02": "Tickets cost €29."}))))
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=scripted_llm.config())
    assert "every pair of the articles above" in message_text(scripted_llm.requests[0], "user")
    (finding,) = outcome.findings
    assert finding.refs == ("a01", "a02") and finding.detector == "both"
    assert finding.explanation == PRICE.explanation  # the claims' readable explanation is kept
    assert (outcome.confirmed, outcome.rejected) == (1, 0)


def test_auto_drops_an_unsure_claim_finding_the_llm_does_not_confirm(scripted_llm, claims_flag):
    claims_flag(UNSURE)
    scripted_llm.push(answer(verdicts(verdict("a01", "a02", conflict=False))))
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=scripted_llm.config())
    assert outcome.findings == [] and (outcome.confirmed, outcome.rejected) == (0, 1)


def test_auto_keeps_a_sure_claim_finding_without_asking(scripted_llm, claims_flag):
    claims_flag(PRICE)  # confidence 1.0
    scripted_llm.push(answer(verdicts()))
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=scripted_llm.config())
    assert listed_pairs(message_text(scripted_llm.requests[0], "user")) == [("a01", "a03"), ("a02", "a03")]
    assert [f.detector for f in outcome.findings] == ["claims"]


def test_an_unsure_claim_finding_stands_when_no_llm_is_configured(claims_flag):
    claims_flag(UNSURE)
    outcome = run_detection(articles=THREE, detector="auto", now=NOW, llm_config=None)
    assert outcome.findings == [UNSURE]


def test_an_llm_error_while_confirming_fails_the_run_and_records_nothing(scripted_llm, claims_flag):
    claims_flag(UNSURE)
    scripted_llm.push(http_error(500))
    with pytest.raises(LLMError):
        run_detection(articles=THREE, detector="auto", now=NOW, llm_config=scripted_llm.config(timeout_s=0.5))


@pytest.mark.parametrize("detector", ["llm", "auto"])
def test_pairs_about_different_things_are_not_sent_to_the_llm(scripted_llm, claims_flag, detector):
    claims_flag.unrelated.update({("a01", "a03"), ("a02", "a03")})
    scripted_llm.push(answer(verdicts(verdict("a01", "a02", snippets={"a01": "Tickets cost €25."}))))
    outcome = run_detection(articles=THREE, detector=detector, now=NOW, llm_config=scripted_llm.config())
    user = message_text(scripted_llm.requests[0], "user")
    # only a01-a02 is asked for, so a03 (in no pair asked for) is not even sent
    assert 'ref="a01"' in user and 'ref="a02"' in user and 'ref="a03"' not in user
    assert outcome.unrelated_pairs == 2
    recorded = {j.refs: (j.conflict, j.detector) for j in outcome.judgements}
    assert recorded[("a01", "a03")] == (None, "claims") and recorded[("a02", "a03")] == (None, "claims")
    assert recorded[("a01", "a02")][1] == "llm"


def test_no_llm_call_when_every_pair_is_about_different_things(scripted_llm, claims_flag):
    claims_flag.unrelated.update({("a01", "a02"), ("a01", "a03"), ("a02", "a03")})
    outcome = run_detection(articles=THREE, detector="llm", now=NOW, llm_config=scripted_llm.config())
    assert scripted_llm.requests == [] and outcome.llm_calls == 0 and outcome.findings == []
