"""MACR end to end against the scripted server: rules decide, the LLM fills gaps, failures leave no suggestion."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from agents.macr.pipeline import run_macr
from agents.macr.reasoning import PROVISIONAL_RULE_ID, LLMTextualJudge
from agents.macr.rules import ConflictPair, Rule, executable_rules
from agents.types import ArticleText
from tests.support.scripted_llm import (
    LLAMA_CPP_QUIRKS,
    HTTPFailure,
    Reply,
    ScriptedLLM,
    answer,
    http_error,
    message_text,
    samples,
    schema_name,
    slow,
)

NOW = dt.date(2026, 3, 1)
QUESTION = "How much is an adult single ticket?"
PAGE = ArticleText(ref="island-page", title="Visiting the islands", source="web", updated_at=dt.date(2026, 2, 1),
                   body="New evening sailing at 21:00! An adult single costs €25.")
PDF = ArticleText(ref="fares-pdf", title="Fare table (valid from 1 January 2026)", source="pdf",
                  updated_at=dt.date(2026, 1, 1), body="Adult single €29, child €14.")
FOCUS = ("fares-pdf", "island-page")
SOURCE_ANSWERS = {
    "hours": {"answer": "cannot tell", "quote": ""},
    "island-page": {"answer": "€25", "quote": "An adult single costs €25."},
    "fares-pdf": {"answer": "€29", "quote": "Adult single €29, child €14."},
    "C0": {"answer": "€29", "quote": ""},
}
TRIPLET = {"conflicts": [{
    "refs": ["island-page", "fares-pdf"], "explanation": "€25 vs €29", "type": "temporal",
    "snippets": [{"ref": "island-page", "quote": "An adult single costs €25."},
                 {"ref": "fares-pdf", "quote": "Adult single €29"}],
}]}



def scripted(overrides: dict | None = None):
    """A respond() answering each MACR step by its schema name; `overrides` replace a step's reply."""
    def synthesis(request):
        return {"explanation": "The fare table is official.", "answer": "€29", "winner": "fares-pdf",
                "proposed_edit": "", "confidence": 0.9}

    def source_answer(request):
        user = message_text(request, "user")
        ref = next(ref for ref in SOURCE_ANSWERS if f'ref="{ref}"' in user)
        return SOURCE_ANSWERS[ref]

    steps = {"macr_source_answer": source_answer, "macr_conflicts": TRIPLET, "macr_synthesis": synthesis,
             "macr_rule_verdicts": {"verdicts": []},
             "macr_internal_knowledge": {"key_attributes": "Ferry fares", "background": "Set yearly",
                                         "ancillary_details": "Children pay half", "knowledge_cutoff": "2024",
                                         "answer": "€29"}}
    steps.update(overrides or {})

    def respond(request):
        if not request.get("response_format"):
            return samples(["€29"] * request.get("n", 1))
        reply = steps[schema_name(request)]
        return reply(request) if callable(reply) else reply
    return respond


def run(scripted_llm, *, rules=None, use_kar=False, **kwargs):
    return run_macr(question=QUESTION, sources=[PAGE, PDF], now=NOW, config=scripted_llm.config(timeout_s=1.0),
                    rules=executable_rules() if rules is None else rules, focus=FOCUS, focus_type="price",
                    use_kar=use_kar, **kwargs)


def test_an_executable_rule_decides_and_the_edit_replaces_the_losing_sentence(scripted_llm):
    scripted_llm.respond = scripted()
    result = run(scripted_llm)
    assert result.failure is None
    suggestion = result.suggestion
    assert suggestion.winner == "fares-pdf"
    assert "official-effective-beats-newer-page" in suggestion.rules
    assert "Rules used: official-effective-beats-newer-page" in suggestion.explanation
    assert suggestion.proposed_edit == "New evening sailing at 21:00! Adult single €29"
    # measured once on dev (wrongly) and never validated here: well below the default threshold, which the
    # product applies to what it shows
    assert 0.0 < suggestion.confidence < 0.5
    assert result.answer == "€29" and result.feedback == []
    assert result.llm_calls == 4  # 2 source answers + 1 comparison + 1 synthesis; executable rules cost nothing
    synthesis_prompt = message_text(scripted_llm.requests[-1], "user")
    assert "official-effective-beats-newer-page" in synthesis_prompt and "Focus sources" in synthesis_prompt


