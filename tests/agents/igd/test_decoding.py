"""agents.igd.decoding on a scripted model in process (token texts as tokens, no server): what the token-level
correction may choose, where previews end."""
import math

from agents.igd.arithmetic import IGDParams, Mode
from agents.igd.decoding import igd_generate
from agents.igd.openai_backend import OpenAIBackend, SparseDistribution
from agents.igd.prompts import build_prompts
from tests.support.igd_script import CONTEXT_SAYS, MEMORY_SAYS, QUESTION, branch_of

CONTEXT = f"The capital of Freedonia is{CONTEXT_SAYS}."

# The context branch has just read the prompt's <context> element and gives its opening some weight; memory, which
# read none, almost none: the ratio of the two is far larger for the markup than for the answer.
MARKUP_FIRST_TOKEN = {
    "context": {CONTEXT_SAYS: 0.60, " <": 0.30, "\n": 0.10},
    "memory": {MEMORY_SAYS: 0.50, CONTEXT_SAYS: 0.25, "\n": 0.2499, " <": 0.0001},
    "user_strict": {CONTEXT_SAYS: 0.70, MEMORY_SAYS: 0.20, " <": 0.05, "\n": 0.05},
}


class InProcess(OpenAIBackend):
    """The OpenAI-compatible decoding with each prompt's next-token distribution from a function, not a server."""

    def __init__(self, next_token) -> None:
        self.name = "scripted"
        self._next = next_token  # (branch, answer so far) -> {token: probability}

    def next_distributions(self, prompts: list[str]) -> list[SparseDistribution]:
        found = []
        for prompt in prompts:
            probabilities = self._next(branch_of(prompt), prompt.rsplit("Answer:", 1)[1])
            found.append(SparseDistribution({t: math.log(p) for t, p in probabilities.items()}))
        return found


def first_token_then_line_break(first_token: dict[str, dict[str, float]]):
    return lambda branch, so_far: {"\n": 0.95, ".": 0.05} if so_far else first_token[branch]


def scripted(continuations: dict[str, list[str]]):
    """Each branch says its tokens in turn, then ends the line (as it does after anything off its script)."""
    def next_token(branch: str, so_far: str) -> dict[str, float]:
        tokens = continuations[branch]
        position = next((n for n in range(len(tokens)) if "".join(tokens[:n]) == so_far), None)
        return {"\n": 0.9, ".": 0.1} if position is None else {tokens[position]: 0.9, "\n": 0.1}
    return next_token


def test_strict_correction_never_opens_the_prompts_markup_however_much_the_context_branch_favours_it():
    prompts = build_prompts(question=QUESTION, context=CONTEXT, snippet=CONTEXT, mode=Mode.STRICT)
    result = igd_generate(backend=InProcess(first_token_then_line_break(MARKUP_FIRST_TOKEN)), prompts=prompts, mode=Mode.STRICT, snippet=CONTEXT,
                          snippet_quality=0.8, params=IGDParams(max_new_tokens=3))
    # log p_user + λ (log p_ctx − log p_mem) with λ ≈ 0.7: " <" scores about −3.0 + 0.7 · 8.0 against the answer's
    # −0.4 + 0.7 · 0.9, so over the plain union of top-K sets the correction would write the markup.
    assert result.trace[0].lam > 0.5
    assert result.answer == CONTEXT_SAYS.strip() and result.winner == "context"
    assert all("<" not in step.text for step in result.trace)


def test_the_context_and_memory_previews_are_first_sentences_and_the_answer_stops_where_a_plain_answer_does():
    says = [CONTEXT_SAYS, ".", " It", " is", " old", "."]
    backend = InProcess(scripted({"user_strict": says, "context": says, "memory": [MEMORY_SAYS, ".", " It", " is"]}))
    prompts = build_prompts(question=QUESTION, context=CONTEXT, snippet=CONTEXT, mode=Mode.STRICT)
    result = igd_generate(backend=backend, prompts=prompts, mode=Mode.STRICT, snippet=CONTEXT, snippet_quality=0.8,
                          params=IGDParams(max_new_tokens=8))
    assert result.previews == {"user": "Sylvania. It is old.", "context": "Sylvania.", "memory": "Fredville."}
    assert result.answer == "Sylvania. It is old."
