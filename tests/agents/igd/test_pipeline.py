"""agents.igd.pipeline: the route decision the answer path records — whether the answer-level filter routed to memory,
and against which of the support snippet's articles."""
from agents.answer import GeneratedAnswer, Sentence
from agents.igd.arithmetic import FilterDecision, Mode
from agents.igd.decoding import IGDResult
from agents.igd.pipeline import IGDAnswer, MemoryDisagreement

SNIPPET = [
    Sentence(ref="faq-hours", position=0, passage_rank=0, text="The desk opens at 8 am.", similarity=0.9),
    Sentence(ref="web-fares", position=3, passage_rank=1, text="A day pass costs 12 euro.", similarity=0.7),
    Sentence(ref="web-fares", position=4, passage_rank=1, text="Children travel free.", similarity=0.6),
]


def answer(*, disagrees: bool | None, context: str = "12 euro", memory: str = "15 euro", mode: Mode = Mode.TRUTH,
           snippet=SNIPPET) -> IGDAnswer:
    decision = None if disagrees is None else FilterDecision(memory_ratio=6.0, user_ratio=0.8, memory_disagrees=disagrees)
    result = IGDResult(answer=memory, source="memory", mode=mode, previews={"user": context, "context": context, "memory": memory},
                       memory_previews=[memory, memory, "14 euro"], filter=decision, reliability=None)
    return IGDAnswer(result=result, snippet=snippet, context="", answer=GeneratedAnswer(reply=memory, citations=[]))


def test_a_route_to_memory_names_the_article_whose_snippet_sentence_supports_the_context_preview():
    # the best-similarity sentence is another article's; the context preview's words are in web-fares' sentence
    assert answer(disagrees=True).disagreement == MemoryDisagreement(
        ref="web-fares", passage="A day pass costs 12 euro. Children travel free.", context_preview="12 euro",
        memory_preview="15 euro", memory_ratio=6.0, user_ratio=0.8,
    )


def test_with_equal_support_the_more_similar_sentence_decides_and_strict_mode_is_reported_too():
    found = answer(disagrees=True, context="open", mode=Mode.STRICT).disagreement  # in no sentence: support 0 for all
    assert found is not None and found.ref == "faq-hours" and found.passage == "The desk opens at 8 am."


def test_no_route_no_filter_or_no_snippet_is_no_disagreement():
    assert answer(disagrees=False).disagreement is None
    assert answer(disagrees=None).disagreement is None  # the filter was switched off (an ablation)
    assert answer(disagrees=True, snippet=[]).disagreement is None


def test_a_corrected_answer_that_is_a_preview_follows_that_previews_source_whatever_the_mean_lambda():
    from agents.igd.decoding import TokenTrace

    # A long answer leaning on memory for its first tokens and on the context at the end averages below zero.
    trace = [TokenTrace(text=t, jsd=0.4, gate=1.0, direction=-0.3, lam=lam)
             for t, lam in (("The", -0.3), (" Congo", -0.3), (" River", 0.1))]

    def corrected(answer_text: str) -> IGDResult:
        return IGDResult(answer=answer_text, source="corrected", mode=Mode.TRUTH,
                         previews={"user": "the Congo River", "context": "The Congo River.", "memory": "the Nile"},
                         memory_previews=["the Nile", "The Nile", "the Amazon"], filter=None, reliability=None, trace=trace)

    assert corrected("the Congo river").winner == "context"  # was "memory" from the mean λ (citations dropped)
    assert corrected("The Nile").winner == "memory"
    assert corrected("the Zambezi").winner == "memory"  # no preview: the mean λ decides, as before
