"""manage.py macr_eval on a tiny hand-made dataset against the scripted server: the harness computes its metrics right.

Expected figures are worked out by hand in the comments. No database, no /work/shared.
"""
from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.macr.evaluation import all_gold_no_wrong, exact_match, lcs_length, normalise_text, rouge_l_f
from tests.support.scripted_llm import message_text

EVIDENCE_TYPES = ("correct", "misinformation", "temporal", "semantic")


def write_datasets(root):
    (root / "conflictbank").mkdir()
    (root / "ramdocs").mkdir()
    (root / "kb-conflicts-dev").mkdir()
    conflictbank = [
        {"raw_idx": 1, "question": "Which organization did Ann Ruus work for?", "answer": "University of Oslo",
         "subject": "Ann Ruus", "evidence": [{"type": t, "text": f"Ann Ruus {t} evidence."} for t in EVIDENCE_TYPES]},
        {"raw_idx": 2, "question": "What is the capital of Gallia?", "answer": "Paris",
         "subject": "Gallia", "evidence": [{"type": t, "text": f"Gallia {t} evidence."} for t in EVIDENCE_TYPES]},
    ]
    (root / "conflictbank" / "grouped.jsonl").write_text("\n".join(map(json.dumps, conflictbank)) + "\n")
    (root / "conflictbank" / "notes.jsonl").write_text(json.dumps({"unrelated": True}) + "\n")  # not the data file
    ramdocs = {"question": "Who founded Acme?", "gold_answers": ["Kate Smith", "John Doe"], "wrong_answers": ["Bob Roe"],
               "disambig_entity": ["Acme (shop)", "Acme (band)"],
               "documents": [{"text": "Acme shop was founded by Kate Smith.", "type": "correct", "answer": "Kate Smith"},
                             {"text": "Acme band was founded by John Doe.", "type": "correct", "answer": "John Doe"},
                             {"text": "Acme was founded by Bob Roe.", "type": "misinfo", "answer": "Bob Roe"}]}
    (root / "ramdocs" / "RAMDocs_test.jsonl").write_text(json.dumps(ramdocs) + "\n")
    kb = {"id": "set-1", "question": "How much is a single?", "now": "2026-03-01",
          "articles": [{"ref": "kb-1", "title": "Fares", "body": "A single costs €25.", "updated_at": "2025-01-01", "source": "faq"},
                       {"ref": "kb-2", "title": "Fares 2026", "body": "A single costs €29.", "updated_at": "2026-01-01", "source": "faq"},
                       {"ref": "kb-3", "title": "Fares (web)", "body": "A single costs €27.", "updated_at": "2026-01-01", "source": "web"}],
          "conflicts": [{"refs": ["kb-1", "kb-2"], "type": "price", "correct": "kb-2", "why": "newer"},
                        {"refs": ["kb-2", "kb-3"], "type": "price", "correct": None, "why": "same date"}]}
    (root / "kb-conflicts-dev" / "dev.jsonl").write_text(json.dumps(kb) + "\n")


DIRECT = {"Which organization did Ann Ruus work for?": "Oslo University", "What is the capital of Gallia?": "paris.",
          "Who founded Acme?": "Kate Smith"}
ICL = {"Which organization did Ann Ruus work for?": "The University of Oslo", "What is the capital of Gallia?": "Lyon",
       "Who founded Acme?": "Kate Smith; John Doe; Bob Roe", "How much is a single?": "kb-2"}


def respond(request):
    system, user = message_text(request, "system"), message_text(request, "user")
    question = re.search(r"Question: (.*)", user).group(1).strip()
    name = request["response_format"]["json_schema"]["name"]
    if name == "macr_source_answer":
        return {"answer": "same everywhere", "quote": ""}
    if name == "macr_synthesis":
        return {"explanation": "", "answer": DIRECT[question], "winner": "cannot tell", "proposed_edit": "", "confidence": 0.5}
    if system.startswith("Answer the question from your own knowledge"):
        return {"answer": DIRECT[question]}
    return {"answer": ICL[question]}


def run_eval(tmp_path, scripted_llm, *extra):
    write_datasets(tmp_path)
    scripted_llm.respond = respond
    output = tmp_path / "predictions.jsonl"
    stdout = StringIO()
    call_command("macr_eval", "--base-url", scripted_llm.base_url, "--model", "scripted", "--data-dir", str(tmp_path),
                 "--output", str(output), *extra, stdout=stdout)
    records = [json.loads(line) for line in output.read_text().splitlines()]
    return stdout.getvalue(), records


