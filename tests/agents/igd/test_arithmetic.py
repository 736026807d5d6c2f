"""IGD's arithmetic on hand-made distributions; every expected value was worked out by hand (shown beside it)."""
import math

import numpy as np
import pytest

from agents.igd.arithmetic import (
    IGDParams,
    Mode,
    Reliability,
    answer_filter,
    context_reliability,
    corrected_scores,
    direction,
    jensen_shannon,
    log_mean_exp,
    memory_reliability,
    normalised_entropy,
    renormalise,
    soft_gate,
    step_correction,
)

PARAMS = IGDParams()
log = np.log


def test_the_papers_constants_are_the_defaults():
    assert (PARAMS.top_k, PARAMS.tau_low, PARAMS.tau_high, PARAMS.gamma) == (16, 0.10, 0.35, 2.0)
    assert (PARAMS.rho_memory, PARAMS.rho_user, PARAMS.memory_variants) == (3.0, 1.0, 3)
    assert PARAMS.intent_prior(Mode.STRICT) == 0.9 and PARAMS.intent_prior(Mode.TRUTH) == 0.3


def test_renormalise_over_a_subset():
    assert np.allclose(np.exp(renormalise(log([0.2, 0.2]))), [0.5, 0.5])
    assert np.allclose(np.exp(renormalise(log([0.3, 0.1]))), [0.75, 0.25])


def test_normalised_entropy():
    assert normalised_entropy(log([0.25] * 4)) == pytest.approx(1.0)
    # -(0.8 ln 0.8 + 0.2 ln 0.2) / ln 2 = (0.178515 + 0.321888) / 0.693147
    assert normalised_entropy(log([0.8, 0.2])) == pytest.approx(0.721928, abs=1e-6)
    assert normalised_entropy(log([0.9, 0.1])) == pytest.approx(0.468996, abs=1e-6)


def test_jensen_shannon_in_bits():
    assert jensen_shannon(log([1.0, 1e-300]), log([1e-300, 1.0])) == pytest.approx(1.0, abs=1e-6)
    assert jensen_shannon(log([0.5, 0.5]), log([0.5, 0.5])) == pytest.approx(0.0, abs=1e-12)
    # M = (0.75, 0.25); KL(P||M) = log2(4/3) = 0.415037; KL(Q||M) = 0.5(-0.584963) + 0.5(1) = 0.207519
    assert jensen_shannon(log([1.0, 1e-300]), log([0.5, 0.5])) == pytest.approx(0.311278, abs=1e-6)
    # M = (0.45, 0.55); KL(P||M) = 0.372174; KL(Q||M) = 0.422451
    assert jensen_shannon(log([0.8, 0.2]), log([0.1, 0.9])) == pytest.approx(0.397313, abs=1e-6)


def test_soft_gate():
    assert soft_gate(0.05, PARAMS) == 0.0  # below τlow
    assert soft_gate(0.50, PARAMS) == 1.0  # above τhigh
    # ramp = (0.311278 - 0.10) / 0.25 = 0.845112; squared (γ = 2)
    assert soft_gate(0.311278, PARAMS) == pytest.approx(0.714214, abs=1e-5)
    assert soft_gate(0.05, IGDParams(gates=False)) == 1.0


def test_direction_combines_the_intent_prior_with_the_entropies():
    # equal confidence: the prior alone, 2d - 1
    assert direction(prior=0.9, entropy_context=0.5, entropy_memory=0.5) == pytest.approx(0.8)
    assert direction(prior=0.3, entropy_context=0.5, entropy_memory=0.5) == pytest.approx(-0.4)
    # c_ctx = 0.8, c_mem = 0.4, e = 2/3; STRICT: w = 0.6 / (0.6 + 0.1/3) = 0.947368
    assert direction(prior=0.9, entropy_context=0.2, entropy_memory=0.6) == pytest.approx(0.894737, abs=1e-6)
    # TRUTH: w = 0.2 / (0.2 + 0.7/3) = 0.461538
    assert direction(prior=0.3, entropy_context=0.2, entropy_memory=0.6) == pytest.approx(-0.076923, abs=1e-6)
    # a memory branch with no confidence at all cannot pull towards itself
    assert direction(prior=0.3, entropy_context=0.2, entropy_memory=1.0) == pytest.approx(1.0)


def test_reliabilities():
    assert context_reliability(preview_support=0.5, snippet_quality=0.7, valid_short_answer=True) == pytest.approx(2.2 / 3)
    assert context_reliability(preview_support=0.0, snippet_quality=0.3, valid_short_answer=False) == pytest.approx(0.1)
    assert memory_reliability(agreeing_previews=2, previews=3) == pytest.approx(2 / 3)


