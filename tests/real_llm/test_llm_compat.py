"""Every LLM path against a real llama-cpp-python server with Gemma 3 270M (scripts/llm_compat.sh).

These check what the project controls: each purpose's request is accepted, its reply parses
against its schema (the server's grammar guarantees the shape), every call stays within its
max_tokens, log-probabilities come back where asked for, and a server dying mid-call fails open.
They never check the model's judgement: a 270M model has none worth testing.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
import time

import pytest
from django.core.management import call_command

from agents.answer import Passage, generate_answer
from agents.llm import (
    LLMError,
    complete_json,
    complete_json_reply,
    forget_learnt_endpoints,
    generate_with_top_logprobs,
    learnt_json_mode,
    sample_texts,
    schema_problem,
)
from agents.llm_detector import CONFLICT_TYPES, NO_CONFLICT_TYPE, detect_with_llm
from agents.types import ArticleText
from articles.embeddings import embed_texts
from tests.real_llm.conftest import CALL_TIMEOUT_S

pytestmark = pytest.mark.real_llm

NOW = dt.date(2026, 3, 1)
ARTICLES = [
    ArticleText(ref="kb-1", title="Parking", body="Parking at the north gate costs 4 euros per hour.",
                updated_at=dt.date(2025, 2, 1)),
    ArticleText(ref="kb-2", title="Parking 2026", body="From January 2026, parking at the north gate costs 5 euros per hour.",
                updated_at=dt.date(2026, 1, 10), source="pdf"),
    ArticleText(ref="kb-3", title="Opening hours", body="The visitor centre opens at 9:00 every day."),
]
SHORT_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def as_json_lines(*records: dict) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def test_json_schema_is_refused_and_auto_falls_back_to_json_object_with_the_schema(llama_server):
    forget_learnt_endpoints()
    with pytest.raises(LLMError) as refused:
        complete_json(config=llama_server.config(json_mode="json_schema"), system="Answer briefly.",
                      user="What colour is the sky?", schema=SHORT_SCHEMA, schema_name="short", max_tokens=48)
    assert refused.value.reason == "http_error" and refused.value.status in (400, 422, 500)
    config = llama_server.config(json_mode="auto")
    reply = complete_json_reply(config=config, system="Answer briefly.", user="What colour is the sky?",
                                schema=SHORT_SCHEMA, schema_name="short", max_tokens=48)
    assert (reply.json_mode, reply.calls) == ("json_object", 2)
    assert schema_problem(reply.parsed, SHORT_SCHEMA) is None
    assert learnt_json_mode(config) == "json_object"


def test_detection_answers_in_its_schema_within_its_budget(llama_server):
    pairs = [("kb-1", "kb-2")]
    result = detect_with_llm(articles=ARTICLES[:2], pairs=pairs, config=llama_server.config(), now=NOW)
    assert result.llm_calls >= 1 and result.tokens > 0
    assert all(finding.refs in pairs and finding.type in (*CONFLICT_TYPES, NO_CONFLICT_TYPE) for finding in result.findings)
    assert set(result.judged_pairs) <= set(pairs)


def test_detect_conflicts_command_writes_contract_lines(llama_server, tmp_path):
    source, target = tmp_path / "sets.jsonl", tmp_path / "out.jsonl"
    articles = [{"ref": a.ref, "title": a.title, "body": a.body, "source": a.source,
                 "updated_at": a.updated_at.isoformat() if a.updated_at else None} for a in ARTICLES]
    source.write_text(as_json_lines({"id": "set-1", "now": NOW.isoformat(), "articles": articles[:2]},
                                    {"id": "set-2", "now": NOW.isoformat(), "articles": articles[1:]}))
    call_command("detect_conflicts", input=str(source), output=str(target), detector="llm",
                 base_url=llama_server.base_url, model="gemma-3-270m", timeout=CALL_TIMEOUT_S)
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["set-1", "set-2"]
    assert lines[0]["llm_calls"] >= 1  # two articles on one subject: the LLM is asked
    for line in lines:
        assert "error" not in line
        if line["llm_calls"]:  # set-2's articles share no subject and may never reach the LLM
            assert set(line["dropped"]) == {"invented_refs", "bad_snippets"}
        assert all(len(conflict["refs"]) == 2 for conflict in line["conflicts"])


def test_the_answer_path_returns_a_reply(llama_server):
    passages = [Passage(ref=a.ref, title=a.title, text=a.body) for a in ARTICLES[:2]]
    answer = generate_answer(question="How much is parking?", passages=passages, config=llama_server.config(), embed=embed_texts)
    assert isinstance(answer.reply, str) and answer.llm_calls == 1 and answer.tokens > 0
    assert set(answer.citations) <= {"kb-1", "kb-2"}


def test_max_tokens_holds(logprob_llama_server):
    generated = generate_with_top_logprobs(config=logprob_llama_server.config(), user="Tell a long story about the sea.",
                                           top_k=1, max_tokens=8)
    assert generated.finish_reason == "length"
    assert generated.tokens is not None and len(generated.tokens) <= 8


def test_top_logprobs_come_back_from_chat_and_completions(logprob_llama_server):
    for kwargs in ({"user": "Name a colour."}, {"prompt": "The three primary colours are red,"}):
        generated = generate_with_top_logprobs(config=logprob_llama_server.config(), top_k=3, max_tokens=6, **kwargs)
        assert generated.tokens, kwargs
        for token in generated.tokens:
            assert token.logprob <= 0.0 and 1 <= len(token.top) <= 3
            assert [lp for _, lp in token.top] == sorted((lp for _, lp in token.top), reverse=True)


def test_sampling_gets_n_samples_with_sequence_logprobs_although_n_is_ignored(logprob_llama_server):
    texts, tokens = sample_texts(config=logprob_llama_server.config(), system="Answer in a few words.",
                                 user="What is the capital of France?", n=3, temperature=1.0, top_p=0.9,
                                 logprobs=True, max_tokens=16)
    assert len(texts) == 3 and tokens > 0
    assert all(sample.logprob_sum is not None and sample.logprob_sum <= 0.0 for sample in texts)


def test_macr_eval_runs_with_every_call_bounded(llama_server, tmp_path):
    # This server's schema grammar lets raw newlines into strings and the model writes them (the
    # synthesis step quoted its prompt): parsed as text since 2026-12-01, not "invalid JSON".
    (tmp_path / "conflictbank").mkdir()
    (tmp_path / "kb-conflicts-dev").mkdir()
    evidence = [{"type": "correct", "text": "The Larkspur bridge opened in 1931."},
                {"type": "misinformation", "text": "The Larkspur bridge opened in 1952."}]
    (tmp_path / "conflictbank" / "items.jsonl").write_text(as_json_lines(
        {"raw_idx": 1, "question": "When did the Larkspur bridge open?", "answer": "1931", "subject": "Larkspur bridge",
         "evidence": evidence}))
    articles = [{"ref": a.ref, "title": a.title, "body": a.body, "source": a.source,
                 "updated_at": a.updated_at.isoformat() if a.updated_at else None} for a in ARTICLES[:2]]
    (tmp_path / "kb-conflicts-dev" / "dev.jsonl").write_text(as_json_lines(
        {"id": "s1", "question": "How much is parking?", "now": NOW.isoformat(), "articles": articles,
         "conflicts": [{"refs": ["kb-1", "kb-2"], "type": "price", "correct": "kb-2"}]}))
    common = ["--data-dir", str(tmp_path), "--base-url", llama_server.base_url, "--model", "gemma-3-270m",
              "--timeout", str(CALL_TIMEOUT_S)]
    call_command("macr_eval", "--dataset", "conflictbank", "--methods", "direct,icl", "--contexts", "2",
                 "--output", str(tmp_path / "cb.jsonl"), *common, stdout=open(tmp_path / "table-cb.txt", "w"))
    call_command("macr_eval", "--dataset", "kb-conflicts-dev", "--methods", "macr_no_kar",
                 "--output", str(tmp_path / "kb.jsonl"), *common, stdout=open(tmp_path / "table-kb.txt", "w"))
    records = [json.loads(line) for name in ("cb.jsonl", "kb.jsonl") for line in (tmp_path / name).read_text().splitlines()]
    assert [record["method"] for record in records] == ["direct", "icl", "macr_no_kar"]
    for record in records:
        # No LLM call failed (refused, cut, unparsable, off-schema, timed out); a judgement MACR
        # refuses to believe is the model's business, not the project's.
        assert not record["errors"], record
        assert record["llm_calls"] >= 1


def test_a_server_killed_mid_call_fails_open(own_llama_server, tmp_path):
    source, target = tmp_path / "sets.jsonl", tmp_path / "out.jsonl"
    articles = [{"ref": a.ref, "title": a.title, "body": a.body * 20} for a in ARTICLES]
    source.write_text(as_json_lines({"id": "set-1", "articles": articles}))
    killer = threading.Timer(1.0, own_llama_server.kill)
    started = time.monotonic()
    killer.start()
    try:
        call_command("detect_conflicts", input=str(source), output=str(target), detector="llm", fail_open=True,
                     base_url=own_llama_server.base_url, timeout=CALL_TIMEOUT_S, max_tokens=3000)
    finally:
        killer.cancel()
    elapsed = time.monotonic() - started
    (line,) = [json.loads(text) for text in target.read_text().splitlines()]
    assert line["conflicts"] == [] and line["error"]["kind"] == "http_error", line
    assert line["error"]["detail"]
    assert elapsed < CALL_TIMEOUT_S / 2  # the dead server was noticed, not waited out
