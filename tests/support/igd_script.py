"""A scripted model for IGD tests: Freedonia's capital is Sylvania in the context and Fredville in the model's memory.

`freedonia(request)` answers a /v1/completions request with the next-token distribution of the branch whose prompt
it is (agents.igd.prompts), so the OpenAI-compatible backend, the answer path and the playground decode for real.
"""
import math

from tests.support.scripted_llm import NextToken

QUESTION = "What is the capital of Freedonia?"
CONTEXT_SAYS, MEMORY_SAYS = " Sylvania", " Fredville"


def dist(**probabilities: float) -> dict[str, float]:
    return {token: math.log(p) for token, p in probabilities.items()}


def branch_of(prompt: str) -> str:
    if "using only the passage" in prompt:
        return "context"
    if "Answer the question truthfully" in prompt:
        return "user_truth"
    if "Answer the question from the context" in prompt:
        return "user_strict"
    return "memory"


FIRST_TOKEN = {
    "context": {CONTEXT_SAYS: 0.90, MEMORY_SAYS: 0.05, "\n": 0.05},
    "memory": {CONTEXT_SAYS: 0.05, MEMORY_SAYS: 0.90, "\n": 0.05},
    "user_strict": {CONTEXT_SAYS: 0.50, MEMORY_SAYS: 0.45, "\n": 0.05},
    "user_truth": {CONTEXT_SAYS: 0.45, MEMORY_SAYS: 0.50, "\n": 0.05},
}


def freedonia(request: dict) -> NextToken:
    """Each branch's next-token distribution from its prompt; after one answer token every branch ends the line."""
    prompt = request["prompt"]
    answer_so_far = prompt.rsplit("Answer:", 1)[1]
    if answer_so_far:
        return NextToken(dist(**{"\n": 0.95, ".": 0.05}))
    return NextToken({token: math.log(p) for token, p in FIRST_TOKEN[branch_of(prompt)].items()})
