"""The arithmetic of Intent-Guided Decoding (Jin, Yang, Chen, arXiv:2608.16515) over plain numbers.

Everything here is a pure function of log-probabilities and a few scalars, so it is tested on hand-made
distributions with values worked out by hand (tests/agents/igd/test_arithmetic.py). Logs are natural except
in the Jensen-Shannon divergence, which uses base 2 so that it lies in [0, 1] like the gate thresholds.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

TIE = 1e-9  # log-ratio comparisons: a ratio exactly at ρ counts as reaching it despite rounding


class Mode(str, enum.Enum):
    """The user's intent. STRICT: the supplied context is authoritative. TRUTH: prefer what is true."""

    STRICT = "strict"
    TRUTH = "truth"

    @property
    def label(self) -> str:
        return {"strict": "Strict (follow the knowledge base)", "truth": "Truth (be sceptical of the context)"}[self.value]


@dataclass(frozen=True)
class IGDParams:
    """The method's constants, as the paper gives them; ablations switch parts off."""

    top_k: int = 16
    tau_low: float = 0.10
    tau_high: float = 0.35
    gamma: float = 2.0  # shape of the soft gate: g = s ** gamma
    rho_memory: float = 3.0
    rho_user: float = 1.0
    d_strict: float = 0.9
    d_truth: float = 0.3
    memory_variants: int = 3
    max_new_tokens: int = 16
    max_answer_words: int = 8  # a context preview longer than this is not a "valid short answer"
    answer_filter: bool = True  # igd_no_token keeps it and drops the token level; no ablation drops it
    token_correction: bool = True
    gates: bool = True  # igd_no_gates: the correction is always fully on (g = 1)

    def intent_prior(self, mode: Mode) -> float:
        return self.d_strict if mode is Mode.STRICT else self.d_truth


def renormalise(logprobs: np.ndarray) -> np.ndarray:
    """Log-probabilities restricted to a subset, renormalised to sum to one."""
    logprobs = np.asarray(logprobs, dtype=np.float64)
    top = np.max(logprobs)
    return logprobs - (top + math.log(np.sum(np.exp(logprobs - top))))


def normalised_entropy(logprobs: np.ndarray) -> float:
    """Entropy of the renormalised distribution over the given (top-K) entries, divided by log K: in [0, 1]."""
    logp = renormalise(logprobs)
    if logp.size <= 1:
        return 0.0
    p = np.exp(logp)
    return float(-np.sum(p * logp) / math.log(logp.size))


def jensen_shannon(logp: np.ndarray, logq: np.ndarray) -> float:
    """JSD(P || Q) in bits, both given as log-probabilities over the same entries (renormalised here)."""
    p = np.exp(renormalise(logp))
    q = np.exp(renormalise(logq))
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log2(a[mask] / m[mask])))

    return max(0.0, min(1.0, 0.5 * kl(p) + 0.5 * kl(q)))


def soft_gate(jsd: float, params: IGDParams) -> float:
    """0 below τlow, 1 above τhigh, a ramp raised to γ between: small disagreements leave decoding alone."""
    if not params.gates:
        return 1.0
    ramp = (jsd - params.tau_low) / (params.tau_high - params.tau_low)
    return float(min(1.0, max(0.0, ramp)) ** params.gamma)


def direction(*, prior: float, entropy_context: float, entropy_memory: float) -> float:
    """In [-1, 1]: > 0 leans to the context. The intent prior d is combined, as odds, with the evidence share of the
    more confident branch, e = c_ctx / (c_ctx + c_mem) with c = 1 - normalised entropy; then 2w - 1."""
    confidence_context = 1.0 - entropy_context
    confidence_memory = 1.0 - entropy_memory
    total = confidence_context + confidence_memory
    evidence = 0.5 if total <= 0 else confidence_context / total
    for_context = prior * evidence
    against = (1.0 - prior) * (1.0 - evidence)
    weight = 0.5 if for_context + against <= 0 else for_context / (for_context + against)
    return 2.0 * weight - 1.0


@dataclass(frozen=True)
class Reliability:
    context: float
    memory: float


def context_reliability(*, preview_support: float, snippet_quality: float, valid_short_answer: bool) -> float:
    """Mean of the three signals the paper names for the context source."""
    return (preview_support + snippet_quality + (1.0 if valid_short_answer else 0.0)) / 3.0


def memory_reliability(*, agreeing_previews: int, previews: int) -> float:
    """Agreement of the M memory previews with the chosen one."""
    return agreeing_previews / previews if previews else 0.0


@dataclass(frozen=True)
class StepCorrection:
    jsd: float
    gate: float
    direction: float
    lam: float  # λ_t: > 0 favours the context, < 0 memory, 0 leaves the user distribution


def step_correction(
    *,
    context_top: np.ndarray,
    memory_top: np.ndarray,
    context_on_union: np.ndarray,
    memory_on_union: np.ndarray,
    prior: float,
    reliability: Reliability,
    params: IGDParams,
) -> StepCorrection:
    """λ_t for one step. `*_top` are each branch's own top-K log-probabilities (entropies); `*_on_union` both branches'
    log-probabilities over the union of their top-K sets (JSD)."""
    jsd = jensen_shannon(context_on_union, memory_on_union)
    gate = soft_gate(jsd, params)
    lean = direction(
        prior=prior, entropy_context=normalised_entropy(context_top), entropy_memory=normalised_entropy(memory_top)
    )
    favoured = reliability.context if lean >= 0 else reliability.memory
    return StepCorrection(jsd=jsd, gate=gate, direction=lean, lam=gate * lean * favoured)


def corrected_scores(*, user: np.ndarray, context: np.ndarray, memory: np.ndarray, lam: float) -> np.ndarray:
    """log p_user + λ (log p_ctx - log p_mem) over one candidate set, each branch renormalised over it."""
    return renormalise(user) + lam * (renormalise(context) - renormalise(memory))


def log_mean_exp(values: list[float]) -> float:
    """log of the mean of exp(values): the memory ensemble's probability of a sequence from its variants'."""
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values) / len(values))


@dataclass(frozen=True)
class FilterDecision:
    memory_ratio: float  # P_mem(ŷ_mem) / P_mem(ŷ_ctx)
    user_ratio: float  # P_user(ŷ_ctx) / P_user(ŷ_mem)
    memory_disagrees: bool  # the memory branch strongly prefers its own answer and the user branch does not object


def answer_filter(
    *,
    memory_logp_mem: float,
    memory_logp_ctx: float,
    user_logp_ctx: float,
    user_logp_mem: float,
    previews_equal: bool,
    params: IGDParams,
) -> FilterDecision:
    """Answer-level memory filter: route to memory only when P_mem(ŷ_mem)/P_mem(ŷ_ctx) ≥ ρM and the user branch does
    not prefer ŷ_ctx (P_user(ŷ_ctx)/P_user(ŷ_mem) ≤ ρU)."""
    memory_log_ratio = memory_logp_mem - memory_logp_ctx
    user_log_ratio = user_logp_ctx - user_logp_mem
    disagrees = (
        not previews_equal
        and memory_log_ratio >= math.log(params.rho_memory) - TIE
        and user_log_ratio <= math.log(params.rho_user) + TIE
    )
    memory_ratio = math.exp(min(700.0, memory_log_ratio))
    user_ratio = math.exp(min(700.0, user_log_ratio))
    return FilterDecision(memory_ratio=memory_ratio, user_ratio=user_ratio, memory_disagrees=disagrees)
