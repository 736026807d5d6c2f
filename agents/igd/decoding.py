"""Intent-Guided Decoding over any backend that gives next-token log-probabilities for a batch of prompts.

Branches (rows of one batch): 0 = user (the RAG prompt), 1 = context (the selected support snippet),
2.. = memory (closed book, M prompt variants; their probabilities are averaged into one memory distribution).

1. Previews: every row decodes greedily on its own (one batched forward per step): ŷ_user (= Direct RAG),
   ŷ_ctx, and M memory previews, of which the most frequent is ŷ_mem; ŷ_ctx and the memory previews end with
   their first sentence.
2. Answer-level memory filter (arithmetic.answer_filter) on teacher-forced sequence probabilities.
3. Otherwise token-level correction: the five branches step together on the shared answer prefix, and each token
   is the argmax of log p_user + λ_t (log p_ctx − log p_mem) over the union of the branches' top-K (less tokens
   that would open the prompts' own markup: no answer writes "<context>", nor does a preview). A backend that
   can teacher-force (local) computes every row's distributions along the previews in one pass (Lookahead): the
   filter's probabilities are sums over them, and the correction needs a forward per token only once its answer
   leaves every preview.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Hashable, Protocol, Sequence

import numpy as np

from agents.igd.arithmetic import (
    FilterDecision,
    IGDParams,
    Mode,
    Reliability,
    StepCorrection,
    answer_filter,
    context_reliability,
    corrected_scores,
    log_mean_exp,
    memory_reliability,
    step_correction,
)
from agents.igd.prompts import (
    IGDPrompts,
    goes_past_first_sentence,
    normalise_answer,
    opens_markup,
    preview_support,
    valid_short_answer,
)

Token = Hashable  # a vocabulary id (local backend) or the token's text (OpenAI-compatible backend)
USER, CONTEXT, FIRST_MEMORY = 0, 1, 2


class Distribution(Protocol):
    def top(self, k: int) -> tuple[list[Token], np.ndarray]:
        """The k most likely tokens and their log-probabilities, most likely first."""

    def logprobs(self, tokens: Sequence[Token]) -> np.ndarray:
        """Log-probabilities of the given tokens (an approximation for tokens a server did not return)."""


class Decoder(Protocol):
    def distributions(self) -> list[Distribution | None]:
        """Next-token distribution per row; None for a finished row."""

    def advance(self, tokens: Sequence[Token | None]) -> None:
        """Append one token per row (None: the row has finished and is left alone)."""

    def fork(self) -> "Decoder":
        """An independent copy of the current state (prompt caches are shared work, not redone)."""

    def sequence_logprobs(self, requests: Sequence[tuple[int, Sequence[Token]]]) -> list[float]:
        """log P(continuation | row's current state) for each (row, continuation), teacher-forced."""

    def extend(self, tokens: Sequence[Token]) -> None:
        """Append the same tokens to every row."""

    # Optional (the local backend): teacher_forced(requests) -> per (row, continuation) the row's distributions
    # before each token and after the last, computed together; igd_generate then uses the previews as drafts.


class Backend(Protocol):
    name: str

    def open(self, prompts: Sequence[str]) -> Decoder:
        """Start the rows (prompt processing) for these prompts, in this order."""

    def is_end(self, token: Token) -> bool:
        """End of sequence / turn."""

    def is_line_break(self, token: Token) -> bool:
        """The token holds a line break (answers are one line)."""

    def text(self, tokens: Sequence[Token]) -> str:
        """The text of generated tokens."""


@dataclass(frozen=True)
class TokenTrace:
    text: str
    jsd: float
    gate: float
    direction: float
    lam: float


@dataclass
class IGDResult:
    answer: str
    source: str  # "memory" (answer-level filter routed to memory), "corrected" (token-level), "user" (neither)
    mode: Mode
    previews: dict[str, str]  # user / context / memory
    memory_previews: list[str]
    filter: FilterDecision | None
    reliability: Reliability | None
    trace: list[TokenTrace] = field(default_factory=list)
    generated_tokens: int = 0
    seconds: float = 0.0

    @property
    def memory_disagrees(self) -> bool:
        return bool(self.filter and self.filter.memory_disagrees)

    @property
    def winner(self) -> str:
        """Which source the answer followed, in words: the context, memory, or the user prompt as is."""
        if self.source == "memory":
            return "memory"
        if self.source == "corrected":
            # The answer is one of the previews: that preview's source, whatever the average correction was.
            answer = normalise_answer(self.answer)
            if answer and answer == normalise_answer(self.previews.get("context", "")):
                return "context"
            if answer and any(answer == normalise_answer(p) for p in self.memory_previews):
                return "memory"
        if self.source == "corrected" and self.trace:
            lams = [step.lam for step in self.trace]
            mean = sum(lams) / len(lams)
            if mean > 0.05:
                return "context"
            if mean < -0.05:
                return "memory"
        return "user"


def ends_answer(backend: Backend, token: Token, so_far: Sequence[Token]) -> bool:
    """End of turn, or a line break once the answer has begun (leading blank lines are skipped)."""
    if backend.is_end(token):
        return True
    return backend.is_line_break(token) and bool(backend.text(list(so_far)).strip())


@dataclass
class Greedy:
    tokens: list[list[Token]]  # per row, without the stop token
    logprobs: list[float]  # per row, log P(tokens | prompt): the sum of the chosen tokens' log-probabilities
    dists: list[list[Distribution]]  # per row, the distribution at each step (len(tokens) + 1 when it stopped)


def greedy_decode(
    *, backend: Backend, decoder: Decoder, rows: int, max_new_tokens: int, allowed: Callable[[Token], bool] | None = None,
    first_sentence: Sequence[int] = (),
) -> Greedy:
    """Every row decodes its own argmax (among `allowed` tokens) until a stop token, the rows in `first_sentence` also
    at the end of their first sentence; one batched step per token (finished rows drop out)."""
    outputs: list[list[Token]] = [[] for _ in range(rows)]
    logprobs = [0.0] * rows
    seen: list[list[Distribution]] = [[] for _ in range(rows)]
    finished = [False] * rows
    for _ in range(max_new_tokens):
        step: list[Token | None] = []
        for row, dist in enumerate(decoder.distributions()):
            if finished[row] or dist is None:
                finished[row] = True
                step.append(None)
                continue
            seen[row].append(dist)
            token, logprob = _best(dist, allowed)
            if ends_answer(backend, token, outputs[row]) or (
                row in first_sentence
                and goes_past_first_sentence(backend.text(outputs[row]), backend.text([*outputs[row], token]))
            ):
                finished[row] = True
                step.append(None)
            else:
                outputs[row].append(token)
                logprobs[row] += logprob
                step.append(token)
        if all(finished):
            break
        decoder.advance(step)
    return Greedy(tokens=outputs, logprobs=logprobs, dists=seen)


def _best(dist: Distribution, allowed: Callable[[Token], bool] | None) -> tuple[Token, float]:
    """The most likely allowed token and its log-probability (the most likely one if none of the top 64 is)."""
    tokens, top = dist.top(1)
    if allowed is None or allowed(tokens[0]):
        return tokens[0], float(top[0])
    tokens, top = dist.top(64)
    index = next((i for i, token in enumerate(tokens) if allowed(token)), 0)
    return tokens[index], float(top[index])


def answer_tokens(backend: Backend) -> Callable[[Token], bool]:
    """Whether a token may appear in an IGD answer: not one that opens the prompts' own markup (cached per token)."""
    seen: dict[Token, bool] = {}

    def allowed(token: Token) -> bool:
        if token not in seen:
            seen[token] = not opens_markup(backend.text([token]))
        return seen[token]

    return allowed


def greedy_rows(*, backend: Backend, decoder: Decoder, rows: int, max_new_tokens: int) -> list[list[Token]]:
    return greedy_decode(backend=backend, decoder=decoder, rows=rows, max_new_tokens=max_new_tokens).tokens


def plain_greedy(*, backend: Backend, prompt: str, max_new_tokens: int) -> tuple[str, int]:
    """The baseline: greedy decoding of one prompt. Returns (text, tokens generated)."""
    tokens = greedy_rows(backend=backend, decoder=backend.open([prompt]), rows=1, max_new_tokens=max_new_tokens)[0]
    return backend.text(tokens).strip(), len(tokens)


def _choose_memory_preview(texts: list[str]) -> tuple[int, int]:
    """Index of the most frequent normalised memory preview (first on ties) and how many previews agree with it."""
    keys = [normalise_answer(text) for text in texts]
    counts = Counter(keys)
    best = max(range(len(keys)), key=lambda i: (counts[keys[i]], -i))
    return best, counts[keys[best]]


def _union(*token_lists: list[Token]) -> list[Token]:
    seen: dict[Token, None] = {}
    for tokens in token_lists:
        for token in tokens:
            seen.setdefault(token, None)
    return list(seen)


def _memory_logprobs(dists: list[Distribution], tokens: list[Token]) -> np.ndarray:
    """The memory ensemble: mean of the variants' probabilities, as log-probabilities."""
    stacked = np.stack([np.asarray(d.logprobs(tokens), dtype=np.float64) for d in dists])
    top = stacked.max(axis=0)
    return top + np.log(np.mean(np.exp(stacked - top), axis=0))


def _memory_top(dists: list[Distribution], k: int) -> tuple[list[Token], np.ndarray]:
    if len(dists) == 1:
        return dists[0].top(k)
    candidates = _union(*(d.top(k)[0] for d in dists))
    logprobs = _memory_logprobs(dists, candidates)
    order = np.argsort(-logprobs)[:k]
    return [candidates[i] for i in order], logprobs[order]


def _sequence_logprobs(decoder: Decoder, requests: list[tuple[int, list[Token]]], greedy: Greedy) -> list[float]:
    """Teacher-forced log P(continuation | row), taken from the previews where the continuation is the row's own
    greedy preview (the same probabilities, already computed); the rest in one decoder call."""
    scores: list[float | None] = [
        greedy.logprobs[row] if list(tokens) == list(greedy.tokens[row]) else None for row, tokens in requests
    ]
    missing = [index for index, score in enumerate(scores) if score is None]
    if missing:
        for index, score in zip(missing, decoder.sequence_logprobs([requests[i] for i in missing])):
            scores[index] = score
    return [float(score) for score in scores]


class Lookahead:
    """Every row's next-token distributions along draft answers (the user, context and memory previews), teacher-forced:
    the answer filter's sequence probabilities are sums over them, and the token-level correction steps through them
    without a forward per token for as long as its answer follows a draft. Speculative decoding with the previews as
    drafts: the same distributions, so the same tokens. Computed on demand, all that is asked at once in one pass;
    a row's own preview is computed already."""

    def __init__(self, *, decoder: Decoder, drafts: list[list[Token]], greedy: Greedy, rows: int,
                 max_new_tokens: int) -> None:
        self._decoder = decoder
        self._rows = rows
        self.drafts = [list(d) for d in dict.fromkeys(tuple(d) for d in drafts if d)]
        self._dists: dict[tuple[tuple, int], list[Distribution]] = {}
        for draft in self.drafts:
            for row in range(rows):
                own = greedy.dists[row]
                # A preview cut at max_new_tokens lacks the distribution after its last token, which no step asks for.
                if greedy.tokens[row] == draft and (len(own) == len(draft) + 1 or len(draft) >= max_new_tokens):
                    self._dists[(tuple(draft), row)] = own

    def compute(self, pairs: Sequence[tuple[int, Sequence[Token]]]) -> None:
        """Make sure the (row, draft) distributions are there: the missing ones in one teacher-forced pass."""
        missing = [key for key in dict.fromkeys((tuple(draft), row) for row, draft in pairs if draft)
                   if key not in self._dists]
        if missing:
            found = self._decoder.teacher_forced([(row, list(draft)) for draft, row in missing])
            self._dists.update(zip(missing, found))

    def score(self, row: int, draft: list[Token]) -> float:
        """log P(draft | row's prompt)."""
        self.compute([(row, draft)])
        dists = self._dists[(tuple(draft), row)]
        return float(sum(dists[position].logprobs([token])[0] for position, token in enumerate(draft)))

    def draft_at(self, prefix: list[Token]) -> list[Token] | None:
        """The first draft that begins with `prefix`."""
        return next((d for d in self.drafts if len(prefix) <= len(d) and d[: len(prefix)] == prefix), None)

    def at(self, prefix: list[Token]) -> list[Distribution] | None:
        """Every row's distribution after `prefix`, if some draft begins with it."""
        if not prefix:
            return self._decoder.distributions()
        draft = self.draft_at(prefix)
        if draft is None:
            return None
        self.compute([(row, draft) for row in range(self._rows)])
        return [self._dists[(tuple(draft), row)][len(prefix)] for row in range(self._rows)]


def igd_generate(
    *,
    backend: Backend,
    prompts: IGDPrompts,
    mode: Mode,
    snippet: str,
    snippet_quality: float,
    params: IGDParams = IGDParams(),
) -> IGDResult:
    """One IGD answer. `snippet` is the context branch's support snippet, `snippet_quality` its similarity to the
    question in [0, 1] (both from agents.answer.select_sentences on the answer path)."""
    started = time.perf_counter()
    memory_prompts = list(prompts.memory[: params.memory_variants])
    rows = 2 + len(memory_prompts)
    root = backend.open([prompts.user, prompts.context, *memory_prompts])
    allowed = answer_tokens(backend)

    # 1. Previews.
    # ŷ_ctx and ŷ_mem are short answers: their first sentence. The user row is the draft of the answer itself, which
    # stops where a plain answer does.
    greedy = greedy_decode(backend=backend, decoder=root.fork(), rows=rows, max_new_tokens=params.max_new_tokens,
                           allowed=allowed, first_sentence=range(CONTEXT, rows))
    outputs = greedy.tokens
    texts = [backend.text(tokens).strip() for tokens in outputs]
    memory_texts = texts[FIRST_MEMORY:]
    chosen, agreeing = _choose_memory_preview(memory_texts)
    ctx_tokens, mem_tokens = outputs[CONTEXT], outputs[FIRST_MEMORY + chosen]
    previews = {"user": texts[USER], "context": texts[CONTEXT], "memory": memory_texts[chosen]}
    reliability = Reliability(
        context=context_reliability(
            preview_support=preview_support(previews["context"], snippet),
            snippet_quality=max(0.0, min(1.0, snippet_quality)),
            valid_short_answer=valid_short_answer(previews["context"], max_words=params.max_answer_words),
        ),
        memory=memory_reliability(agreeing_previews=agreeing, previews=len(memory_texts)),
    )
    prior = params.intent_prior(mode)

    def finish(answer: str, source: str, decision: FilterDecision | None, trace: list[TokenTrace], generated: int):
        return IGDResult(
            answer=answer, source=source, mode=mode, previews=previews, memory_previews=memory_texts,
            filter=decision, reliability=reliability, trace=trace, generated_tokens=generated,
            seconds=time.perf_counter() - started,
        )

    def correct(dists: list[Distribution]) -> tuple[Token, StepCorrection]:
        """One token of the token-level correction: the argmax of log p_user + λ_t (log p_ctx − log p_mem) over the
        union of the branches' top-K, less the prompt markup."""
        user, context, memory = dists[USER], dists[CONTEXT], dists[FIRST_MEMORY:]
        context_ids, context_top = context.top(params.top_k)
        memory_ids, memory_top = _memory_top(memory, params.top_k)
        pair = _union(context_ids, memory_ids)
        correction = step_correction(
            context_top=context_top,
            memory_top=memory_top,
            context_on_union=np.asarray(context.logprobs(pair)),
            memory_on_union=_memory_logprobs(memory, pair),
            prior=prior,
            reliability=reliability,
            params=params,
        )
        union = _union(user.top(params.top_k)[0], context_ids, memory_ids)
        candidates = [token for token in union if allowed(token)] or union
        scores = corrected_scores(
            user=np.asarray(user.logprobs(candidates)),
            context=np.asarray(context.logprobs(candidates)),
            memory=_memory_logprobs(memory, candidates),
            lam=correction.lam,
        )
        return candidates[int(np.argmax(scores))], correction

    # Decoders that can teacher-force (local) score the previews under every row: the filter's probabilities, and
    # the correction's distributions while its answer follows a preview. What the filter needs and the draft the
    # correction's first token enters are computed together.
    lookahead = None
    if hasattr(root, "teacher_forced"):
        lookahead = Lookahead(decoder=root, drafts=[outputs[USER], ctx_tokens, mem_tokens], greedy=greedy, rows=rows,
                              max_new_tokens=params.max_new_tokens)
    first = correct(lookahead.at([])) if params.token_correction and lookahead is not None else None

    # 2. Answer-level memory filter, on the probabilities of the two previews from the prompt state.
    decision = None
    if params.answer_filter:
        equal = normalise_answer(previews["context"]) == normalise_answer(previews["memory"])
        if equal:
            decision = FilterDecision(memory_ratio=1.0, user_ratio=1.0, memory_disagrees=False)
        else:
            memory_rows = range(FIRST_MEMORY, rows)
            requests = [(USER, ctx_tokens), (USER, mem_tokens)]
            requests += [(row, ctx_tokens) for row in memory_rows] + [(row, mem_tokens) for row in memory_rows]
            if lookahead is not None:
                entered = lookahead.draft_at([first[0]]) if first is not None else None
                lookahead.compute(requests + ([(row, entered) for row in range(rows)] if entered else []))
                scores = [lookahead.score(row, tokens) if tokens else 0.0 for row, tokens in requests]
            else:
                scores = _sequence_logprobs(root, requests, greedy)
            per_variant = len(memory_rows)
            decision = answer_filter(
                memory_logp_mem=log_mean_exp(scores[2 + per_variant :]),
                memory_logp_ctx=log_mean_exp(scores[2 : 2 + per_variant]),
                user_logp_ctx=scores[0],
                user_logp_mem=scores[1],
                previews_equal=False,
                params=params,
            )
        # STRICT keeps the context whatever memory thinks (the knowledge base is authoritative); the disagreement is
        # still reported, so the answer path can record it on the article.
        if decision.memory_disagrees and mode is Mode.TRUTH:
            return finish(previews["memory"], "memory", decision, [], len(mem_tokens))

    if not params.token_correction:
        return finish(previews["user"], "user", decision, [], len(outputs[USER]))

    # 3. Token-level correction around the user distribution.
    decoder = None if lookahead is not None else root.fork()
    generated: list[Token] = []
    trace: list[TokenTrace] = []
    for step in range(params.max_new_tokens):
        if step == 0 and first is not None:
            token, correction = first
        else:
            dists = lookahead.at(generated) if lookahead is not None else None
            if dists is None:
                if decoder is None:  # the answer left the drafts: decode on, from the prompts plus what it has so far
                    decoder = root.fork()
                    decoder.extend(generated)
                dists = decoder.distributions()
            token, correction = correct(dists)
        if ends_answer(backend, token, generated):
            break
        generated.append(token)
        trace.append(TokenTrace(
            text=backend.text([token]), jsd=correction.jsd, gate=correction.gate, direction=correction.direction,
            lam=correction.lam,
        ))
        if decoder is not None:
            decoder.advance([token] * rows)
    return finish(backend.text(generated).strip(), "corrected", decision, trace, len(generated))