CONTEXT = log([0.8, 0.2])  # tokens (a, b): the context says a
MEMORY = log([0.1, 0.9])  # memory says b
USER = log([0.5, 0.5])  # the user branch cannot decide
RELIABILITY = Reliability(context=2.2 / 3, memory=2 / 3)


def _step(mode: Mode):
    return step_correction(
        context_top=CONTEXT, memory_top=MEMORY[::-1], context_on_union=CONTEXT, memory_on_union=MEMORY,
        prior=PARAMS.intent_prior(mode), reliability=RELIABILITY, params=PARAMS,
    )


def test_step_correction_truth_leans_to_memory():
    step = _step(Mode.TRUTH)
    assert step.jsd == pytest.approx(0.397313, abs=1e-6)
    assert step.gate == 1.0  # JSD above τhigh
    # c_ctx = 1 - 0.721928 = 0.278072, c_mem = 1 - 0.468996 = 0.531004, e = 0.343692
    # w = 0.3e / (0.3e + 0.7(1-e)) = 0.183295, direction = -0.633410; memory reliability 2/3
    assert step.direction == pytest.approx(-0.633410, abs=1e-5)
    assert step.lam == pytest.approx(-0.422273, abs=1e-5)
    scores = corrected_scores(user=USER, context=CONTEXT, memory=MEMORY, lam=step.lam)
    # a: ln .5 + λ ln(.8/.1) = -1.571238; b: ln .5 + λ ln(.2/.9) = -0.058016
    assert scores == pytest.approx([-1.571238, -0.058016], abs=1e-5)
    assert int(np.argmax(scores)) == 1


def test_step_correction_strict_leans_to_context():
    step = _step(Mode.STRICT)
    # w = 0.9e / (0.9e + 0.1(1-e)) = 0.824963, direction = 0.649926; context reliability 0.733333
    assert step.direction == pytest.approx(0.649926, abs=1e-5)
    assert step.lam == pytest.approx(0.476612, abs=1e-5)
    scores = corrected_scores(user=USER, context=CONTEXT, memory=MEMORY, lam=step.lam)
    assert scores == pytest.approx([0.297940, -1.410008], abs=1e-5)
    assert int(np.argmax(scores)) == 0


def test_lambda_zero_leaves_the_user_distribution():
    scores = corrected_scores(user=log([0.7, 0.3]), context=CONTEXT, memory=MEMORY, lam=0.0)
    assert np.allclose(np.exp(scores), [0.7, 0.3])


def test_a_small_disagreement_is_left_alone():
    step = step_correction(
        context_top=log([0.6, 0.4]), memory_top=log([0.55, 0.45]), context_on_union=log([0.6, 0.4]),
        memory_on_union=log([0.55, 0.45]), prior=0.3, reliability=RELIABILITY, params=PARAMS,
    )
    assert step.jsd < PARAMS.tau_low and step.gate == 0.0 and step.lam == 0.0


def test_memory_ensemble_probability():
    assert log_mean_exp([math.log(0.2), math.log(0.4)]) == pytest.approx(math.log(0.3))


@pytest.mark.parametrize(
    "memory_mem, memory_ctx, user_ctx, user_mem, equal, routed",
    [
        (0.6, 0.15, 0.20, 0.25, False, True),  # memory ratio 4 ≥ 3, user ratio 0.8 ≤ 1
        (0.6, 0.15, 0.30, 0.25, False, False),  # the user branch prefers ŷ_ctx (1.2 > 1)
        (0.5, 0.20, 0.20, 0.25, False, False),  # memory ratio 2.5 < 3
        (0.6, 0.20, 0.25, 0.25, False, True),  # exactly ρM = 3 and ρU = 1 route
        (0.6, 0.15, 0.20, 0.25, True, False),  # the previews agree: nothing to route
    ],
)
def test_answer_filter(memory_mem, memory_ctx, user_ctx, user_mem, equal, routed):
    decision = answer_filter(
        memory_logp_mem=math.log(memory_mem), memory_logp_ctx=math.log(memory_ctx), user_logp_ctx=math.log(user_ctx),
        user_logp_mem=math.log(user_mem), previews_equal=equal, params=PARAMS,
    )
    assert decision.memory_disagrees is routed
    assert decision.memory_ratio == pytest.approx(memory_mem / memory_ctx)
    assert decision.user_ratio == pytest.approx(user_ctx / user_mem)
