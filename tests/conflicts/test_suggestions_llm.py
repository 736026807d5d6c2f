"""The LLM path of suggestions against the scripted server: used only when no executable rule covers
the conflict; its provisional judgment is kept as feedback; a failure leaves no suggestion and says why."""
import datetime as dt

import numpy as np
import pytest

from conflicts.models import ResolutionSuggestion, SuggestionStatus
from conflicts.services.induction import feedback_cases
from conflicts.services.suggestions import suggestion_compute
from tests.conflicts.console_support import make_conflict
from tests.factories import make_article
from tests.support.scripted_llm import http_error, message_text, samples, schema_name


@pytest.fixture
def macr_llm(settings, scripted_llm, monkeypatch):
    settings.LLM = {**settings.LLM, "base_url": scripted_llm.base_url, "model": scripted_llm.model, "timeout_s": 5.0}
    # Fixed vectors instead of MiniLM: the entropy figure is not under test here, the wiring is.
    monkeypatch.setattr("conflicts.services.suggestions.embed_texts", lambda texts: np.ones((len(texts), 4)))
    return scripted_llm



def responder(winner: str, *, fail_step: str | None = None):
    def source_answer(request):
        user = message_text(request, "user")
        if 'ref="faq-email-a"' in user:
            return {"answer": "lost@example.com", "quote": "write to lost@example.com"}
        if 'ref="faq-email-b"' in user:
            return {"answer": "found@example.com", "quote": "write to found@example.com"}
        return {"answer": "cannot tell", "quote": ""}

    steps = {
        "macr_source_answer": source_answer,
        "macr_conflicts": {"conflicts": [{
            "refs": ["faq-email-a", "faq-email-b"], "explanation": "two addresses", "type": "misinformation",
            "snippets": [{"ref": "faq-email-a", "quote": "write to lost@example.com"},
                         {"ref": "faq-email-b", "quote": "write to found@example.com"}],
        }]},
        "macr_rule_verdicts": {"verdicts": []},
        "macr_provisional": {"reasoning": "the department is called lost property", "winner": winner,
                             "principle_condition": "two contact addresses for one department",
                             "principle_resolution": "the address named after the department wins"},
        "macr_synthesis": {"explanation": "provisional judgment", "answer": "lost@example.com", "winner": winner,
                           "proposed_edit": "", "confidence": 0.4},
        "macr_internal_knowledge": {"key_attributes": "", "background": "", "ancillary_details": "",
                                    "knowledge_cutoff": "2024", "answer": "cannot tell"},
        "macr_answer": {"answer": "cannot tell", "quote": ""},
    }

    def respond(request):
        name = schema_name(request)
        if fail_step and name == fail_step:
            return http_error(503)
        if not request.get("response_format"):
            return samples(["I don't know"] * request.get("n", 1))
        reply = steps[name]
        return reply(request) if callable(reply) else reply

    return respond


@pytest.fixture
def uncovered_conflict(kb):
    same_day = dt.date(2026, 8, 3)
    a = make_article(kb, "faq-email-a", "Lost property: write to lost@example.com.", updated_at=same_day, index=False)
    b = make_article(kb, "faq-email-b", "Lost property: write to found@example.com.", updated_at=same_day, index=False)
    return make_conflict(kb, a, b, type="contact",
                         snippets=("write to lost@example.com", "write to found@example.com"))


@pytest.mark.django_db
def test_no_rule_covers_it_so_the_llm_judges_and_the_case_feeds_back(kb, uncovered_conflict, macr_llm):
    macr_llm.respond = responder("faq-email-a")
    suggestion = suggestion_compute(conflict_id=uncovered_conflict.pk)
    # A provisional judgment no validated rule backs is worth at most 0.5: never shown as advice, only leaned to
    assert suggestion.status == SuggestionStatus.ABSTAINED, suggestion.failure_reason
    assert suggestion.winner is None and suggestion.confidence == 0.0
    assert suggestion.explanation.startswith("Cannot tell: the model leans to faq-email-a, but only at confidence 0.")
    assert suggestion.provisional and suggestion.llm_calls >= 3
    assert suggestion.feedback["principle_resolution"].startswith("the address named")
    cases = feedback_cases(knowledge_base=kb)
    assert len(cases) == 1 and cases[0].provisional_winner == "faq-email-a"


