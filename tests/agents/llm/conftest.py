"""What the agents.llm tests share: a server with llama-cpp-python's quirks."""
import pytest

from tests.support.scripted_llm import LLAMA_CPP_QUIRKS, ScriptedLLM


@pytest.fixture
def llama_cpp_like():
    """A scripted server with llama-cpp-python's quirks."""
    with ScriptedLLM(quirks=LLAMA_CPP_QUIRKS, model="gemma-3-270m") as server:
        yield server
