"""Edge cases of tools, agents and structured output that once failed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.core import Module
from promptimus.dto import Message
from promptimus.errors import ToolError
from promptimus.llms import ScriptedLLM
from promptimus.modules.structural import openai_response_format
from promptimus.tools.tool import Tool

S = ScriptedLLM


# --- a pydantic `Field(...)` as a Python default -------------------------------------------------


def scaled(x: int = Field(3, description="How many.", ge=0), factor: int = 2) -> int:
    return x * factor


async def test_field_default_is_an_optional_argument_with_its_value() -> None:
    tool = Tool(scaled)

    assert tool.parameters_schema["properties"]["x"] == {
        "default": 3,
        "description": "How many.",
        "minimum": 0,
        "type": "integer",
    }
    assert "required" not in tool.parameters_schema
    assert await tool.call("{}") == "6"  # the default value, not the FieldInfo object
    assert await tool.call('{"x": 5}') == "10"
    with pytest.raises(ToolError, match="greater than or equal to 0"):
        await tool.call('{"x": -1}')


def listed(items: list[int] = Field(default_factory=list)) -> int:  # noqa: B008
    return len(items)


async def test_field_default_factory_is_called() -> None:
    tool = Tool(listed)
    assert await tool.call("{}") == "0"
    assert await tool.call('{"items": [1, 2]}') == "2"


# --- strict response_format for a model with a field named like a schema keyword ---------------


class Inner(BaseModel):
    x: int


class Keywords(BaseModel):
    properties: Inner
    type: str
    required: list[str]


def test_response_format_with_keyword_named_fields_is_strict_and_unchanged() -> None:
    fmt = openai_response_format(Keywords)["json_schema"]
    schema = fmt["schema"]

    assert set(schema["properties"]) == {"properties", "type", "required"}
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Inner"]["additionalProperties"] is False
    assert fmt["strict"] is True


# --- agent.run(...) inside a tool reports to the parent's record --------------------------------


async def test_child_run_inside_a_tool_is_attached_to_the_parent_record() -> None:
    child = OpenaiToolCallingAgent("child", []).with_llm(S(["child answer"]))

    @Tool.decorate
    async def ask_child(question: str) -> str:
        output, _ = await child.run(question)
        return str(output.content)

    parent_llm = S([S.tool_call("ask_child", {"question": "q"}), "done"])
    parent = OpenaiToolCallingAgent("parent", [ask_child]).with_llm(parent_llm)

    _, record = await parent.run("go")

    child_record = record.steps[0].tool_calls[0].child
    assert child_record is not None
    assert child_record.output.content == "child answer"
    assert record.usage.total_tokens == sum(
        s.usage.total_tokens for s in (*record.steps, *child_record.steps)
    )


async def test_every_agent_a_tool_runs_is_attached_and_counted() -> None:
    first = OpenaiToolCallingAgent("first", []).with_llm(S(["one"]))
    second = OpenaiToolCallingAgent("second", []).with_llm(S(["two"]))

    @Tool.decorate
    async def ask_both(question: str) -> str:
        a = await first(question)
        b, _ = await second.run(question)
        return f"{a.content} {b.content}"

    parent_llm = S([S.tool_call("ask_both", {"question": "q"}), "done"])
    parent = OpenaiToolCallingAgent("parent", [ask_both]).with_llm(parent_llm)

    _, record = await parent.run("go")

    call = record.steps[0].tool_calls[0]
    assert call.result == "one two"
    assert [c.output.content for c in call.children] == ["one", "two"]
    assert call.child is call.children[0]
    own = sum(s.usage.total_tokens for s in record.steps)
    children = sum(s.usage.total_tokens for c in call.children for s in c.steps)
    assert children > 0
    assert record.usage.total_tokens == own + children


# --- handoff_history needs a forward that takes a list of messages ------------------------------


class TakesOneMessage(Module):
    async def forward(self, message: Message) -> str:
        return message.content


def test_handoff_history_refuses_a_forward_taking_a_single_message() -> None:
    with pytest.raises(ToolError, match=r"list\[Message\]"):
        Tool.from_module(TakesOneMessage(), handoff_history=True)


# --- handoff from a ReACT parent: its text tool loop follows handoff_include_tool_loop ----------


def now() -> str:
    """Current time."""
    return "noon"


async def _react_handoff(include_tool_loop: bool) -> list[Message]:
    seen: list[list[Message]] = []

    def child_reply(history: list[Message], kwargs: dict[str, Any]) -> str:
        seen.append(list(history[1:]))  # without the system prompt
        return "child done"

    child = OpenaiToolCallingAgent("child", []).with_llm(S(child_reply))
    kid = Tool.from_module(
        child, name="kid", handoff_history=True, handoff_include_tool_loop=include_tool_loop
    )
    parent = ToolCallingAgent([now, kid]).with_llm(
        S(
            [
                "Thought: time first\nAction: now\nAction Input: {}",
                'Thought: delegate\nAction: kid\nAction Input: {"request": "sub task"}',
                "Thought: ok\nAnswer: all done",
            ]
        )
    )
    assert (await parent("the question")).content == "all done"
    return seen[0]


async def test_react_handoff_without_tool_loop_drops_actions_and_observations() -> None:
    seen = await _react_handoff(include_tool_loop=False)
    assert [(m.role.value, m.content) for m in seen] == [
        ("user", "the question"),
        ("user", "sub task"),
    ]


async def test_react_handoff_with_tool_loop_keeps_answered_actions_only() -> None:
    seen = await _react_handoff(include_tool_loop=True)
    contents = [m.content for m in seen]
    assert contents[0] == "the question"
    assert contents[1].endswith("Action: now\nAction Input: {}")
    assert contents[2] == "Observation: noon"
    assert contents[3] == "sub task"  # the pending `Action: kid` is left out
    assert len(contents) == 4


# --- a run record exports to JSON ----------------------------------------------------------------


class Answer(BaseModel):
    city: str


async def test_run_record_to_dict_is_json_with_every_step_and_child() -> None:
    import json

    child = OpenaiToolCallingAgent("child", []).with_llm(S(["Paris"]))
    tool = Tool.from_module(child, name="ask", description="Ask the child.")
    parent_llm = S([S.tool_call("ask", {"request": "capital?"}), '{"city": "Paris"}'])
    parent = OpenaiToolCallingAgent("parent", [tool], structural_output=Answer)

    output, record = await parent.with_llm(parent_llm).run("go")

    data = json.loads(json.dumps(record.to_dict()))
    assert output == Answer(city="Paris")
    assert data["output"] == {"city": "Paris"}
    assert data["usage"]["total_tokens"] == record.usage.total_tokens > 0
    assert [s["index"] for s in data["steps"]] == [0, 1]
    first = data["steps"][0]
    assert first["request"][-1] == {"role": "user", "content": "go", "images": [], "documents": []}
    assert first["reply"]["tool_calls"][0]["function"]["name"] == "ask"
    call = first["tool_calls"][0]
    assert call["name"] == "ask" and call["result"] == "Paris" and call["error"] is None
    assert call["children"][0]["output"]["content"] == "Paris"
    assert call["children"][0]["steps"][0]["reply"]["content"] == "Paris"


@pytest.mark.parametrize("role", ["assistant", "robot", ""])
def test_react_observation_role_must_be_an_outside_role(role: str) -> None:
    from promptimus.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="must be 'user', 'system' or 'tool'"):
        ToolCallingAgent([], observation_role=role)


def test_react_observation_role_accepts_outside_roles() -> None:
    for role in ("user", "system", "tool"):
        assert ToolCallingAgent([], observation_role=role).observation_role.value == role
