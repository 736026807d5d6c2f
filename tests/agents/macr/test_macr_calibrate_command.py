"""manage.py calibrate_entropy against the scripted server: τ is the lowest entropy of a wrong answer."""
from __future__ import annotations

import json
import math
from io import StringIO

import pytest
from django.core.management import call_command

from tests.support.scripted_llm import message_text, samples


def test_tau_sits_at_the_first_wrong_answer_and_is_stored(tmp_path, scripted_llm):
    (tmp_path / "conflictbank").mkdir()
    records = [
        {"raw_idx": 1, "question": "Which foundation did Ann Ruus work for?", "answer": "Ruus Foundation",
         "evidence": [{"type": t, "text": "x"} for t in ("correct", "misinformation")]},
        {"raw_idx": 2, "question": "What is the capital of Gallia?", "answer": "Paris",
         "evidence": [{"type": t, "text": "y"} for t in ("correct", "misinformation")]},
    ]
    (tmp_path / "conflictbank" / "cb.jsonl").write_text("\n".join(map(json.dumps, records)) + "\n")

    def respond(request):
        if "Ann Ruus" in message_text(request, "user"):
            return samples(["Ruus Foundation"] * request["n"])  # consistent, shares a word with the question: low H
        return samples([f"guess{i}" for i in range(request["n"])])  # scattered and wrong: H = −log 5

    scripted_llm.respond = respond
    stdout = StringIO()
    call_command("calibrate_entropy", "--base-url", scripted_llm.base_url, "--data-dir", str(tmp_path),
                 "--embedder", "lexical", "--no-logprobs", "--output", str(tmp_path / "tau.json"), stdout=stdout)
    stored = json.loads((tmp_path / "tau.json").read_text())
    assert stored["tau"] == pytest.approx(-math.log(5))
    assert (stored["questions"], stored["correct"], stored["below_tau"]) == (2, 1, 1)
    assert "1 of 2 questions below it" in stdout.getvalue()
