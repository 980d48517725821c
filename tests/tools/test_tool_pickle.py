"""A module tree holding tools pickles (multiprocessing, caches) and the tools still work after."""

from __future__ import annotations

import pickle

import pytest

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import ToolArgumentsError
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules import Prompt
from promptimus.tools import CompositeTool, Tool


@Tool.decorate
def power(a: int, b: int = 2) -> int:
    """Raise a to the power b.

    Args:
        a: The base.
    """
    return a**b


@Tool.decorate(name="shout", timeout=5)
async def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def roundtrip(obj: object) -> object:
    return pickle.loads(pickle.dumps(obj))


async def test_decorated_tools_pickle_and_still_validate() -> None:
    clone = roundtrip(power)
    assert isinstance(clone, Tool) and clone is not power
    assert clone(2, 8) == 256  # still the function
    assert await clone.forward('{"a": 3}') == 9
    assert clone.to_openai() == power.to_openai()  # same schema, same description
    with pytest.raises(ToolArgumentsError):
        await clone.forward('{"a": "not a number"}')
    with pytest.raises(ToolArgumentsError):
        await clone.forward('{"a": 1, "extra": 1}')


async def test_an_agent_with_function_module_and_composite_tools_pickles_and_runs() -> None:
    helper = Prompt("You help.")
    agent = OpenaiToolCallingAgent(
        "Use tools.",
        [
            power,
            shout,
            Tool.from_module(helper, name="helper"),
            CompositeTool("both", "Run several.", [power, shout]),
        ],
    )
    clone = roundtrip(agent)
    assert clone.digest() == agent.digest()
    llm = ScriptedLLM(
        [
            ScriptedLLM.tool_call("power", {"a": 2, "b": 5}),
            ScriptedLLM.tool_call("shout", {"text": "hi"}),
            "done",
        ]
    )
    result = await clone.with_llm(llm).run("go")
    assert result.output.content == "done"
    calls = [call for step in result.record.steps for call in step.tool_calls]
    assert [(c.name, c.result) for c in calls] == [("power", "32"), ("shout", "HI")]
