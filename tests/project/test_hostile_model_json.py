"""JSON a model writes is untrusted: absurdly deep nesting and absurdly long integers go back to
the model as a parse error (ReACT, native tool calls, structured output, rerank scores), never as
a raw `RecursionError` / `ValueError` that ends the run."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.react_parser import ReactAction, parse_react
from promptimus.dto import Message, MessageRole
from promptimus.errors import FailedToParseOutput, ModelJSONTooComplex, ReactParseError
from promptimus.llms import ScriptedLLM
from promptimus.model_json import MAX_JSON_DEPTH, decode_json, decode_json_prefix
from promptimus.modules.structural import StructuralOutput
from promptimus.rerankers.llm import parse_scores

S = ScriptedLLM

DEEP = '{"a": ' + "[" * 2000 + "]" * 2000 + "}"
HUGE_INT = '{"a": ' + "9" * 5000 + "}"


def nested(depth: int) -> str:
    """An object holding arrays, `depth` levels of nesting in all."""
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


# --- the decoder -------------------------------------------------------------------------------


def test_depth_limit_is_exact_and_ignores_brackets_inside_strings() -> None:
    assert decode_json(nested(MAX_JSON_DEPTH)) == json.loads(nested(MAX_JSON_DEPTH))
    with pytest.raises(ModelJSONTooComplex, match=f"deeper than {MAX_JSON_DEPTH}"):
        decode_json(nested(MAX_JSON_DEPTH + 1))
    text = json.dumps({"s": "[" * 5000, "t": '\\"{{{', "u": [1]})
    assert decode_json(text)["u"] == [1]


def test_huge_integers_are_refused_whatever_the_process_limit() -> None:
    assert decode_json("-" + "9" * 4300) == -int("9" * 4300)
    with pytest.raises(ModelJSONTooComplex, match="integer longer than"):
        decode_json(HUGE_INT)
    # a malformed-JSON error, so code that handles bad JSON handles this too
    assert issubclass(ModelJSONTooComplex, json.JSONDecodeError)


def test_prefix_decoding_reports_where_the_value_ends() -> None:
    assert decode_json_prefix('x {"a": [1]} tail', 2) == ({"a": [1]}, 12)
    with pytest.raises(json.JSONDecodeError):
        decode_json('{"a": 1} extra')


# --- ReACT ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "reason"), [(DEEP, "nested deeper"), (HUGE_INT, "integer longer")]
)
def test_react_parser_names_hostile_action_input(arguments: str, reason: str) -> None:
    with pytest.raises(ReactParseError, match=reason):
        parse_react(f"Thought: t\nAction: echo\nAction Input: {arguments}")
    with pytest.raises(ReactParseError, match=reason):
        parse_react(f"Action: echo({arguments})")


def test_react_parser_still_takes_deep_but_allowed_input() -> None:
    parsed = parse_react(f"Action: echo\nAction Input: {nested(MAX_JSON_DEPTH)}")
    assert isinstance(parsed, ReactAction) and parsed.tool == "echo"


def echo(a: object = None) -> str:
    """Echo."""
    return "echoed"


@pytest.mark.parametrize("arguments", [DEEP, HUGE_INT])
async def test_react_agent_sends_hostile_input_back_and_finishes(arguments: str) -> None:
    calls: list[object] = []

    def record(a: object = None) -> str:
        """Record."""
        calls.append(a)
        return "ok"

    llm = S(
        [
            f"Thought: t\nAction: record\nAction Input: {arguments}",
            "Thought: fine\nAnswer: done",
        ]
    )
    agent = ToolCallingAgent([record]).with_llm(llm)

    reply = await agent("go")

    assert reply.content == "done"
    assert calls == []  # the tool never ran on arguments that could not be read
    feedback = llm.requests[1][0][-1]
    assert feedback.role == MessageRole.USER and "Action Input cannot be used" in feedback.content


# --- native tool calls and structured output -----------------------------------------------------


@pytest.mark.parametrize("arguments", [DEEP, HUGE_INT])
async def test_native_agent_sends_hostile_arguments_back(arguments: str) -> None:
    llm = S([S.tool_call("echo", arguments, id="c1"), "done"])
    agent = OpenaiToolCallingAgent("p", [echo]).with_llm(llm)

    assert (await agent("go")).content == "done"
    result = llm.requests[1][0][-1]
    assert result.role == MessageRole.TOOL and result.content.startswith("Error:")
    assert "JSON" in result.content


class Out(BaseModel):
    a: object = None


@pytest.mark.parametrize("body", [DEEP, HUGE_INT])
@pytest.mark.parametrize("wrap", ["{}", "Here it is: {} (done)", "```json\n{}\n```"])
def test_structured_output_names_hostile_json(body: str, wrap: str) -> None:
    with pytest.raises(FailedToParseOutput) as caught:
        StructuralOutput(Out).parse(wrap.replace("{}", body))
    assert "cannot be used" in caught.value.errors[0] or "JSON" in caught.value.errors[0]


async def test_structured_agent_retries_after_hostile_json() -> None:
    llm = S([DEEP, '{"a": 1}'])
    agent = OpenaiToolCallingAgent("p", structural_output=Out).with_llm(llm)

    assert await agent("go") == Out(a=1)
    retry = llm.requests[1][0][-1]
    assert "nested deeper" in retry.content


def test_rerank_scores_survive_hostile_json() -> None:
    text = '{"1": ' + "[" * 3000 + "]" * 3000 + "}\n1: 7"
    assert parse_scores(text, 2) == {0: 7.0}


def test_a_deep_structured_reply_is_not_kept_as_an_answer() -> None:
    so = StructuralOutput(Out)
    value, error = so.check(Message(role=MessageRole.ASSISTANT, content=DEEP))
    assert value is None and error is not None