def row(table: str, method: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(method + " "))
    return line.split()[1:]


def test_em_and_rouge_l_per_dataset_and_method_on_a_hand_made_dataset(tmp_path, scripted_llm):
    table, records = run_eval(tmp_path, scripted_llm, "--dataset", "all", "--methods", "direct,icl", "--contexts", "2,3")
    by_key = {(r["dataset"], r["id"], r["method"]): r for r in records}
    # ConflictBank, gold "University of Oslo":
    #   "Oslo University": EM 0; LCS([oslo, university], [university, of, oslo]) = 1 → P 1/2, R 1/3, F = 0.4
    #   "The University of Oslo": articles dropped → EM 1, ROUGE-L 1
    assert by_key[("conflictbank N=2", "1", "direct")]["em"] == 0.0
    assert by_key[("conflictbank N=2", "1", "direct")]["rouge_l"] == 0.4
    assert by_key[("conflictbank N=3", "1", "icl")]["em"] == 1.0
    #   "paris." vs "Paris": EM 1; "Lyon": 0 / 0
    assert by_key[("conflictbank N=2", "2", "direct")]["em"] == 1.0
    assert by_key[("conflictbank N=2", "2", "icl")]["rouge_l"] == 0.0
    # RAMDocs, golds Kate Smith + John Doe, wrong Bob Roe, ROUGE-L against "Kate Smith; John Doe":
    #   "Kate Smith": misses a gold → EM 0; LCS 2 of pred 2 / ref 4 → F = 2·1·0.5/1.5 = 2/3
    #   "Kate Smith; John Doe; Bob Roe": all golds but also a wrong answer → EM 0; LCS 4 of 6 / 4 → F = 0.8
    assert (by_key[("ramdocs", "0", "direct")]["em"], by_key[("ramdocs", "0", "direct")]["rouge_l"]) == (0.0, 0.6667)
    assert (by_key[("ramdocs", "0", "icl")]["em"], by_key[("ramdocs", "0", "icl")]["rouge_l"]) == (0.0, 0.8)
    # kb-conflicts-dev: "kb-2" is right for the first pair, wrong where the label is "cannot tell";
    # direct (closed book) is not run on arbitration items
    assert by_key[("kb-conflicts-dev", "set-1:kb-1|kb-2", "icl")]["em"] == 1.0
    assert by_key[("kb-conflicts-dev", "set-1:kb-2|kb-3", "icl")]["em"] == 0.0
    assert ("kb-conflicts-dev", "set-1:kb-1|kb-2", "direct") not in by_key

    # the printed table: per dataset EM %, ROUGE-L %, calls per question
    header = next(line for line in table.splitlines() if line.startswith("method"))
    assert header.split()[1:] == ["conflictbank", "N=2", "conflictbank", "N=3", "ramdocs", "kb-conflicts-dev"]
    assert row(table, "direct") == ["50.0", "70.0", "1.0", "50.0", "70.0", "1.0", "0.0", "66.7", "1.0", "n/a"]
    assert row(table, "icl") == ["50.0", "50.0", "1.0", "50.0", "50.0", "1.0", "0.0", "80.0", "1.0",
                                 "50.0", "50.0", "1.0"]

    # N contexts: correct + misinformation (+ temporal), each in its own delimited source
    icl_prompts = [message_text(r, "user") for r in scripted_llm.requests
                   if "Ann Ruus" in message_text(r, "user") and "sources below" in message_text(r, "system")]
    assert sorted(p.count("<source ") for p in icl_prompts) == [2, 3]
    three = next(p for p in icl_prompts if p.count("<source ") == 3)
    assert all(f"Ann Ruus {t} evidence." in three for t in EVIDENCE_TYPES[:3]) and "semantic" not in three


def test_macr_without_assessment_counts_its_calls_and_scores_the_synthesised_answer(tmp_path, scripted_llm):
    table, records = run_eval(tmp_path, scripted_llm, "--dataset", "conflictbank", "--methods", "macr_no_kar",
                              "--contexts", "2", "--limit", "1")
    (record,) = records
    # 2 per-context answers (identical → no comparison call) + 1 synthesis; answer "Oslo University" as above
    assert (record["llm_calls"], record["em"], record["rouge_l"]) == (3, 0.0, 0.4)
    assert row(table, "macr_no_kar") == ["0.0", "40.0", "3.0"]


