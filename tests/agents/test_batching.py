"""agents.batching: several turns' pairs packed into LLM calls, and the verdicts fanned back to each turn.

Plans are built as plain data (what plan_detection returns); calls go to the scripted OpenAI-compatible
server on loopback."""
from __future__ import annotations

import dataclasses
import datetime as dt
import itertools

import pytest

from agents.batching import judge_call, pack_calls
from agents.detection import STATUS_OK, DetectionPlan, DetectionReport, complete_detection
from agents.llm import LLMError
from agents.types import ArticleText, ConflictFinding, pair_key
from tests.support.scripted_llm import answer, http_error, invalid_json, message_text, verdict, verdicts

NOW = dt.date(2025, 3, 1)


def article(number: int, body: str | None = None) -> ArticleText:
    return ArticleText(ref=f"a{number:02d}", title=f"Article {number}", body=body or f"Body of article {number}.")


def plan(*numbers: int, pairs: list[tuple[int, int]] | None = None, texts: dict[int, str] | None = None,
         to_confirm: list[tuple[int, int]] = ()) -> DetectionPlan:
    """A turn's plan over articles `numbers`, leaving `pairs` (default: every pair) for the LLM."""
    articles = [article(n, (texts or {}).get(n)) for n in numbers]
    keys = [pair_key(f"a{a:02d}", f"a{b:02d}") for a, b in (pairs if pairs is not None else itertools.combinations(numbers, 2))]
    confirm = {pair_key(f"a{a:02d}", f"a{b:02d}"): ConflictFinding(
        refs=pair_key(f"a{a:02d}", f"a{b:02d}"), type="price", explanation="claims say so", confidence=0.5)
        for a, b in to_confirm}
    return DetectionPlan(DetectionReport(status=STATUS_OK, articles_considered=len(articles)), articles, NOW,
                         to_confirm=confirm, unjudged=keys)


def test_a_pair_two_turns_need_is_asked_once_and_the_first_turn_pays():
    batch = pack_calls([plan(1, 2), plan(1, 2, 3), plan(5, 6, pairs=[])], max_pairs=60)
    (call,) = batch.calls
    assert call.pairs == [("a01", "a02"), ("a01", "a03"), ("a02", "a03")]
    assert list(call.articles) == ["a01", "a02", "a03"]
    assert call.members == [0, 1]
    assert (batch.pays_for(0), batch.pays_for(1), batch.pays_for(2)) == (0, None, None)
    assert (batch.turns_sharing(0), batch.turns_sharing(1), batch.turns_sharing(2)) == (2, 2, 0)


def test_a_call_never_shows_more_than_twenty_articles():
    first, second = plan(*range(1, 13)), plan(*range(13, 25))
    batch = pack_calls([first, second], max_pairs=1000)
    assert [len(call.articles) for call in batch.calls] == [12, 12]
    third = plan(*range(30, 38))  # 8 more articles fit beside the first turn's 12
    batch = pack_calls([first, second, third], max_pairs=1000)
    assert [len(call.articles) for call in batch.calls] == [20, 12]
    assert [call.members for call in batch.calls] == [[0, 2], [1]]


def test_an_article_edited_between_two_turns_is_asked_in_another_call():
    before, after = plan(1, 2), plan(1, 2, texts={1: "Edited body of article 1."})
    batch = pack_calls([before, after], max_pairs=60)
    assert [call.pairs for call in batch.calls] == [[("a01", "a02")], [("a01", "a02")]]
    assert batch.calls[1].articles["a01"].body == "Edited body of article 1."


def test_max_pairs_bounds_a_shared_call_but_never_splits_one_turn():
    big, small = plan(*range(1, 8)), plan(10, 11)  # 21 pairs, 1 pair
    batch = pack_calls([big, small], max_pairs=20)
    assert [len(call.pairs) for call in batch.calls] == [21, 1]
    batch = pack_calls([small, plan(12, 13)], max_pairs=20)
    assert [len(call.pairs) for call in batch.calls] == [2]


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        pack_calls([plan(1, 2)], max_pairs=0)
    with pytest.raises(ValueError):
        pack_calls([plan(1, 2)], max_pairs=10, max_articles=21)


def test_verdicts_go_back_to_each_turn_that_needs_them(scripted_llm):
    plans = [plan(1, 2, to_confirm=[(1, 2)]), plan(1, 2, 3), plan(2, 3)]
    batch = pack_calls(plans, max_pairs=60)
    scripted_llm.push(answer(verdicts(
        verdict("a01", "a02", snippets={"a01": "article 1", "a02": "article 2"}),
        verdict("a02", "a03", conflict=False),
    )))
    result = judge_call(batch.calls[0], config=scripted_llm.config())
    assert len(scripted_llm.requests) == 1
    user = message_text(scripted_llm.requests[0], "user")
    assert user.count("<article ") == 3 and "every pair of the articles above" in user
    results = {0: result}
    outcomes = [complete_detection(p, verdicts=batch.verdicts_for(i, results),
                                   call=results[batch.pays_for(i)] if batch.pays_for(i) is not None else None)
                for i, p in enumerate(plans)]
    # The first turn had the pair's claim finding confirmed; the second got the LLM's own finding.
    assert [(f.refs, f.detector) for f in outcomes[0].findings] == [(("a01", "a02"), "both")]
    assert (outcomes[0].confirmed, outcomes[0].rejected) == (1, 0)
    assert [(f.refs, f.detector) for f in outcomes[1].findings] == [(("a01", "a02"), "llm")]
    assert outcomes[2].findings == []
    # Each turn caches the verdicts of its own pairs; the call's cost is on the first turn only.
    assert [sorted(j.refs for j in o.judgements) for o in outcomes] == [
        [("a01", "a02")], [("a01", "a02"), ("a01", "a03"), ("a02", "a03")], [("a02", "a03")]]
    assert [o.llm_calls for o in outcomes] == [1, 0, 0] and outcomes[0].tokens > 0 == outcomes[1].tokens