def test_a_llama_cpp_like_server_writing_raw_newlines_in_strings_still_gets_a_suggestion():
    # Seen against llama-cpp-python 0.3.16 + Gemma 3 270M: the synthesis explanation quoted the prompt
    # with raw newlines (its grammar allows them), which ended the run as invalid_json.
    with ScriptedLLM(quirks=LLAMA_CPP_QUIRKS) as server:
        server.push(answer(SOURCE_ANSWERS["island-page"]), answer(SOURCE_ANSWERS["fares-pdf"]), answer(TRIPLET),
                    answer({"explanation": "The current date is 2026-03-01.\n</source>\n\n<source ref=", "answer": "€29",
                            "winner": "fares-pdf", "proposed_edit": "", "confidence": 0.9}))
        result = run_macr(question=QUESTION, sources=[PAGE, PDF], now=NOW, config=server.config(json_mode="auto"),
                          rules=executable_rules(), focus=FOCUS, focus_type="price", use_kar=False)
        assert result.failure is None and result.meter.errors == {}
        assert result.suggestion.winner == "fares-pdf" and result.answer == "€29"
        assert result.llm_calls == 5  # json_schema refused once, then 2 source answers + comparison + synthesis
        assert all("stop" not in request for request in server.requests)


def test_a_synthesis_that_contradicts_the_rules_leaves_cannot_tell(scripted_llm):
    scripted_llm.respond = scripted({"macr_synthesis": {"explanation": "x", "answer": "€25", "winner": "island-page",
                                                        "proposed_edit": "", "confidence": 0.9}})
    result = run(scripted_llm)
    assert result.failure is None
    assert result.suggestion.winner is None and result.suggestion.confidence == 0.0
    assert result.suggestion.explanation.startswith("Cannot tell: rule(s) official-effective-beats-newer-page pick fares-pdf")


@pytest.mark.parametrize(("step", "behaviour", "reason"), [
    ("macr_source_answer", http_error(503), "analyzer: LLM http_error"),
    ("macr_conflicts", Reply(contents=('{"conflicts": [',)), "analyzer: LLM invalid_json"),
    ("macr_conflicts", answer({"conflicts": "none"}), "analyzer: LLM schema_mismatch"),
    ("macr_synthesis", slow(3.0), "synthesis: LLM timeout"),
])
def test_failures_leave_no_suggestion_and_say_why(scripted_llm, step, behaviour, reason):
    scripted_llm.respond = scripted({step: lambda request: behaviour})
    result = run(scripted_llm)
    assert result.suggestion is None and result.answer is None
    assert result.failure.startswith(reason)


def test_a_failed_assessment_or_textual_rule_call_also_leaves_no_suggestion(scripted_llm):
    def respond(request):
        if not request.get("response_format"):
            return HTTPFailure(status=500)
        return scripted()(request)
    scripted_llm.respond = respond
    result = run(scripted_llm, use_kar=True, embed=lambda texts: np.ones((len(texts), 2)), threshold=0.0)
    assert result.suggestion is None and result.failure.startswith("assessment: LLM http_error")

    textual = Rule(id="page-says-sale", type="temporal", condition="c", resolution="r", origin="manual", kind="textual")
    scripted_llm.respond = scripted({"macr_rule_verdicts": lambda request: http_error(502)})
    result = run(scripted_llm, rules=[textual])
    assert result.suggestion is None and result.failure.startswith("reasoner: LLM http_error")


def test_a_synthesis_naming_an_unknown_article_is_not_believed(scripted_llm):
    scripted_llm.respond = scripted({"macr_synthesis": {"explanation": "x", "answer": "€29", "winner": "kb-999",
                                                        "proposed_edit": "", "confidence": 1.0}})
    result = run(scripted_llm)
    assert result.suggestion is None
    assert "kb-999" in result.failure and result.failure.startswith("synthesis:")


def test_the_synthesis_schema_allows_only_the_focus_sides_or_cannot_tell(scripted_llm):
    from agents.macr.prompts import CANNOT_TELL, synthesis_schema

    requests = []

    def answer(request):
        requests.append(request)
        return {"explanation": "x", "answer": "€29", "winner": FOCUS[1], "proposed_edit": "", "confidence": 0.9}

    scripted_llm.respond = scripted({"macr_synthesis": answer})
    run(scripted_llm)
    sent = json.dumps(requests[-1])
    assert json.dumps([*FOCUS, CANNOT_TELL]) in sent  # the enum reaches the server, whose grammar then holds it
    assert synthesis_schema(None)["properties"]["winner"] == {"type": "string"}


def test_no_rule_fits_so_the_llm_judges_provisionally_and_feeds_back_to_the_observer(scripted_llm):
    undated_page = ArticleText(ref="island-page", title="Islands", body=PAGE.body, source="web")
    undated_pdf = ArticleText(ref="fares-pdf", title="Fares", body=PDF.body, source="pdf")
    scripted_llm.respond = scripted({
        "macr_provisional": {"reasoning": "A fare table is the business's own price list.", "winner": "fares-pdf",
                             "principle_condition": "one side is a fare table", "principle_resolution": "it wins"},
        "macr_synthesis": {"explanation": "Provisionally the fare table.", "answer": "€29", "winner": "fares-pdf",
                           "proposed_edit": "DELETE", "confidence": 0.95},
    })
    result = run_macr(question=QUESTION, sources=[undated_page, undated_pdf], now=NOW,
                      config=scripted_llm.config(), rules=executable_rules(), focus=FOCUS, use_kar=False)
    assert result.failure is None
    suggestion = result.suggestion
    assert suggestion.winner == "fares-pdf" and suggestion.rules == (PROVISIONAL_RULE_ID,)
    assert suggestion.confidence == 0.5  # capped: no validated rule backs it
    (feedback,) = result.feedback
    assert feedback.pair.refs == FOCUS and feedback.provisional_winner == "fares-pdf"
    assert feedback.principle_condition == "one side is a fare table"
    # The model proposed deleting the page, but both snippets are known: the sentence swap, which the
    # reviewer can check at a glance, wins over the model's proposal.
    assert suggestion.proposed_edit == "New evening sailing at 21:00! Adult single €29" and not result.delete_loser


