"""agents.llm.sampling against a real OpenAI-compatible server on loopback (tests.support.scripted_llm)."""
from __future__ import annotations

import pytest

from agents.llm.client import LLMError
from agents.llm.sampling import sample_texts
from tests.support.scripted_llm import (
    Reply,
    answer,
    http_error,
    samples,
    slow,
)


def test_sample_texts_asks_for_n_choices_and_sums_their_logprobs(scripted_llm):
    scripted_llm.push(samples(["Paris", "Lyon", "Paris"], logprobs=[[-0.5, -0.25], [-2.0], [-0.5, -0.5]]))
    texts, tokens = sample_texts(config=scripted_llm.config(), system="s", user="Capital?", n=3,
                                 temperature=0.7, top_p=0.95, logprobs=True)
    assert [sample.text for sample in texts] == ["Paris", "Lyon", "Paris"]
    assert [sample.logprob_sum for sample in texts] == [pytest.approx(-0.75), pytest.approx(-2.0), pytest.approx(-1.0)]
    assert tokens > 0
    (request,) = scripted_llm.requests
    assert request["n"] == 3 and request["logprobs"] is True
    assert request["temperature"] == 0.7 and request["top_p"] == 0.95
    assert "response_format" not in request
    assert request["stop"] == ["\n"]  # one short phrase on one line


def test_sample_texts_asks_again_when_the_endpoint_ignores_n(scripted_llm):
    # llama.cpp's server returns one choice whatever n is; and gives no logprobs here
    scripted_llm.push(answer("one"), answer("two"), answer("three"))
    texts, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=3,
                            temperature=1.0, top_p=1.0, logprobs=True)
    assert [sample.text for sample in texts] == ["one", "two", "three"]
    assert [sample.logprob_sum for sample in texts] == [None, None, None]
    assert [request.get("n") for request in scripted_llm.requests] == [3, 2, None]


def test_sample_texts_timeout_is_an_llm_error(scripted_llm):
    scripted_llm.push(slow(5.0, "late"))
    with pytest.raises(LLMError) as raised:
        sample_texts(config=scripted_llm.config(timeout_s=0.3), system="s", user="u", n=1,
                     temperature=1.0, top_p=1.0, logprobs=False)
    assert raised.value.reason == "timeout"


def test_sample_texts_sets_top_logprobs_so_llama_cpp_returns_them_and_asks_again_for_ignored_n(llama_cpp_like):
    llama_cpp_like.push(*(Reply(contents=(text,), logprobs=((-0.5, -0.5),)) for text in ("a", "b", "c")))
    texts, _ = sample_texts(config=llama_cpp_like.config(), system="s", user="u", n=3, temperature=1.0,
                            top_p=0.9, logprobs=True, max_tokens=16)
    assert [sample.logprob_sum for sample in texts] == [-1.0, -1.0, -1.0]
    assert all(request["top_logprobs"] == 1 and request["logprobs"] is True for request in llama_cpp_like.requests)
    assert [request.get("n") for request in llama_cpp_like.requests] == [3, 2, None]
    assert {request["max_tokens"] for request in llama_cpp_like.requests} == {16}


def test_missing_log_probabilities_are_none_and_logged_once_per_endpoint(scripted_llm, caplog):
    scripted_llm.push(samples(["a", "b"]), samples(["c"]))
    with caplog.at_level("WARNING", logger="agents.llm"):
        first, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=2, temperature=1.0,
                                top_p=1.0, logprobs=True)
        second, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=1, temperature=1.0,
                                 top_p=1.0, logprobs=True)
    assert [sample.logprob_sum for sample in first + second] == [None, None, None]
    assert sum("no log-probabilities" in record.getMessage() for record in caplog.records) == 1


def test_a_failed_sampling_counts_the_samples_received_and_the_failed_request(llama_cpp_like):
    llama_cpp_like.push(answer("one"), http_error(503))
    with pytest.raises(LLMError) as raised:
        sample_texts(config=llama_cpp_like.config(), system="s", user="u", n=5, temperature=1.0, top_p=1.0,
                     logprobs=False)
    assert raised.value.calls == 2  # not 5: one sample came back, then one request failed


def test_an_endpoint_that_refuses_log_probabilities_is_sampled_without_them_from_then_on(scripted_llm, caplog):
    scripted_llm.push(http_error(500, "logprobs is not supported for models created with logits_all=False"),
                      answer("one"), answer("two"))
    with caplog.at_level("WARNING", logger="agents.llm"):
        first, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=1, temperature=1.0, top_p=1.0,
                                logprobs=True)
        second, _ = sample_texts(config=scripted_llm.config(), system="s", user="u", n=1, temperature=1.0, top_p=1.0,
                                 logprobs=True)
    assert [sample.text for sample in first + second] == ["one", "two"]
    assert [sample.logprob_sum for sample in first + second] == [None, None]
    assert ["logprobs" in request for request in scripted_llm.requests] == [True, False, False]
    assert sum("refused log-probabilities" in record.getMessage() for record in caplog.records) == 1
    assert not any("although asked" in record.getMessage() for record in caplog.records)  # not asked after that
