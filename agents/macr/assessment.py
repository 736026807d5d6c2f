"""MACR step 1, knowledge assessment: does the model know the answer well enough to trust itself?

Sample k short answers (top-p), with the current date and a subject disambiguation in the prompt,
and score them with the modified semantic entropy of entropy.py. H < τ → the model externalises its
own knowledge (internal path); H ≥ τ → retrieval from outside (external path). See retrieval.py.

`embed` is passed in (callers pass articles.embeddings.embed_texts, MiniLM; tests pass fixed
vectors), so this module needs neither Django nor a model.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from agents.llm import LLMConfig
from agents.macr.calls import CallMeter, sample_call
from agents.macr.entropy import Embed, modified_semantic_entropy, trusts_own_knowledge
from agents.macr.prompts import ASSESS_SYSTEM, SubjectHint, date_line

DEFAULT_SAMPLES = 5
DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 0.9
# Uncalibrated default for k = 5: consistent, relevant answers score about −log 5 − sim(a, q) ≈ −2.1
# or lower; scattered answers score above −1.9. Run `manage.py calibrate_entropy` for a real τ.
DEFAULT_THRESHOLD = -2.0


@dataclass(frozen=True)
class Assessment:
    question: str
    answers: tuple[str, ...]
    entropy: float
    threshold: float
    used_logprobs: bool

    @property
    def internal(self) -> bool:
        """The branch: True → trust the model's own knowledge (H < τ)."""
        return trusts_own_knowledge(entropy=self.entropy, threshold=self.threshold)


def assessment_prompt(*, question: str, now: dt.date, subject: SubjectHint | None) -> str:
    parts = [date_line(now)]
    hint = subject.as_text() if subject else ""
    if hint:
        parts.append(hint)
    parts.append(f"Question: {question}")
    return "\n".join(parts)


def assess_knowledge(
    *,
    question: str,
    now: dt.date,
    config: LLMConfig,
    embed: Embed,
    threshold: float = DEFAULT_THRESHOLD,
    subject: SubjectHint | None = None,
    samples: int = DEFAULT_SAMPLES,
    temperature: float = DEFAULT_TEMPERATURE,
    top_p: float = DEFAULT_TOP_P,
    logprobs: bool = True,
    meter: CallMeter | None = None,
) -> Assessment:
    """Raises LLMError when sampling fails."""
    meter = meter if meter is not None else CallMeter()
    sampled = sample_call(
        meter=meter, step="assessment", config=config, system=ASSESS_SYSTEM,
        user=assessment_prompt(question=question, now=now, subject=subject),
        n=samples, temperature=temperature, top_p=top_p, logprobs=logprobs,
    )
    texts = [sample.text.strip() for sample in sampled]
    sums = [sample.logprob_sum for sample in sampled]
    # P(aᵢ|q) from sequence log-probabilities only when every sample has one; a partial set would
    # weight answers by whether the endpoint happened to report them.
    use_logprobs = logprobs and all(value is not None for value in sums)
    entropy = modified_semantic_entropy(
        question=question, answers=texts, embed=embed, logprobs=[float(v) for v in sums] if use_logprobs else None
    )
    return Assessment(
        question=question, answers=tuple(texts), entropy=entropy, threshold=threshold, used_logprobs=use_logprobs
    )