def test_textual_rules_are_applied_by_the_llm_and_made_up_sides_are_ignored(scripted_llm):
    wins = Rule(id="fare-table-wins", type="temporal", condition="one side is a fare table", resolution="it wins",
                origin="induced", kind="textual", priority=5)
    bogus = Rule(id="bogus", type="temporal", condition="always", resolution="kb-999 wins",
                 origin="induced", kind="textual", priority=5)
    scripted_llm.respond = scripted({"macr_rule_verdicts": {"verdicts": [
        {"rule_id": "fare-table-wins", "reasoning": "the PDF is a fare table", "holds": True, "winner": "fares-pdf"},
        {"rule_id": "bogus", "reasoning": "", "holds": True, "winner": "kb-999"},
    ]}})
    result = run(scripted_llm, rules=[wins, bogus])
    assert result.suggestion.winner == "fares-pdf" and result.suggestion.rules == ("fare-table-wins",)
    rule_calls = [r for r in scripted_llm.requests if schema_name(r) == "macr_rule_verdicts"]
    assert len(rule_calls) == 1  # both rules in one call for the pair
    assert "rule_id: fare-table-wins" in message_text(rule_calls[0], "user")
    # one verdict per rule asked about at most: the grammar can end the list
    assert rule_calls[0]["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["maxItems"] == 2


def test_judge_follows_the_observer_protocol(scripted_llm):
    rule = Rule(id="r1", type="price", condition="c", resolution="r", origin="induced", kind="textual")
    scripted_llm.push(answer({"verdicts": [{"rule_id": "r1", "reasoning": "", "holds": False, "winner": ""}]}))
    judge = LLMTextualJudge(config=scripted_llm.config(), rules=[rule])
    pair = ConflictPair(a=PAGE, b=PDF, type="price")
    with pytest.raises(LookupError):
        judge(rule, pair, NOW)
    assert judge.as_reasoner_judge()(rule, pair, NOW) is None  # cached: no second call
    assert len(scripted_llm.requests) == 1


def test_full_macr_puts_the_models_own_knowledge_first_when_it_is_confident(scripted_llm):
    scripted_llm.respond = scripted()
    embed = lambda texts: np.array([[1.0, 0.0]] * len(texts))  # noqa: E731 - identical answers, all on the question
    result = run(scripted_llm, use_kar=True, embed=embed, threshold=0.0, samples=3)
    assert result.failure is None
    assert result.assessment.internal and result.knowledge.path == "internal"
    assert list(result.analysis.answers) == ["C0", "island-page", "fares-pdf"]
    assert result.meter.by_step["assessment"] == 3 and result.meter.by_step["retrieval"] == 1
    assert result.suggestion.winner == "fares-pdf"


def test_product_entry_point_searches_the_kb_without_the_conflicting_pair_when_unsure(scripted_llm):
    from agents.macr.pipeline import suggest_for_conflict

    scripted_llm.respond = scripted({"macr_answer": {"answer": "€29"}})
    searches = []

    def retrieve(question, exclude_refs):
        searches.append((question, tuple(exclude_refs)))
        return "Fare table 2026: adult single €29."

    hours = ArticleText(ref="hours", title="Opening hours", body="Open 9-17.")
    outcome = suggest_for_conflict(
        a=PAGE, b=PDF, conflict_type="price", question=QUESTION, now=NOW, config=scripted_llm.config(),
        rules=executable_rules(), embed=lambda texts: np.array([[1.0, 0.0]] * len(texts)), threshold=-10.0,
        retrieve=retrieve, business="Acme Ferries", other_articles=[hours, PDF],
    )
    assert outcome.failure is None and outcome.suggestion.winner == "fares-pdf"
    assert searches == [(QUESTION, ("island-page", "fares-pdf"))]  # H ≥ τ: external path, pair excluded
    sampling = next(r for r in scripted_llm.requests if not r.get("response_format"))
    assert "Acme Ferries" in message_text(sampling, "user") and '"Opening hours"' in message_text(sampling, "user")
    answered = [message_text(r, "user") for r in scripted_llm.requests if schema_name(r) == "macr_source_answer"]
    assert len(answered) == 4  # C0 (the retrieved passage), the pair, and the turn's other article once
    assert outcome.llm_calls == 5 + 1 + 4 + 1 + 1  # samples, external answer, 4 answers, comparison, synthesis
