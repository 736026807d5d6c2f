"""manage.py detect_conflicts: the JSON Lines contract of ARCHITECTURE.md, with no database.

No test here is marked for database access, so pytest-django fails any that touches one.
"""
from __future__ import annotations

import json
import sys
import types

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.types import ConflictFinding
from tests.support.scripted_llm import answer, http_error, verdict, verdicts

SET_1 = {
    "id": "set-1",
    "question": "How much is a ticket?",
    "now": "2025-03-01",
    "labels": {"conflicts": [["faq-12", "faq-40"]]},  # a labelled file's extra keys are ignored
    "articles": [
        {"ref": "faq-40", "title": "Tickets 2025", "body": "From 2025 an adult ticket costs €29.",
         "updated_at": "2025-01-02", "source": "pdf", "rank": 1},
        {"ref": "faq-12", "title": "Ferry prices", "body": "An adult ticket costs €25.",
         "updated_at": "2024-01-05T09:00:00Z", "source": "faq"},
    ],
}
SET_SINGLE = {"id": 7, "question": "Hours?", "articles": [{"ref": "faq-77", "title": "Hours", "body": "Open at 8."}]}


@pytest.fixture
def no_llm_settings(settings):
    settings.LLM = {"base_url": None, "api_key": "not-needed", "model": "m", "timeout_s": 5.0, "json_mode": "json_schema"}
    settings.LLM_PURPOSES = {"detection": {"base_url": None, "api_key": None, "model": None,
                                           "timeout_s": None, "json_mode": None}}
    return settings


def write_sets(path, *lines) -> str:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return str(path)


def run(tmp_path, *lines, **options) -> list[dict]:
    source = write_sets(tmp_path / "sets.jsonl", *lines)
    target = tmp_path / "out.jsonl"
    call_command("detect_conflicts", input=source, output=str(target), **options)
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


PRICE_ANSWER = verdicts(verdict("faq-40", "faq-12", type="price", explanation="€29 vs €25",
                                snippets={"faq-12": "costs €25", "faq-40": "costs €29"}))


def test_llm_detector_writes_one_contract_line_per_set(tmp_path, scripted_llm, no_llm_settings):
    no_llm_settings.LLM_PURPOSES["detection"].update(base_url=scripted_llm.base_url, model="detector-mini")
    scripted_llm.push(answer(PRICE_ANSWER))
    lines = run(tmp_path, SET_1, SET_SINGLE, detector="llm")
    assert lines == [
        {"id": "set-1", "llm_calls": 1, "conflicts": [{
            "refs": ["faq-12", "faq-40"], "type": "price", "explanation": "€29 vs €25",
            "snippets": {"faq-12": "costs €25", "faq-40": "costs €29"}, "detector": "llm", "confidence": 1.0,
        }], "dropped": {"invented_refs": 0, "bad_snippets": 0}},
        {"id": 7, "conflicts": [], "llm_calls": 0},  # one article: skipped, nothing called
    ]
    (request,) = scripted_llm.requests
    assert request["model"] == "detector-mini"
    user = request["messages"][1]["content"]
    assert "Today is 2025-03-01." in user and 'updated="2024-01-05"' in user


def test_command_line_overrides_the_endpoint_model_and_json_mode(tmp_path, scripted_llm, no_llm_settings):
    scripted_llm.push(answer(PRICE_ANSWER))
    lines = run(tmp_path, SET_1, detector="llm", base_url=scripted_llm.base_url, model="llama-3b",
                json_mode="json_object")
    assert lines[0]["conflicts"][0]["refs"] == ["faq-12", "faq-40"]
    (request,) = scripted_llm.requests
    assert request["model"] == "llama-3b"
    assert request["response_format"]["type"] == "json_object"


def test_llm_detector_without_an_llm_is_a_clear_error(tmp_path, scripted_llm, no_llm_settings):
    with pytest.raises(CommandError, match="needs an LLM"):
        run(tmp_path, SET_1, detector="llm")
    assert not (tmp_path / "out.jsonl").exists()


def test_an_llm_failure_stops_the_run_unless_fail_open(tmp_path, scripted_llm, no_llm_settings):
    scripted_llm.push(http_error(500))
    with pytest.raises(CommandError, match="http_error"):
        run(tmp_path, SET_1, detector="llm", base_url=scripted_llm.base_url)
    scripted_llm.push(http_error(500))
    lines = run(tmp_path, SET_1, detector="llm", base_url=scripted_llm.base_url, fail_open=True)
    assert lines == [{"id": "set-1", "conflicts": [], "llm_calls": 1,
                      "error": {"kind": "http_error", "detail": "HTTP 500: scripted failure"}}]


def test_auto_detector_runs_claims_then_the_llm_on_the_rest(tmp_path, scripted_llm, no_llm_settings, monkeypatch):
    flagged = ConflictFinding(refs=("faq-12", "faq-40"), type="price", explanation="claims: €25 vs €29",
                              snippets={"faq-12": "€25", "faq-40": "€29"})
    monkeypatch.setitem(sys.modules, "agents.claims", types.SimpleNamespace(
        detect_claim_conflicts=lambda *, articles, now, vectors=None, judge=None: [flagged] if len(articles) > 1 else []))
    third = {"ref": "faq-77", "title": "Office", "body": "The office sells tickets for €25."}
    scripted_llm.push(answer(verdicts(verdict("faq-77", "faq-40", conflict=False))))
    lines = run(tmp_path, {**SET_1, "articles": [*SET_1["articles"], third]}, detector="auto",
                base_url=scripted_llm.base_url)
    user = scripted_llm.requests[0]["messages"][1]["content"]
    assert "faq-40 | faq-77\nfaq-12 | faq-77" in user  # in rank order
    assert "faq-12 | faq-40" not in user
    assert lines == [{"id": "set-1", "conflicts": [flagged.as_json()], "llm_calls": 1,
                      "dropped": {"invented_refs": 0, "bad_snippets": 0}}]


@pytest.mark.parametrize("bad_line, message", [
    ("{not json", "line 2: not valid JSON"),
    (json.dumps({"question": "q", "articles": []}), "line 2: field 'id'"),
    (json.dumps({"id": "x", "articles": "faq-1"}), "line 2: field 'articles'"),
    (json.dumps({"id": "x", "articles": [{"title": "t", "body": "b"}]}), "line 2: field 'articles[0].ref'"),
    (json.dumps({"id": "x", "articles": [{"ref": "r", "body": "b", "updated_at": "last May"}]}),
     "line 2: field 'articles[0].updated_at'"),
    (json.dumps({"id": "x", "now": 20250301, "articles": []}), "line 2: field 'now'"),
    (json.dumps({"id": "x", "articles": [{"ref": "r", "title": "", "body": ""}]}), "line 2: field 'articles[0].body'"),
])
def test_a_bad_input_line_names_its_line_and_field(tmp_path, scripted_llm, no_llm_settings, bad_line, message):
    with pytest.raises(CommandError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run(tmp_path, SET_SINGLE, bad_line, detector="llm", base_url=scripted_llm.base_url)
    assert scripted_llm.requests == []  # every line is checked before anything runs


def test_blank_lines_are_skipped(tmp_path, no_llm_settings, monkeypatch):
    monkeypatch.setitem(sys.modules, "agents.claims",
                        types.SimpleNamespace(detect_claim_conflicts=lambda *, articles, now, vectors=None, judge=None: []))
    lines = run(tmp_path, SET_SINGLE, "", SET_1, detector="claims")
    assert lines == [{"id": 7, "conflicts": [], "llm_calls": 0}, {"id": "set-1", "conflicts": [], "llm_calls": 0}]
