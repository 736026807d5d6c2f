"""MACR knowledge assessment: the paper's modified semantic entropy and its threshold τ.

    H(q) = −Σᵢ P(aᵢ|q) · log Σⱼ exp(f(aᵢ, aⱼ, q)),   f(aᵢ, aⱼ, q) = sim(aᵢ, aⱼ) · sim(aᵢ, q)

sim is the cosine of embeddings. Implemented exactly as written; note what that means:
- the inner sum includes j = i, so each term is at least exp(sim(aᵢ, q)) and H is usually negative;
- k identical answers with sim(a, q) = s give H = −log k − s: the more relevant a consistent
  answer is to the question, the LOWER H. Repeating "I don't know" (s small) stays consistent but
  scores higher than a consistent relevant answer; scattered answers (sim(aᵢ, aⱼ) ≈ 0 for i ≠ j)
  score higher still. Low H = the model knows; compare values only for the same k.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

Embed = Callable[[list[str]], np.ndarray]


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0.0, 1.0, norms)


def answer_probabilities(*, count: int, logprobs: Sequence[float] | None = None) -> np.ndarray:
    """P(aᵢ|q): softmax of the answers' sequence log-probabilities, or uniform when there are none."""
    if logprobs is None:
        return np.full(count, 1.0 / count)
    values = np.asarray(logprobs, dtype=np.float64)
    if values.shape != (count,):
        raise ValueError(f"expected {count} log-probabilities, got {values.shape}")
    weights = np.exp(values - values.max())  # shift for numerical stability; softmax is unchanged
    return weights / weights.sum()


def modified_semantic_entropy(
    *, question: str, answers: Sequence[str], embed: Embed, logprobs: Sequence[float] | None = None
) -> float:
    if not answers:
        raise ValueError("need at least one sampled answer")
    vectors = _unit_rows(embed([question, *answers]))
    question_vector, answer_vectors = vectors[0], vectors[1:]
    sim_answers = answer_vectors @ answer_vectors.T  # sim(aᵢ, aⱼ)
    sim_question = answer_vectors @ question_vector  # sim(aᵢ, q)
    f = sim_answers * sim_question[:, None]  # f[i, j] = sim(aᵢ, aⱼ) · sim(aᵢ, q)
    log_sums = np.log(np.exp(f).sum(axis=1))  # log Σⱼ exp(f(aᵢ, aⱼ, q)); f ∈ [−1, 1], no overflow
    probabilities = answer_probabilities(count=len(answers), logprobs=logprobs)
    return float(-(probabilities * log_sums).sum())


def calibrate_threshold(*, entropies: Sequence[float], correct: Sequence[bool]) -> float:
    """τ such that, on the validation set, every answer with H < τ was correct.

    Exact rule: sort validation questions by entropy; τ is the lowest entropy at which the model
    answered wrongly (ties count as wrong: at that entropy it is not reliable). So τ is the upper end
    of the range, starting from the lowest entropy seen, in which the model still answers
    correctly. If it never answered wrongly, τ is just above the largest entropy seen (the next
    float up): there is no evidence beyond that. The branch is then `H < τ` → answer from the
    model's own knowledge, `H ≥ τ` → retrieve (see `trusts_own_knowledge`).
    """
    if len(entropies) != len(correct):
        raise ValueError("entropies and correct must have the same length")
    if not entropies:
        raise ValueError("need at least one validation question")
    wrong = [entropy for entropy, is_correct in zip(entropies, correct) if not is_correct]
    if wrong:
        return float(min(wrong))
    return math.nextafter(float(max(entropies)), math.inf)


def trusts_own_knowledge(*, entropy: float, threshold: float) -> bool:
    """The knowledge-retrieval branch: below τ the model externalises its own knowledge."""
    return entropy < threshold
