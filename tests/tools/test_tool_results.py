"""What the model reads back from a tool's result: dataclasses and pydantic models as JSON, and a
value with no JSON form refused as the tool's failure (never its repr, never a success)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import ToolResultNotSerializable
from promptimus.llms import ScriptedLLM
from promptimus.tools import CompositeTool, Tool, tool_result_to_text
from promptimus.tools.results import tool_result_to_jsonable

S = ScriptedLLM
CAP = 30.0  # a regression fails after this many seconds instead of hanging the suite


@dataclass
class Order:
    id: int
    items: list[str]


class Invoice(BaseModel):
    number: str
    total: float


class Ticket:  # a plain class: no JSON form
    def __init__(self, seat: str) -> None:
        self.seat = seat


async def run_tool(result: object) -> tuple[str, object]:
    """One agent run whose tool returns `result`: what the model read back, and the record."""

    @Tool.decorate
    def lookup(key: str) -> object:
        """Look a thing up."""
        return result

    llm = S([S.tool_call("lookup", {"key": "k"}, id="c1"), "done"])
    agent = OpenaiToolCallingAgent("p", [lookup]).with_llm(llm)
    output, record = await asyncio.wait_for(agent.run("go"), CAP)
    assert output.content == "done"
    seen = [m.content for m in llm.requests[1][0] if m.role == "tool"]
    return seen[0], record.steps[0].tool_calls[0]


async def test_a_dataclass_result_reaches_the_model_as_json() -> None:
    seen, call = await run_tool(Order(7, ["tea"]))
    assert json.loads(seen) == {"id": 7, "items": ["tea"]}
    assert call.error is None


async def test_a_pydantic_result_reaches_the_model_as_json() -> None:
    seen, _ = await run_tool(Invoice(number="A-1", total=9.5))
    assert json.loads(seen) == {"number": "A-1", "total": 9.5}


async def test_nested_dataclasses_in_a_dict_reach_the_model_as_json() -> None:
    seen, _ = await run_tool({"orders": [Order(1, [])]})
    assert json.loads(seen) == {"orders": [{"id": 1, "items": []}]}


@pytest.mark.parametrize("result", [Ticket("12A"), {"ticket": Ticket("12A")}])
async def test_a_result_with_no_json_form_is_the_tools_failure(result: object) -> None:
    seen, call = await run_tool(result)
    assert "object at 0x" not in seen
    assert "Ticket" in seen and "no JSON form" in seen
    assert call.error is not None and "Ticket" in call.error  # the run shows the tool failed
    assert call.result is None


def test_the_conversions_refuse_a_value_with_no_json_form() -> None:
    with pytest.raises(ToolResultNotSerializable, match="dataclass or a pydantic model"):
        tool_result_to_text(Ticket("1"))
    with pytest.raises(ToolResultNotSerializable, match="Ticket"):
        tool_result_to_jsonable([Ticket("1")])
    assert tool_result_to_jsonable(Order(1, ["a"])) == {"id": 1, "items": ["a"]}


async def test_a_composite_call_with_no_json_form_is_that_calls_failure() -> None:
    @Tool.decorate
    def ticket(seat: str) -> object:
        """Book a seat."""
        return Ticket(seat)

    @Tool.decorate
    def order(n: int) -> Order:
        """Make an order."""
        return Order(n, [])

    composite = CompositeTool("batch", "Several calls at once.", [ticket, order])
    calls = [{"name": "ticket", "args": {"seat": "1A"}}, {"name": "order", "args": {"n": 2}}]
    results = json.loads(await composite.call({"calls": calls}))["results"]
    assert "Ticket" in results[0]["error"] and "result" not in results[0]
    assert results[1] == {"name": "order", "result": {"id": 2, "items": []}}