@pytest.mark.django_db
def test_an_llm_failure_leaves_no_suggestion_and_says_why(uncovered_conflict, macr_llm):
    macr_llm.respond = responder("faq-email-a", fail_step="macr_conflicts")
    suggestion = suggestion_compute(conflict_id=uncovered_conflict.pk)
    assert suggestion.status == SuggestionStatus.FAILED
    assert suggestion.winner is None and suggestion.proposed_edit == ""
    assert "http_error" in suggestion.failure_reason


@pytest.mark.django_db
def test_covered_conflicts_never_call_the_llm(kb, macr_llm):
    older = make_article(kb, "faq-old", "Parking costs €10.", updated_at=dt.date(2025, 1, 1), index=False)
    newer = make_article(kb, "faq-new", "Parking costs €12.", updated_at=dt.date(2026, 1, 1), index=False)
    macr_llm.respond = responder("faq-old")
    suggestion = suggestion_compute(conflict_id=make_conflict(kb, older, newer).pk)
    assert suggestion.winner_id == newer.pk and suggestion.llm_calls == 0
    assert macr_llm.requests == []
    assert ResolutionSuggestion.objects.get().provisional is False


@pytest.mark.django_db
def test_induction_with_the_llm_adds_a_validated_textual_rule(kb, macr_llm):
    import re

    from conflicts.models import InductionStatus, ResolutionRule, RuleKind, RuleOrigin, RuleStatus
    from conflicts.services.induction import rule_induction_run
    from tests.conflicts.test_suggestions import reviewed_pairs

    reviewed_pairs(kb, 30, newer_wins=False)  # staff keep deciding for the older page

    def respond(request):
        name = schema_name(request)
        user = message_text(request, "user")
        if name == "macr_candidate_rules":
            return {"rules": [{"type": "price", "condition": "two pages state different locker prices",
                               "resolution": "the page with the older content date is right"}]}
        if name == "macr_rule_verdicts":
            rule_ids = re.findall(r"rule_id: (\S+)", user)
            older = re.search(r"faq-old-False-\d+", user).group(0)
            return {"verdicts": [{"rule_id": rid, "reasoning": "older page", "holds": True, "winner": older}
                                 for rid in rule_ids]}
        return http_error(500)

    macr_llm.respond = respond
    run = rule_induction_run(knowledge_base=kb)
    assert run.status == InductionStatus.DONE, run.reason
    assert run.llm_calls >= 2
    induced = ResolutionRule.objects.get(knowledge_base=kb, origin=RuleOrigin.INDUCED)
    assert induced.kind == RuleKind.TEXTUAL and induced.status == RuleStatus.ACTIVE
    assert induced.support == 1.0 and induced.coverage == 1.0
    assert ResolutionRule.objects.get(knowledge_base=kb, rule_id="newer-content-date-wins").status == RuleStatus.RETIRED


@pytest.mark.django_db
def test_induction_llm_failure_leaves_the_rule_base_unchanged(kb, macr_llm):
    from conflicts.models import InductionStatus, ResolutionRule, RuleStatus
    from conflicts.services.induction import rule_induction_run
    from tests.conflicts.test_suggestions import reviewed_pairs

    reviewed_pairs(kb, 12, newer_wins=False)
    macr_llm.respond = lambda request: http_error(503)
    run = rule_induction_run(knowledge_base=kb)
    assert run.status == InductionStatus.FAILED and "unchanged" in run.reason
    assert set(ResolutionRule.objects.filter(knowledge_base=kb).values_list("status", flat=True)) == {RuleStatus.ACTIVE}
