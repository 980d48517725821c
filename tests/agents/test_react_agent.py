"""ToolCallingAgent (ReACT): the parser's tolerance, and the agent loop with errors fed back."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.react_parser import ReactAction, ReactAnswer, parse_react
from promptimus.dto import Message, MessageRole
from promptimus.errors import MaxIterExceeded, ReactParseError
from promptimus.llms import ScriptedLLM
from promptimus.tools.run_context import RunContext

S = ScriptedLLM

# --- parser ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tool", "arguments"),
    [
        ("Thought: t\nAction: now\nAction Input: {}", "now", {}),
        ("Thought: t\nAction: now\nAction Input:", "now", {}),
        ("Thought: t\nAction: now\nAction Input: None", "now", {}),
        ("Thought: t\nAction: now", "now", {}),
        (
            'Thought: t\nAction: find\nAction Input: {"q": {"tags": ["a", {"b": "}"}]}, "n": 2}',
            "find",
            {"q": {"tags": ["a", {"b": "}"}]}, "n": 2},
        ),
        (
            'Thought: t\nAction: `find`\nAction Input:\n```json\n{"q": "x"}\n```\n',
            "find",
            {"q": "x"},
        ),
        (
            'Sure, let me look.\nThought: t\nAction: find\nAction Input: {"q": "x"} and then\n'
            "Observation: invented\nThought: more\nAnswer: made up",
            "find",
            {"q": "x"},
        ),
        ('```\nThought: t\nAction: find\nAction Input: {"q": "x"}\n```', "find", {"q": "x"}),
        ('**Thought:** t\n**Action:** find\n**Action Input:** {"q": "x"}', "find", {"q": "x"}),
        ('Action: find({"q": "x"})', "find", {"q": "x"}),
        ('action: find\naction input: {"q": "x"}', "find", {"q": "x"}),
    ],
)
def test_parser_reads_actions(text: str, tool: str, arguments: dict[str, object]) -> None:
    parsed = parse_react(text)
    assert isinstance(parsed, ReactAction)
    assert (parsed.tool, parsed.arguments) == (tool, arguments)
    assert "Observation" not in parsed.text and "```" not in parsed.text


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Thought: done\nAnswer: 42", "42"),
        ("Thought: done\nFinal Answer: Paris.\nIt is in France.", "Paris.\nIt is in France."),
        ("```\nThought: done\nAnswer: 42\n```", "42"),
        ("**Answer:** yes", "yes"),
        ("Thought: I could use Action: x later\nAnswer: no", "no"),
    ],
)
def test_parser_reads_answers(text: str, answer: str) -> None:
    parsed = parse_react(text)
    assert isinstance(parsed, ReactAnswer) and parsed.answer == answer


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("I think the answer is 4.", "neither"),
        ('Thought: t\nAction: find\nAction Input: {"q": "x"', "not valid JSON"),
        ("Thought: t\nAction: find\nAction Input: paris", "not a JSON object"),
        ("Thought: t\nAction: find\nAction Input: [1, 2]", "JSON object"),
        ("Thought: t\nAnswer:", "empty"),
        ("Action:\nAction Input: {}", "names no tool"),
    ],
)
def test_parser_errors_tell_the_model_what_to_do(text: str, hint: str) -> None:
    with pytest.raises(ReactParseError, match=hint) as info:
        parse_react(text)
    assert len(str(info.value)) < 600


# --- agent -------------------------------------------------------------------------------------


def now() -> str:
    """The current time."""
    return "12:00"


class Filter(BaseModel):
    city: str
    tags: list[str]


def search(query: str, filter: Filter) -> str:
    """Search the catalogue."""
    return f"{query} in {filter.city} tagged {','.join(filter.tags)}"


async def test_zero_arg_tool_and_answer() -> None:
    llm = S(["Thought: need time\nAction: now\nAction Input: {}", "Thought: ok\nAnswer: noon"])
    agent = ToolCallingAgent([now]).with_llm(llm)

    reply = await agent("what time is it?")

    assert isinstance(reply, Message) and reply.content == "noon"
    second = llm.requests[1][0]
    assert second[-1] == Message(role=MessageRole.USER, content="Observation: 12:00")
    system = second[0].content
    assert "now: The current time." in system and "Action Input" in system


async def test_nested_json_arguments_are_validated_into_models() -> None:
    llm = S(
        [
            'Thought: t\nAction: search\nAction Input: {"query": "cafe", '
            '"filter": {"city": "Oslo", "tags": ["quiet", "wifi"]}}\nObservation: (made up)',
            "Thought: found\nAnswer: Try the quiet one.",
        ]
    )
    agent = ToolCallingAgent([search]).with_llm(llm)
    await agent("find me a cafe")
    sent = llm.requests[1][0]
    assert sent[-1].content == "Observation: cafe in Oslo tagged quiet,wifi"
    # the remembered action is the cleaned one, without the invented observation
    assert "(made up)" not in sent[-2].content


async def test_errors_are_fed_back_until_the_model_gets_it_right() -> None:
    llm = S(
        [
            "I'll just answer: 4",  # no protocol
            "Thought: t\nAction: calculator\nAction Input: {}",  # unknown tool
            'Thought: t\nAction: search\nAction Input: {"query": 1}',  # invalid arguments
            "Thought: t\nAnswer: 4",
        ]
    )
    agent = ToolCallingAgent([search, now], max_steps=4).with_llm(llm)

    assert (await agent("2+2?")).content == "4"

    feedback = [r[0][-1].content for r in llm.requests[1:]]
    assert "neither an `Action:` nor an `Answer:`" in feedback[0]
    assert feedback[1].startswith("Observation: Error:") and "calculator" in feedback[1]
    assert "search" in feedback[1] and "now" in feedback[1]
    assert feedback[2].startswith("Observation: Error:") and "filter" in feedback[2]
    # unparseable replies and their feedback are not remembered
    assert "I'll just answer" not in [m.content for m in agent.memory.data]


async def test_max_steps_bounds_parse_errors() -> None:
    llm = S(["gibberish"] * 3)
    agent = ToolCallingAgent([now], max_steps=3).with_llm(llm)
    with pytest.raises(MaxIterExceeded) as info:
        await agent("hi")
    assert len(llm.requests) == 3
    assert info.value.messages[-1].content.startswith("Your reply has neither")


async def test_custom_prompt_gets_the_protocol_and_observation_role() -> None:
    llm = S(["Thought: t\nAction: now", "Thought: t\nAnswer: ok"])
    agent = ToolCallingAgent([now], prompt="You are a clock.", observation_role="system")
    await agent.with_llm(llm)("time?")
    system = llm.requests[0][0][0].content
    assert system.startswith("You are a clock.") and "Action Input" in system
    assert llm.requests[1][0][-1].role == MessageRole.SYSTEM


async def test_dynamic_prompt_with_deps() -> None:
    llm = S(["Thought: t\nAnswer: hi Ann"])
    agent = ToolCallingAgent([now], prompt=lambda ctx: f"User is {ctx.deps}.").with_llm(llm)
    await agent("hello", deps="Ann")
    system = llm.requests[0][0][0].content
    assert system.startswith("User is Ann.") and "now: The current time." in system


async def test_tool_context_sees_the_action(tmp_path: Path) -> None:
    seen: list[int] = []

    def count(ctx: RunContext[None]) -> int:
        """Messages so far."""
        seen.append(len(ctx.messages))
        return len(ctx.messages)

    llm = S(["Thought: t\nAction: count\nAction Input: {}", "Thought: t\nAnswer: 2"])
    await ToolCallingAgent([count]).with_llm(llm)("how many?")
    assert seen == [2]  # the question and the action


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    agent = ToolCallingAgent([now])
    agent.predictor.prompt.prompt.value = "Custom {tool_desc} / {tool_names}"
    agent.save(tmp_path / "react.toml")
    fresh = ToolCallingAgent([now]).load(tmp_path / "react.toml")
    assert fresh.predictor.prompt.prompt.value == "Custom {tool_desc} / {tool_names}"
