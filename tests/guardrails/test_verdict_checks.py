"""A verdict that is not one of the three a guardrail can apply is refused where it is built
(`InvalidVerdict`), and a check that builds one ends the run: nothing it guarded goes on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import InvalidVerdict, PromptimusError
from promptimus.guardrails import InputGuardrail, ToolGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, ToolCall


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


MALFORMED: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("deny",), {}),
    (("BLOCK",), {}),
    (("block ",), {}),
    (("Allow",), {}),
    ((None,), {}),
    (("replace",), {}),
    (("replace",), {"text": 5}),
    (("replace",), {"text": b"bytes"}),
    (("block",), {"reason": 3}),
    (("block",), {"stop": "yes"}),
    (("allow",), {"text": "not applied"}),
]


@pytest.mark.parametrize(("args", "kwargs"), MALFORMED)
def test_a_malformed_verdict_is_refused_where_it_is_built(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(InvalidVerdict) as caught:
        Verdict(*args, **kwargs)
    assert isinstance(caught.value, PromptimusError)
    assert "Verdict.allow()" in str(caught.value)  # says how to build one that works


def test_the_verdicts_a_check_may_give_are_kept() -> None:
    assert Verdict("allow").allowed
    assert Verdict("block", "no").reason == "no"
    assert Verdict("block", stop=True).stop
    assert Verdict("replace", text="").text == ""
    assert Verdict.replace("x", "redacted").text == "x"


async def test_a_malformed_input_verdict_fails_closed(srv: FakeOpenAIServer) -> None:
    srv.chat.script("The answer to a request nobody allowed.")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[InputGuardrail(lambda text: Verdict("deny"))]
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(InvalidVerdict, match="'deny'"):
        await agent.forward("hi")
    assert srv.chat.requests == []


async def test_a_malformed_tool_verdict_runs_no_tool(srv: FakeOpenAIServer) -> None:
    runs: list[int] = []

    def refund(order: int) -> str:
        """Refund an order."""
        runs.append(order)
        return "refunded"

    srv.chat.script(ToolCall("refund", {"order": 1}), "Done.")
    agent = OpenaiToolCallingAgent(
        "Help.", [refund], guardrails=[ToolGuardrail(lambda name, args: Verdict("BLOCK"))]
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(InvalidVerdict, match="'BLOCK'"):
        await agent.forward("refund 1")
    assert runs == []
