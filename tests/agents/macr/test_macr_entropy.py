"""Modified semantic entropy and τ calibration on hand-computed cases (fixed vectors, no model)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from agents.macr.entropy import (
    answer_probabilities,
    calibrate_threshold,
    modified_semantic_entropy,
    trusts_own_knowledge,
)

QUESTION = "When does the spring sale end?"
# Hand-made 2-d "embeddings": unit vectors at chosen angles to the question at (1, 0).
VECTORS = {
    QUESTION: [1.0, 0.0],
    "April 6": [0.8, 0.6],  # cos with q = 0.8
    "I don't know": [0.1, math.sqrt(1 - 0.01)],  # cos with q = 0.1
    "March 29": [0.8, -0.6],  # cos with q = 0.8, cos with "April 6" = 0.64 - 0.36 = 0.28
}


def embed(texts: list[str]) -> np.ndarray:
    return np.array([VECTORS[text] for text in texts])


def test_consistent_relevant_answers_equal_minus_log_k_minus_relevance():
    # k = 3 identical answers, s = sim(a, q) = 0.8: every f(i, j) = 1 · 0.8, so
    # H = −Σᵢ (1/3) · log(3 · e^0.8) = −log 3 − 0.8 ≈ −1.898612
    entropy = modified_semantic_entropy(question=QUESTION, answers=["April 6"] * 3, embed=embed)
    assert entropy == pytest.approx(-math.log(3) - 0.8, abs=1e-9)
    assert entropy == pytest.approx(-1.898612, abs=1e-6)


def test_repeated_i_dont_know_is_not_low():
    # Same consistency, but sim(a, q) = 0.1: H = −log 3 − 0.1 ≈ −1.198612. The low relevance to the
    # question moves H UP by 0.7 compared with consistent relevant answers, so a model that keeps
    # saying "I don't know" is not mistaken for one that knows (low H = confident).
    relevant = modified_semantic_entropy(question=QUESTION, answers=["April 6"] * 3, embed=embed)
    dont_know = modified_semantic_entropy(question=QUESTION, answers=["I don't know"] * 3, embed=embed)
    assert dont_know == pytest.approx(-math.log(3) - 0.1, abs=1e-9)
    assert dont_know > relevant
    assert dont_know - relevant == pytest.approx(0.7, abs=1e-9)


def test_disagreeing_answers_score_higher_than_consistent_ones():
    # answers [April 6, March 29], uniform P = 1/2, both with sim(a, q) = 0.8, sim between them 0.28:
    # each row: log(e^(1·0.8) + e^(0.28·0.8)) = log(e^0.8 + e^0.224)
    expected = -math.log(math.exp(0.8) + math.exp(0.224))
    entropy = modified_semantic_entropy(question=QUESTION, answers=["April 6", "March 29"], embed=embed)
    assert entropy == pytest.approx(expected, abs=1e-9)
    consistent = modified_semantic_entropy(question=QUESTION, answers=["April 6", "April 6"], embed=embed)
    assert consistent == pytest.approx(-math.log(2) - 0.8, abs=1e-9)
    assert entropy > consistent


def test_logprobs_weight_the_answers_by_softmax():
    # P from log-probabilities [log 3, 0] → softmax [0.75, 0.25].
    probabilities = answer_probabilities(count=2, logprobs=[math.log(3.0), 0.0])
    assert probabilities == pytest.approx([0.75, 0.25])
    # Rows: "April 6": log(e^0.8 + e^(0.28·0.8)); "I don't know": sim to "April 6" = 0.08 + 0.6·√0.99,
    # f = sim · 0.1 for j = "April 6", 1 · 0.1 for itself.
    sim_cross = 0.08 + 0.6 * math.sqrt(0.99)
    row_relevant = math.log(math.exp(0.8) + math.exp(sim_cross * 0.8))
    row_dont_know = math.log(math.exp(sim_cross * 0.1) + math.exp(0.1))
    expected = -(0.75 * row_relevant + 0.25 * row_dont_know)
    entropy = modified_semantic_entropy(
        question=QUESTION, answers=["April 6", "I don't know"], embed=embed, logprobs=[math.log(3.0), 0.0]
    )
    assert entropy == pytest.approx(expected, abs=1e-9)
    uniform = modified_semantic_entropy(question=QUESTION, answers=["April 6", "I don't know"], embed=embed)
    assert uniform == pytest.approx(-(0.5 * row_relevant + 0.5 * row_dont_know), abs=1e-9)
    assert entropy < uniform  # more weight on the relevant answer → lower H


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        modified_semantic_entropy(question=QUESTION, answers=[], embed=embed)
    with pytest.raises(ValueError):
        answer_probabilities(count=2, logprobs=[0.0])


def test_threshold_is_the_lowest_entropy_answered_wrongly():
    entropies = [-2.4, -2.1, -1.9, -1.5, -1.2, -1.0]
    correct = [True, True, True, False, True, False]
    tau = calibrate_threshold(entropies=entropies, correct=correct)
    assert tau == -1.5  # the correct answer at −1.2 lies above a failure: not trusted
    assert trusts_own_knowledge(entropy=-1.9, threshold=tau)
    assert not trusts_own_knowledge(entropy=-1.5, threshold=tau)
    assert not trusts_own_knowledge(entropy=-1.2, threshold=tau)


def test_threshold_ties_count_as_unreliable():
    tau = calibrate_threshold(entropies=[-2.0, -1.7, -1.7], correct=[True, True, False])
    assert tau == -1.7
    assert not trusts_own_knowledge(entropy=-1.7, threshold=tau)


def test_threshold_when_never_wrong_is_just_above_the_largest_entropy_seen():
    tau = calibrate_threshold(entropies=[-2.0, -1.4], correct=[True, True])
    assert tau > -1.4 and tau == math.nextafter(-1.4, math.inf)
    assert trusts_own_knowledge(entropy=-1.4, threshold=tau)
    assert not trusts_own_knowledge(entropy=-1.3, threshold=tau)


def test_threshold_when_the_most_confident_answer_is_wrong_trusts_nothing_seen():
    tau = calibrate_threshold(entropies=[-2.5, -2.0], correct=[False, True])
    assert not trusts_own_knowledge(entropy=-2.5, threshold=tau)
    assert not trusts_own_knowledge(entropy=-2.0, threshold=tau)
    with pytest.raises(ValueError):
        calibrate_threshold(entropies=[], correct=[])
    with pytest.raises(ValueError):
        calibrate_threshold(entropies=[-1.0], correct=[True, False])
