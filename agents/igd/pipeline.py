"""IGD on retrieved passages: select the support snippet, build the branches' prompts, decode, cite.

Plain data in, plain data out: the answer path (conflicts/services/answering.py), the playground and igd_eval
all come through here.
"""
from __future__ import annotations

from dataclasses import dataclass

from agents.answer import Embed, GeneratedAnswer, Passage, Sentence, select_sentences
from agents.citations import citation_tag
from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import Backend, IGDResult, igd_generate
from agents.igd.prompts import PASSAGE_TAG, build_prompts, preview_support
from agents.prompt_text import neutralise_tag, quote_attribute

CONTEXT_CHARS = 2400  # retrieved text in the user branch; keeps prompts inside a small model's attention window
SENTENCE_STYLE = "Reply in one short sentence."
# On the answer path replies are a sentence, not a phrase.
ANSWER_PARAMS = IGDParams(max_new_tokens=40, max_answer_words=25)


@dataclass(frozen=True)
class MemoryDisagreement:
    """The answer-level filter routed to memory against a retrieved article: closed-book, the model answered
    `memory_preview` where, from the article's support snippet (`passage`), it answered `context_preview`."""

    ref: str
    passage: str
    context_preview: str
    memory_preview: str
    memory_ratio: float  # P_mem(ŷ_mem) / P_mem(ŷ_ctx)
    user_ratio: float  # P_user(ŷ_ctx) / P_user(ŷ_mem)


@dataclass
class IGDAnswer:
    result: IGDResult
    snippet: list[Sentence]
    context: str
    answer: GeneratedAnswer

    @property
    def snippet_text(self) -> str:
        return " ".join(s.text for s in self.snippet)

    @property
    def disagreement(self) -> MemoryDisagreement | None:
        """The filter's route to memory (in either mode: STRICT still answers from the context) and the article it
        routed against: of the snippet's articles, the one whose sentence best supports the context preview."""
        decision = self.result.filter
        if decision is None or not decision.memory_disagrees or not self.snippet:
            return None
        context_preview = self.result.previews["context"]
        best = max(self.snippet, key=lambda s: (preview_support(context_preview, s.text), s.similarity))
        return MemoryDisagreement(
            ref=best.ref,
            passage=" ".join(s.text for s in self.snippet if s.ref == best.ref),
            context_preview=context_preview,
            memory_preview=self.result.previews["memory"],
            memory_ratio=decision.memory_ratio,
            user_ratio=decision.user_ratio,
        )


def context_block(passages: list[Passage], *, limit: int = CONTEXT_CHARS) -> str:
    """The retrieved passages as <passage> elements, best first, cut to `limit` characters in all."""
    blocks: list[str] = []
    used = 0
    for passage in passages:
        text = passage.text[: max(0, limit - used)]
        if not text:
            break
        blocks.append(
            f'<{PASSAGE_TAG} ref="{quote_attribute(passage.ref)}" title="{quote_attribute(passage.title)}">\n'
            f"{neutralise_tag(text, PASSAGE_TAG)}\n</{PASSAGE_TAG}>"
        )
        used += len(text)
    return "\n".join(blocks)


def igd_answer(
    *,
    question: str,
    passages: list[Passage],
    mode: Mode,
    backend: Backend,
    params: IGDParams = ANSWER_PARAMS,
    style: str = SENTENCE_STYLE,
    embed: Embed,
) -> IGDAnswer:
    """The IGD reply with citation tags: the support snippet's articles, unless the answer followed memory."""
    snippet = select_sentences(question=question, passages=passages, embed=embed)
    snippet_text = " ".join(s.text for s in snippet)
    quality = sum(s.similarity for s in snippet) / len(snippet) if snippet else 0.0
    context = context_block(passages)
    prompts = build_prompts(question=question, context=context, snippet=snippet_text, mode=mode, style=style)
    result = igd_generate(
        backend=backend, prompts=prompts, mode=mode, snippet=snippet_text, snippet_quality=quality, params=params
    )
    citations: list[str] = []
    if result.winner != "memory":
        for sentence in snippet:
            if sentence.ref not in citations:
                citations.append(sentence.ref)
    tags = " ".join(citation_tag(ref) for ref in citations)
    reply = f"{result.answer} {tags}".strip()
    return IGDAnswer(result=result, snippet=snippet, context=context, answer=GeneratedAnswer(reply=reply, citations=citations))
