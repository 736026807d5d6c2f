"""The approximate IGD backend: any OpenAI-compatible server that returns top log-probabilities on /v1/completions.

Each branch row asks for one token at a time (`max_tokens=1`, `logprobs=top_n` ≤ 20, temperature 0) on its prompt
plus the answer so far; the rows of one step are asked concurrently. The algorithm is the same as the local
backend's, but it only sees the top_n tokens a server returns: a token outside a branch's list gets that list's
lowest log-probability minus ln 2 (an approximation of the full-logit method, documented as such).
Tokens are the token texts the server returns.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from agents.igd.prompts import completion_prompt
from agents.llm import LLMConfig, LLMError, generate_with_top_logprobs

MAX_TOP_LOGPROBS = 20  # the most OpenAI-compatible servers return per position
END_TEXTS = frozenset({"", "</s>", "<eos>", "<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>"})


class MissingLogprobsError(LLMError):
    def __init__(self, detail: str) -> None:
        super().__init__("no_logprobs", detail)


class SparseDistribution:
    def __init__(self, logprobs: dict[str, float]) -> None:
        ranked = sorted(logprobs.items(), key=lambda item: -item[1])
        self._tokens = [token for token, _ in ranked]
        self._values = np.array([value for _, value in ranked], dtype=np.float64)
        self._by_token = dict(ranked)
        self._floor = float(self._values[-1]) - math.log(2.0)

    def top(self, k: int) -> tuple[list[str], np.ndarray]:
        return self._tokens[:k], self._values[:k]

    def logprobs(self, tokens: Sequence[str]) -> np.ndarray:
        return np.array([self._by_token.get(token, self._floor) for token in tokens], dtype=np.float64)


class OpenAIDecoder:
    def __init__(self, *, backend: "OpenAIBackend", prompts: list[str], generated: list[str] | None = None) -> None:
        self._backend = backend
        self._prompts = prompts
        self._generated = generated or ["" for _ in prompts]
        self._finished = [False] * len(prompts)
        self._current: list[SparseDistribution | None] | None = None

    def distributions(self) -> list[SparseDistribution | None]:
        if self._current is None:
            live = [row for row, done in enumerate(self._finished) if not done]
            found = self._backend.next_distributions([self._prompts[r] + self._generated[r] for r in live])
            current: list[SparseDistribution | None] = [None] * len(self._prompts)
            for row, dist in zip(live, found):
                current[row] = dist
            self._current = current
        return self._current

    def advance(self, tokens: Sequence[str | None]) -> None:
        for row, token in enumerate(tokens):
            if token is None:
                self._finished[row] = True
            else:
                self._generated[row] += token
        self._current = None

    def extend(self, tokens: Sequence[str]) -> None:
        self.advance(["".join(tokens)] * len(self._prompts))

    def fork(self) -> "OpenAIDecoder":
        twin = OpenAIDecoder(backend=self._backend, prompts=self._prompts, generated=list(self._generated))
        twin._finished = list(self._finished)
        twin._current = self._current
        return twin

    def sequence_logprobs(self, requests: Sequence[tuple[int, Sequence[str]]]) -> list[float]:
        """Teacher-forced, one step per token: all requests' n-th tokens are asked together."""
        scores = [0.0] * len(requests)
        longest = max((len(tokens) for _, tokens in requests), default=0)
        for position in range(longest):
            active = [i for i, (_, tokens) in enumerate(requests) if position < len(tokens)]
            prefixes = [
                self._prompts[requests[i][0]] + self._generated[requests[i][0]] + "".join(requests[i][1][:position])
                for i in active
            ]
            for i, dist in zip(active, self._backend.next_distributions(prefixes)):
                scores[i] += float(dist.logprobs([requests[i][1][position]])[0])
        return scores


class OpenAIBackend:
    def __init__(self, config: LLMConfig, *, top_logprobs: int = MAX_TOP_LOGPROBS, workers: int = 8) -> None:
        self.config = config
        self.name = f"openai:{config.model}"
        self.top_logprobs = min(top_logprobs, MAX_TOP_LOGPROBS)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="igd-openai")

    def _one(self, prompt: str) -> SparseDistribution:
        generated = generate_with_top_logprobs(config=self.config, top_k=self.top_logprobs, max_tokens=1, prompt=prompt)
        top = generated.tokens[0].top if generated.tokens else ()
        if not top:
            raise MissingLogprobsError(
                f"{self.config.base_url} returned no top log-probabilities on /v1/completions; IGD needs a server "
                "that returns them (logprobs=N)"
            )
        return SparseDistribution(dict(top))

    def next_distributions(self, prompts: list[str]) -> list[SparseDistribution]:
        return list(self._pool.map(self._one, prompts))

    def open(self, prompts: Sequence[str]) -> OpenAIDecoder:
        return OpenAIDecoder(backend=self, prompts=[completion_prompt(p) for p in prompts])

    def is_end(self, token: str) -> bool:
        return token in END_TEXTS

    def is_line_break(self, token: str) -> bool:
        return "\n" in token

    def text(self, tokens: Sequence[str]) -> str:
        return "".join(tokens)
