"""agents.llm.logprobs: both shapes servers send, over chat and completions (tests.support.scripted_llm)."""
from __future__ import annotations

from agents.llm.logprobs import generate_with_top_logprobs, token_logprobs
from tests.support.scripted_llm import (
    COMPLETIONS_SHAPED_LOGPROBS,
    LLAMA_CPP_QUIRKS,
    Reply,
    ScriptedLLM,
    answer,
)


def test_token_logprobs_reads_the_chat_and_the_completions_shapes():
    chat = {"content": [{"token": "Pa", "logprob": -0.1, "top_logprobs": [{"token": "Ly", "logprob": -3.0},
                                                                         {"token": "Pa", "logprob": -0.1}]},
                        {"token": "ris", "logprob": -0.2, "top_logprobs": []}]}
    completions = {"tokens": ["Pa", "ris"], "token_logprobs": [-0.1, -0.2],
                   "top_logprobs": [{"Ly": -3.0, "Pa": -0.1}, {"ris": -0.2}], "text_offset": [0, 2]}
    from_chat, from_completions = token_logprobs(chat), token_logprobs(completions)
    assert [(t.token, t.logprob) for t in from_chat] == [("Pa", -0.1), ("ris", -0.2)]
    assert from_chat[0].top == (("Pa", -0.1), ("Ly", -3.0))  # best first
    assert from_completions == from_chat[:1] + [from_completions[1]]
    assert from_completions[1].top == (("ris", -0.2),)
    assert token_logprobs(None) is None and token_logprobs({"content": None, "refusal": None}) is None


def test_generate_with_top_logprobs_over_chat_in_either_shape_and_over_completions():
    for quirks in (frozenset(), LLAMA_CPP_QUIRKS | {COMPLETIONS_SHAPED_LOGPROBS}):
        with ScriptedLLM(quirks=quirks) as server:
            server.push(Reply(contents=("Paris",), logprobs=((-0.1, -0.2),)))
            generated = generate_with_top_logprobs(config=server.config(), user="Capital?", top_k=3, max_tokens=8)
            assert generated.text == "Paris" and generated.finish_reason == "stop"
            assert [len(token.top) for token in generated.tokens] == [3, 3]
            assert generated.tokens[0].top[0] == ("t0", -0.1)
            assert server.requests[0]["top_logprobs"] == 3 and server.requests[0]["max_tokens"] == 8
    with ScriptedLLM() as server:
        server.push(Reply(contents=(" Paris",), logprobs=((-0.3,),)))
        generated = generate_with_top_logprobs(config=server.config(), prompt="The capital is", top_k=2, max_tokens=4)
        assert generated.text == " Paris" and generated.tokens[0].top == (("t0", -0.3), ("t0-alt1", -1.3))
        assert server.requests[0]["prompt"] == "The capital is" and server.requests[0]["logprobs"] == 2


def test_generate_with_top_logprobs_says_when_there_is_no_distribution(scripted_llm):
    scripted_llm.push(answer("Paris"))
    generated = generate_with_top_logprobs(config=scripted_llm.config(), user="Capital?", top_k=2, max_tokens=8)
    assert generated.text == "Paris" and generated.tokens is None
