"""What the agents take when they are made and when they are asked: every number checked where
it is given, a request that is not text or messages refused before a call, and the ReACT agent
made in the native agent's order as well as in the tools-first one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import InvalidAgentRequest, InvalidArgument
from promptimus.evals import LLMJudge
from promptimus.llms import ScriptedLLM
from promptimus.modules import StructuralOutput
from promptimus.tools import Tool


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Answer(BaseModel):
    value: int


AGENTS: list[Any] = [
    lambda **kw: OpenaiToolCallingAgent("You add numbers.", [add], **kw),
    lambda **kw: ToolCallingAgent("You add numbers.", [add], **kw),
]


@pytest.mark.parametrize("make", AGENTS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1.5, "5", True, 0, -1, None])
def test_max_steps_must_be_a_whole_number_of_steps(make: Any, bad: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"max_steps must be an int >= 1"):
        make(max_steps=bad)


@pytest.mark.parametrize("make", AGENTS)
@pytest.mark.parametrize("bad", ["10", 2.5, float("nan"), -1, True])
def test_memory_size_must_be_a_count(make: Any, bad: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"memory_size must be an int >= 0"):
        make(memory_size=bad)


@pytest.mark.parametrize("bad", ["3", 1.5, float("nan"), -1])
def test_retry_counts_are_checked_where_they_are_given(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"n_retries must be an int >= 0"):
        StructuralOutput(Answer, n_retries=bad)
    with pytest.raises(InvalidArgument, match=r"n_retries must be an int >= 0"):
        LLMJudge("Full marks.", n_retries=bad)
    with pytest.raises(InvalidArgument, match=r"n_retries must be an int >= 0"):
        OpenaiToolCallingAgent("x", structural_output=StructuralOutput(Answer, n_retries=bad))


@pytest.mark.parametrize("make", AGENTS)
@pytest.mark.parametrize(
    ("request_", "named"),
    [
        (5, r"got int 5\."),
        ({"question": "2+2?"}, r"got dict \{'question'"),
        (["2+2?"], r"a list holding str"),
    ],
)
async def test_a_request_that_is_not_text_or_messages_is_refused_before_a_call(
    make: Any, request_: Any, named: str
) -> None:
    llm = ScriptedLLM(["Answer: 4"])
    agent = make().with_llm(llm)
    with pytest.raises(InvalidAgentRequest, match=named) as raised:
        await agent(request_)
    assert isinstance(raised.value, TypeError)  # what Python code catching it expected
    with pytest.raises(InvalidAgentRequest):
        await agent.run(request_)
    with pytest.raises(InvalidAgentRequest):
        async for _ in agent.stream(request_):
            pass
    assert llm.requests == [] and len(agent.memory) == 0


async def test_the_react_agent_takes_the_native_agents_order() -> None:
    llm = ScriptedLLM(
        ['Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}', "Thought: done\nAnswer: 5"]
    )
    agent = ToolCallingAgent("You add numbers.", [add], 4).with_llm(llm)
    answer = await agent("2+3?")
    assert answer.content == "5"
    assert agent.max_steps == 4 and list(agent.tools) == ["add"]
    system = llm.requests[0][0][0]
    assert system.role == MessageRole.SYSTEM and system.content.startswith("You add numbers.")
    assert "Action Input" in system.content  # the ReACT instructions follow the prompt
    assert llm.requests[1][0][-1] == Message(role=MessageRole.USER, content="Observation: 5")


def test_the_tools_first_order_is_still_taken() -> None:
    tool = Tool.decorate(add)
    native = ToolCallingAgent("You add.", [tool], 3, 7)
    for older in (
        ToolCallingAgent([tool], 3, 7, "You add."),
        ToolCallingAgent([tool], max_steps=3, memory_size=7, prompt="You add."),
        ToolCallingAgent(tools=[tool], max_steps=3, memory_size=7, prompt="You add."),
    ):
        assert older.state_dict() == native.state_dict()
        assert (older.max_steps, older.memory.size) == (3, 7)
    assert ToolCallingAgent([]).max_steps == 5
    with pytest.raises(TypeError, match="multiple values for argument 'max_steps'"):
        ToolCallingAgent([tool], 3, max_steps=4)


@pytest.mark.parametrize("agent_type", [OpenaiToolCallingAgent, ToolCallingAgent])
async def test_a_prompt_module_given_whole_is_the_agents_system_prompt(agent_type: Any) -> None:
    import promptimus as pm

    prompt = pm.Prompt("You add numbers.")
    reply = "Answer: 4" if agent_type is ToolCallingAgent else "4"
    llm = ScriptedLLM([reply])
    agent = agent_type(prompt, [add]).with_llm(llm)
    answer = await agent("2+2?")
    assert answer.content == "4"
    system = llm.requests[0][0][0]
    assert system.role == MessageRole.SYSTEM and system.content.startswith("You add numbers.")
    assert agent.predictor.prompt is prompt
    by_text = agent_type("You add numbers.", [add])
    assert agent.state_dict() == by_text.state_dict()  # the same checkpoint either way
