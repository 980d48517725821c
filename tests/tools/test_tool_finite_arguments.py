"""JSON has no NaN or Infinity: a tool call whose arguments hold one (a bare `NaN`, the text
`"NaN"` for a number, a number too large for a float) is refused before the tool runs, and the
model is told its arguments are invalid, as for any other bad argument."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import ToolArgumentsError
from promptimus.guardrails import ToolGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, ToolCall


class Line(BaseModel):
    price: float


def pay(amount: float, note: Any = None, lines: list[Line] | None = None) -> str:
    """Pay an amount."""
    return f"paid {amount}"


NON_FINITE = [
    '{"amount": NaN}',
    '{"amount": "NaN"}',
    '{"amount": "nan"}',
    '{"amount": Infinity}',
    '{"amount": -Infinity}',
    '{"amount": "-inf"}',
    '{"amount": 1e999}',
    '{"amount": 1, "note": NaN}',
    '{"amount": 1, "note": {"deep": [Infinity]}}',
    '{"amount": 1, "lines": [{"price": "NaN"}]}',
]


@pytest.mark.parametrize("arguments", NON_FINITE)
def test_non_finite_numbers_are_invalid_arguments(arguments: str) -> None:
    tool = pm.tools.Tool(pay)
    with pytest.raises(ToolArgumentsError, match="finite"):
        tool.validate(arguments)


def test_non_finite_numbers_in_decoded_arguments_are_invalid_too() -> None:
    tool = pm.tools.Tool(pay)
    with pytest.raises(ToolArgumentsError, match="finite"):
        tool.validate({"amount": float("nan")})
    with pytest.raises(ToolArgumentsError, match="finite"):
        tool.validate({"amount": 2, "note": [float("inf")]})


def test_finite_numbers_still_validate() -> None:
    tool = pm.tools.Tool(pay)
    assert tool.validate('{"amount": 1e308, "note": "NaN"}') == {"amount": 1e308, "note": "NaN"}
    assert tool.validate({"amount": "2.5"}) == {"amount": 2.5}


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


async def test_the_model_is_told_and_neither_guardrail_nor_tool_sees_nan(
    srv: FakeOpenAIServer,
) -> None:
    paid: list[float] = []
    checked: list[Any] = []

    def refund(amount: float) -> str:
        """Refund an amount."""
        paid.append(amount)
        return f"refunded {amount}"

    def at_most_100(name: str, arguments: dict[str, Any]) -> Verdict:
        checked.append(arguments)
        return Verdict.block("too much") if arguments["amount"] > 100 else Verdict.allow()

    srv.chat.script(ToolCall("refund", '{"amount": NaN}'), "Sorry.")
    agent = OpenaiToolCallingAgent(
        "Help.", [refund], guardrails=[ToolGuardrail(at_most_100)]
    ).with_llm(OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0))
    with pm.Session():
        result = await agent.run("refund a lot")
    assert paid == [] and checked == []
    assert result.record.steps[0].tool_calls[0].error is not None
    told = [m for m in srv.chat.requests[1]["messages"] if m["role"] == "tool"]
    assert "finite" in told[0]["content"] and "refund" in told[0]["content"]
    assert json.dumps(srv.chat.requests[1])  # what went back to the model is plain JSON
