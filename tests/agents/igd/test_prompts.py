"""agents.igd.prompts: the prompts' own markup and which token texts could open it in an answer; where a preview ends."""
import pytest

from agents.igd.arithmetic import Mode
from agents.igd.prompts import MARKUP_TAGS, build_prompts, goes_past_first_sentence, opens_markup


@pytest.mark.parametrize("text", ["<", " <", "\n<", "</", " </", "<pass", "<context", "<context>", "</passage>"])
def test_token_texts_that_could_open_a_prompt_tag(text):
    assert opens_markup(text)


@pytest.mark.parametrize("text", ["", " ", "\n", "Paris", " 12", "<=", "<5", " <a", "context", ">"])
def test_token_texts_an_answer_may_hold(text):
    assert not opens_markup(text)


def test_the_tags_the_prompts_use_are_the_ones_an_answer_cannot_open():
    prompts = build_prompts(question="Q?", context="C.", snippet="S.", mode=Mode.STRICT)
    used = {tag for tag in MARKUP_TAGS if f"<{tag}>" in prompts.user + prompts.context}
    assert used and all(opens_markup(f"<{tag}>") for tag in used)


@pytest.mark.parametrize("previous, extended, past", [
    (" Yes, you can.", " Yes, you can. You", True),
    (" Paris.", " Paris. It", True),
    (" Dr.", " Dr. Shankararaman", False),  # an abbreviation, not a sentence end
    (" It is 3.", " It is 3.5", False),
    (" Yes, you can", " Yes, you can.", False),  # the sentence ends; nothing follows it yet
    (" Paris", " Paris is", False),
])
def test_a_preview_ends_once_it_goes_past_its_first_sentence(previous, extended, past):
    assert goes_past_first_sentence(previous, extended) is past