def test_a_failing_endpoint_scores_zero_and_is_counted(tmp_path, scripted_llm):
    write_datasets(tmp_path)
    scripted_llm.respond = lambda request: {"wrong": "shape"}
    stdout = StringIO()
    call_command("macr_eval", "--base-url", scripted_llm.base_url, "--data-dir", str(tmp_path), "--dataset", "ramdocs",
                 "--methods", "icl", stdout=stdout)
    assert row(stdout.getvalue(), "icl") == ["0.0", "0.0", "1.0"]
    assert "failed predictions (scored 0): 1" in stdout.getvalue()


def test_bad_arguments_are_refused(tmp_path, scripted_llm):
    write_datasets(tmp_path)
    with pytest.raises(CommandError, match="unknown method"):
        call_command("macr_eval", "--base-url", scripted_llm.base_url, "--data-dir", str(tmp_path), "--methods", "magic")
    with pytest.raises(CommandError, match="--contexts"):
        call_command("macr_eval", "--base-url", scripted_llm.base_url, "--data-dir", str(tmp_path), "--contexts", "5")


def test_metric_functions_on_hand_computed_cases():
    assert normalise_text("The  University, of Oslo!") == "university of oslo"
    assert exact_match("an apple", "Apple.")
    assert lcs_length("a b c d".split(), "b d x".split()) == 2
    # [police, killed, gunman] vs [police, kill, gunman]: LCS 2 → P = R = 2/3 → F = 2/3
    assert rouge_l_f("police killed the gunman", "police kill the gunman") == pytest.approx(2 / 3)
    # [police, killed, gunman] vs [gunman, was, killed, by, police]: LCS 1 → P 1/3, R 1/5 → F = 0.25
    assert rouge_l_f("police killed the gunman", "the gunman was killed by police") == pytest.approx(0.25)
    assert rouge_l_f("", "x") == 0.0
    assert all_gold_no_wrong("Kate Smith and John Doe", ["kate smith", "John Doe"], ["Bob"])
    assert not all_gold_no_wrong("Kate Smithson; John Doe", ["Kate Smith", "John Doe"], [])  # whole words only


def test_failures_keep_their_detail_and_are_counted_by_reason(tmp_path, scripted_llm):
    table, _ = run_eval(tmp_path, scripted_llm, "--dataset", "ramdocs", "--methods", "direct,icl")
    assert "LLM errors by reason: none" in table and "json_mode=auto (json_schema)" in table
    scripted_llm.respond = lambda request: {"answer": "x" * 4000}  # cut by every step's budget
    stdout = StringIO()
    output = tmp_path / "failed.jsonl"
    call_command("macr_eval", "--base-url", scripted_llm.base_url, "--data-dir", str(tmp_path), "--dataset", "ramdocs",
                 "--methods", "direct,icl", "--max-tokens", "50", "--output", str(output), stdout=stdout)
    failed = [json.loads(line) for line in output.read_text().splitlines()]
    assert [record["failure"] for record in failed] == [
        f"{method}: LLM output_cut (output cut at 50 tokens (max_tokens) before the JSON was complete)"
        for method in ("direct", "icl")]
    assert [record["llm_calls"] for record in failed] == [1, 1]
    assert "LLM errors by reason: output_cut 2" in stdout.getvalue()


def test_the_json_mode_defaults_to_the_setting(tmp_path, scripted_llm, settings):
    settings.LLM = {**settings.LLM, "json_mode": "json_object"}
    run_eval(tmp_path, scripted_llm, "--dataset", "ramdocs", "--methods", "icl")
    assert scripted_llm.requests[0]["response_format"]["type"] == "json_object"


def test_without_an_endpoint_the_command_says_what_to_set(tmp_path, settings):
    write_datasets(tmp_path)
    settings.LLM = {**settings.LLM, "base_url": None}
    with pytest.raises(CommandError, match="--base-url"):
        call_command("macr_eval", "--data-dir", str(tmp_path), "--dataset", "ramdocs", "--methods", "icl")
