"""MACR Observer with LLM candidates: proposed from training decisions, validated on held-out ones by the LLM judge."""
from __future__ import annotations

import datetime as dt
import re

import pytest

from agents.llm import LLMError
from agents.macr.induction import generate_candidate_rules, induce_with_llm, induced_rule_id
from agents.macr.observer import Decision, split_decisions
from agents.macr.reasoning import FeedbackCase
from agents.macr.rules import ConflictPair, executable_rules
from agents.types import ArticleText
from tests.support.scripted_llm import http_error, message_text, schema_name

DECIDED = dt.date(2026, 3, 1)
PDF_WINS = {"type": "*", "condition": "one side is a PDF document", "resolution": "the PDF wins"}
PAGE_WINS = {"type": "*", "condition": "one side is a web page", "resolution": "the web page wins"}
HOURS_ONLY = {"type": "hours", "condition": "the conflict is about hours", "resolution": "the PDF wins"}
NAMES_A_REF = {"type": "*", "condition": "pdf-3 is involved", "resolution": "pdf-3 wins"}


def decision(index: int, outcome: str) -> Decision:
    pdf = ArticleText(ref=f"pdf-{index}", title=f"Policy {index}", body=f"Fee €{index}.", source="pdf")
    page = ArticleText(ref=f"page-{index}", title=f"Page {index}", body=f"Fee €{index + 1}.", source="web")
    chosen = {"pdf": pdf.ref, "page": page.ref}.get(outcome, outcome)
    return Decision(a=pdf, b=page, type="price", outcome=chosen, decided_on=DECIDED)


# 40 decisions: staff chose the PDF in 3 of every 4, the page otherwise.
DECISIONS = [decision(i, "page" if i % 4 == 0 else "pdf") for i in range(1, 41)]


def respond(request):
    user = message_text(request, "user")
    if schema_name(request) == "macr_candidate_rules":
        return {"rules": [PDF_WINS, PAGE_WINS, HOURS_ONLY, NAMES_A_REF, {"type": "*", "condition": " ", "resolution": "x"}]}
    # macr_rule_verdicts: apply each listed rule by its words to the pair in the prompt
    pdf_ref = re.search(r'ref="(pdf-\d+)"', user).group(1)
    page_ref = re.search(r'ref="(page-\d+)"', user).group(1)
    verdicts = []
    for rule_id, resolution in re.findall(r"rule_id: (\S+)\n  Condition: .*\n  Resolution: (.*)", user):
        winner = pdf_ref if "PDF" in resolution else page_ref
        verdicts.append({"rule_id": rule_id, "reasoning": "", "holds": True, "winner": winner})
    return {"verdicts": verdicts}


def test_candidates_are_proposed_in_batches_and_rules_about_particular_articles_are_discarded(scripted_llm):
    scripted_llm.respond = respond
    rules, discarded = generate_candidate_rules(decisions=DECISIONS[:10], config=scripted_llm.config(), batch_size=4)
    assert len(scripted_llm.requests) == 3  # 10 decisions in batches of 4
    assert {(r.type, r.condition) for r in rules} == {
        ("*", PDF_WINS["condition"]), ("*", PAGE_WINS["condition"]),
        ("*", HOURS_ONLY["condition"]),  # "hours" is no type of these decisions: widened to any type
    }
    # per batch: the ref-naming rule and the empty one; repeated rules are one rule
    assert discarded == 3 * 2 + 2 * 3
    assert all(rule.origin == "induced" and rule.kind == "textual" for rule in rules)
    first = message_text(scripted_llm.requests[0], "user")
    assert "Staff outcome: pdf-1" in first and 'kind="pdf"' in first and "Demonstration 4" in first


def test_candidates_are_validated_on_held_out_decisions_and_filtered_by_support(scripted_llm):
    scripted_llm.respond = respond
    result = induce_with_llm(decisions=DECISIONS, candidates=executable_rules(), config=scripted_llm.config(),
                             batch_size=50)
    training, validation = split_decisions(decisions=DECISIONS)
    assert (result.training, result.validation) == (training, validation)
    by_id = {v.rule_id: v for v in result.validations}
    pdf_share = sum(d.outcome.startswith("pdf") for d in validation) / len(validation)
    pdf_rule = by_id[induced_rule_id(**PDF_WINS)]
    page_rule = by_id[induced_rule_id(**PAGE_WINS)]
    assert pdf_rule.coverage == 1.0 and pdf_rule.support == pytest.approx(pdf_share, abs=1e-4)
    assert page_rule.support == pytest.approx(1 - pdf_share, abs=1e-4)
    assert pdf_rule.accepted and not page_rule.accepted  # support ≥ 0.6 vs < 0.6
    active_ids = {rule.id for rule in result.active_rules}
    assert induced_rule_id(**PDF_WINS) in active_ids and induced_rule_id(**PAGE_WINS) not in active_ids
    # the generator read training decisions only; the judge ran one call per validation decision
    generation = [r for r in scripted_llm.requests if schema_name(r) == "macr_candidate_rules"]
    judged = [r for r in scripted_llm.requests if schema_name(r) == "macr_rule_verdicts"]
    assert all(f'ref="{d.a.ref}"' not in message_text(generation[0], "user") for d in validation)
    assert len(judged) == len(validation)
    # executable templates (no dates here) never cover these decisions and stay inactive
    assert all(by_id[rule.id].coverage == 0.0 for rule in executable_rules())


def test_a_stricter_support_threshold_filters_every_candidate(scripted_llm):
    scripted_llm.respond = respond
    result = induce_with_llm(decisions=DECISIONS, candidates=[], config=scripted_llm.config(), min_support=0.95)
    assert result.active_rules == []


def test_feedback_principles_become_candidates_and_are_shown_to_the_generator(scripted_llm):
    scripted_llm.respond = respond
    pdf, page = DECISIONS[0].a, DECISIONS[0].b
    case = FeedbackCase(pair=ConflictPair(a=pdf, b=page, type="price"), now=DECIDED, question="Fee?",
                        provisional_winner=pdf.ref, reasoning="", principle_condition="one side is an official PDF",
                        principle_resolution="the PDF wins")
    rules, _ = generate_candidate_rules(decisions=DECISIONS[1:5], config=scripted_llm.config(), feedback=[case])
    assert induced_rule_id(type="price", condition="one side is an official PDF", resolution="the PDF wins") in {
        rule.id for rule in rules}
    assert "Cases the current rules did not cover" in message_text(scripted_llm.requests[0], "user")


def test_a_failed_generation_call_fails_the_run(scripted_llm):
    scripted_llm.push(http_error(500))
    with pytest.raises(LLMError):
        induce_with_llm(decisions=DECISIONS, candidates=executable_rules(), config=scripted_llm.config())