def test_pairs_a_call_leaves_unsettled_get_no_verdict(scripted_llm):
    plans = [plan(1, 2, 3), plan(2, 3)]
    batch = pack_calls(plans, max_pairs=60)
    scripted_llm.push(answer(verdicts(verdict("a03", "a99"))))  # an invented ref casts doubt on a03's pairs
    result = judge_call(batch.calls[0], config=scripted_llm.config())
    assert batch.verdicts_for(0, {0: result}) == {("a01", "a02"): None}
    assert batch.verdicts_for(1, {0: result}) == {}
    assert batch.verdicts_for(1, {}) == {}  # the call failed: nothing to fan out


@pytest.mark.parametrize("fault, reason", [(http_error(500), "http_error"), (invalid_json(), "invalid_json")])
def test_a_failed_call_raises_for_the_caller_to_fail_its_turns_open(scripted_llm, fault, reason):
    batch = pack_calls([plan(1, 2), plan(2, 3)], max_pairs=60)
    scripted_llm.push(fault)
    with pytest.raises(LLMError) as raised:
        judge_call(batch.calls[0], config=scripted_llm.config())
    assert raised.value.reason == reason
    assert batch.calls_of(0) == batch.calls_of(1) == [0]


def test_a_plan_without_pairs_for_the_llm_is_in_no_call():
    empty = dataclasses.replace(plan(1, 2), unjudged=[])
    batch = pack_calls([empty], max_pairs=60)
    assert batch.calls == [] and batch.calls_of(0) == [] and batch.pays_for(0) is None


def test_a_call_shows_each_article_as_the_union_of_its_pairs_excerpts_or_whole(scripted_llm):
    texts = {1: "Line one of 1.\nLine two of 1.\nLine three of 1.", 2: "Only line of 2.", 3: "Only line of 3.",
             4: "Only line of 4."}
    first = plan(1, 2, 3, pairs=[(1, 2), (1, 3)], texts=texts)
    first.excerpts = {("a01", "a02"): {"a01": {0: ("", "Line one of 1.")}, "a02": {0: ("", "Only line of 2.")}},
                      ("a01", "a03"): {"a01": {2: ("", "Line three of 1.")}, "a03": {0: ("", "Only line of 3.")}}}
    second = plan(2, 4, texts=texts)  # no excerpts: a02 and a04 are shown whole
    batch = pack_calls([first, second], max_pairs=60)
    (call,) = batch.calls
    scripted_llm.push(answer(verdicts()))
    judge_call(call, config=scripted_llm.config())
    user = message_text(scripted_llm.requests[0], "user")
    article_1 = user.split('ref="a01"')[1].split("</article>")[0]
    assert "Line one of 1.\n[...]\nLine three of 1." in article_1 and "Line two of 1." not in article_1
    assert "\n\n[...]\n" in article_1  # an excerpt starts with [...]
    assert "[...]" not in user.split('ref="a02"')[1].split("</article>")[0]  # whole: one of its pairs has no excerpt


def test_the_claim_pairs_judged_consistent_are_those_the_call_showed_and_its_payer_records_them(scripted_llm):
    """A pair two turns need is asked once, with the first turn's excerpt: the call's claim pairs are that
    excerpt's, whatever the second turn's own plan would have shown, and only the turn that pays records them."""
    first, second = plan(1, 2), plan(1, 2)
    shown = {"k-first": (("a01", "Body of article 1."), ("a02", "Body of article 2."))}
    first.claim_pairs[("a01", "a02")] = shown
    second.claim_pairs[("a01", "a02")] = {"k-second": (("a01", "Body of article 1."), ("a02", "Body of article 2."))}
    batch = pack_calls([first, second], max_pairs=60)
    (call,) = batch.calls
    assert call.claim_pairs == {("a01", "a02"): shown}
    scripted_llm.push(answer(verdicts(verdict("a01", "a02", conflict=False))))
    result = judge_call(call, config=scripted_llm.config())
    assert result.consistent_claim_pairs == {"k-first"}
    payer = complete_detection(first, verdicts=batch.verdicts_for(0, {0: result}), call=result)
    rider = complete_detection(second, verdicts=batch.verdicts_for(1, {0: result}))
    assert payer.consistent_claim_pairs == {"k-first"} and rider.consistent_claim_pairs == set()
