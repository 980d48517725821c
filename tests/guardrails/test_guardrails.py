"""Guardrails through the fake OpenAI server with the real SDK: an input blocked before any
request, a parallel guard cancelling a slow model call before any tool runs, redaction kept in
memory and a SQLite session store, output retries, tool refusals, records, events and usage."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import GuardrailEvent, OpenaiToolCallingAgent, ToolCallingAgent
from promptimus.errors import GuardrailTripped, InvalidArgument, InvalidVerdict
from promptimus.guardrails import (
    Guarded,
    InputGuardrail,
    OutputGuardrail,
    ToolGuardrail,
    Verdict,
)
from promptimus.llms import OpenAILike
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


class Ledger:
    """A refund tool that counts its runs."""

    def __init__(self) -> None:
        self.runs: list[int] = []

    def refund(self, order: int) -> str:
        """Refund an order."""
        self.runs.append(order)
        return f"refunded {order}"


async def sent(srv: FakeOpenAIServer) -> None:
    """Return once the server has received a request (bounded: 500 looks, 10 ms apart)."""
    for _ in range(500):
        if srv.chat.requests:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the model request never reached the server")


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


# --- input ------------------------------------------------------------------------------------


async def test_a_blocked_input_raises_before_any_request(srv: FakeOpenAIServer) -> None:
    ledger = Ledger()
    guard = InputGuardrail(
        lambda text: Verdict.block("no refunds by chat") if "refund" in text else None,
        name="no_refunds",
    )
    agent = OpenaiToolCallingAgent("Help.", [ledger.refund], guardrails=[guard]).with_llm(llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped) as caught:
        await agent.forward("refund order 1")
    assert srv.chat.requests == [] and ledger.runs == []
    assert caught.value.kind == "input" and caught.value.reason == "no refunds by chat"
    assert "'no_refunds'" in str(caught.value) and "guardrails.0" not in str(caught.value)
    assert caught.value.guard == "root.guardrails.no_refunds"


async def test_an_allowed_input_goes_through_unchanged(srv: FakeOpenAIServer) -> None:
    srv.chat.script("Hello.")
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(lambda t: True)])
    agent.with_llm(llm(srv))
    with pm.Session():
        result = await agent.run("hi there")
    assert user_texts(srv.chat.requests[0]) == ["hi there"]
    assert [(g.kind, g.action) for g in result.record.guardrails] == [("input", "allow")]


async def test_a_parallel_guard_cancels_a_slow_model_call_and_no_tool_runs(
    srv: FakeOpenAIServer,
) -> None:
    ledger = Ledger()
    srv.chat.script(Fault.stall())  # the model never answers: only a cancel ends the call
    requested = asyncio.Event()

    async def slow_judge(text: str) -> Verdict:
        await sent(srv)  # the request went out before the verdict
        requested.set()
        return Verdict.block("fraud pattern")

    agent = OpenaiToolCallingAgent(
        "Help.",
        [ledger.refund],
        guardrails=[InputGuardrail(slow_judge, parallel=True)],
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped, match="fraud pattern"):
        await agent.forward("refund order 7")
    assert requested.is_set() and len(srv.chat.requests) == 1 and ledger.runs == []


async def test_a_parallel_guard_lets_tools_run_only_after_it_allowed(
    srv: FakeOpenAIServer,
) -> None:
    ledger = Ledger()
    order: list[str] = []

    async def judge(text: str) -> bool:
        await sent(srv)
        await asyncio.sleep(0.05)  # the reply (a tool call) is back before the verdict
        order.append("verdict")
        return True

    def refund(order_id: int) -> str:
        """Refund."""
        order.append("tool")
        return ledger.refund(order_id)

    agent = OpenaiToolCallingAgent(
        "Help.",
        [pm.tools.Tool(refund, name="refund")],
        guardrails=[InputGuardrail(judge, parallel=True)],
    ).with_llm(llm(srv))
    srv.chat.script(ToolCall("refund", {"order_id": 3}), "Refunded.")
    with pm.Session():
        answer = await agent.forward("refund order 3")
    assert answer.content == "Refunded." and order == ["verdict", "tool"]


async def test_a_parallel_replacement_sends_the_step_again_with_the_replaced_text(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("first", "second")

    async def redact(text: str) -> Verdict:
        await sent(srv)
        return Verdict.replace(text.replace("4111 1111", "[card]"))

    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[InputGuardrail(redact, parallel=True)]
    ).with_llm(llm(srv))
    with pm.Session():
        answer = await agent.forward("my card is 4111 1111")
        memory = [m.content for m in agent.memory.data]
    assert answer.content == "second"
    assert user_texts(srv.chat.requests[-1]) == ["my card is [card]"]
    assert memory == ["my card is [card]", "second"]


# --- redaction kept everywhere ---------------------------------------------------------------


async def test_redaction_is_what_the_model_memory_and_session_store_keep(
    srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    srv.chat.script("Your card 4111 1111 is noted.")

    def mask(text: str) -> Verdict:
        return Verdict.replace(text.replace("4111 1111", "[card]"))

    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[InputGuardrail(mask), OutputGuardrail(mask)]
    ).with_llm(llm(srv))
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    async with pm.Session("alice", store=store):
        answer = await agent.forward("my card is 4111 1111")
    assert answer.content == "Your card [card] is noted."
    assert user_texts(srv.chat.requests[0]) == ["my card is [card]"]
    stored = json.dumps([turn.payload for turn in await store.load_turns("alice")])
    assert "[card]" in stored and "4111" not in stored
    await store.aclose()
    raw = (tmp_path / "sessions.db").read_bytes()
    assert b"4111" not in raw


# --- output ------------------------------------------------------------------------------------


async def test_a_blocked_output_goes_back_to_the_model_while_retry_allows(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("You idiot, it is 4.", "It is 4.")
    polite = OutputGuardrail(
        lambda text: Verdict.block("be polite") if "idiot" in text else True, retry=1
    )
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[polite]).with_llm(llm(srv))
    with pm.Session():
        result = await agent.run("2+2?")
        memory = [m.content for m in agent.memory.data]
    assert result.output.content == "It is 4."
    assert "be polite" in user_texts(srv.chat.requests[1])[-1]
    assert memory == ["2+2?", "It is 4."]  # the refused answer is not remembered
    assert [g.action for g in result.record.guardrails] == ["block", "allow"]


async def test_a_blocked_output_past_its_retries_raises(srv: FakeOpenAIServer) -> None:
    srv.chat.script("idiot", "idiot again")
    polite = OutputGuardrail(lambda text: "idiot" not in text, retry=1, name="polite")
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[polite]).with_llm(llm(srv))
    with pm.Session():
        with pytest.raises(GuardrailTripped) as caught:
            await agent.forward("2+2?")
        assert list(agent.memory.data) == []  # a tripped run leaves the memory as it was
    assert caught.value.kind == "output" and len(srv.chat.requests) == 2


# --- tools -------------------------------------------------------------------------------------


async def test_a_blocked_tool_call_is_not_run_and_the_model_is_told(
    srv: FakeOpenAIServer,
) -> None:
    ledger = Ledger()
    srv.chat.script(
        Reply(tool_calls=[ToolCall("refund", {"order": 1}), ToolCall("refund", {"order": 500})]),
        "One refund done.",
    )
    limit = ToolGuardrail(
        lambda name, args: (
            Verdict.block("orders over 100 need a person") if args["order"] > 100 else None
        ),
        tools="refund",
    )
    agent = OpenaiToolCallingAgent("Help.", [ledger.refund], guardrails=[limit])
    agent.with_llm(llm(srv))
    with pm.Session():
        result = await agent.run("refund 1 and 500")
    assert ledger.runs == [1]
    tool_messages = [m["content"] for m in srv.chat.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == "refunded 1"
    assert "refused" in tool_messages[1] and "over 100" in tool_messages[1]
    calls = result.record.tool_calls
    assert calls[1].error is not None and calls[1].result is None
    assert [(g.kind, g.action, g.tool_call_id) for g in result.record.guardrails] == [
        ("tool", "allow", "call_1"),
        ("tool", "block", "call_2"),
    ]


async def test_a_tool_guard_may_stop_the_run_before_any_call_runs(
    srv: FakeOpenAIServer,
) -> None:
    ledger = Ledger()
    srv.chat.script(
        Reply(tool_calls=[ToolCall("refund", {"order": 1}), ToolCall("refund", {"order": 2})])
    )
    stop = ToolGuardrail(
        lambda name, args: (
            Verdict.block("second refund", stop=True) if args["order"] == 2 else 1 == 1
        )
    )
    agent = OpenaiToolCallingAgent("Help.", [ledger.refund], guardrails=[stop])
    agent.with_llm(llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped) as caught:
        await agent.forward("refund both")
    assert caught.value.kind == "tool" and caught.value.tool == "refund"
    assert ledger.runs == []  # the first call was allowed, yet nothing runs after a trip


async def test_a_tool_guard_for_other_tools_leaves_a_call_alone(srv: FakeOpenAIServer) -> None:
    ledger = Ledger()
    srv.chat.script(ToolCall("refund", {"order": 9}), "Done.")
    agent = OpenaiToolCallingAgent(
        "Help.", [ledger.refund], guardrails=[ToolGuardrail(lambda n, a: False, tools=["delete"])]
    ).with_llm(llm(srv))
    with pm.Session():
        await agent.forward("refund 9")
    assert ledger.runs == [9]


async def test_the_react_agent_takes_guardrails_too(srv: FakeOpenAIServer) -> None:
    agent = ToolCallingAgent(
        [Ledger().refund], guardrails=[InputGuardrail(lambda text: "refund" not in text)]
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped):
        await agent.forward("refund it")
    assert srv.chat.requests == []


# --- events, records, checks -------------------------------------------------------------------


async def test_a_stream_shows_each_verdict(srv: FakeOpenAIServer) -> None:
    srv.chat.script("Fine.")
    agent = OpenaiToolCallingAgent(
        "Help.",
        [],
        guardrails=[InputGuardrail(lambda t: True, name="in"), OutputGuardrail(lambda t: True)],
    ).with_llm(llm(srv))
    with pm.Session():
        events = [e async for e in agent.stream("hi")]
    verdicts = [(e.kind, e.action, e.guard) for e in events if isinstance(e, GuardrailEvent)]
    assert verdicts == [
        ("input", "allow", "root.guardrails.0"),
        ("output", "allow", "root.guardrails.1"),
    ]


async def test_a_check_that_returns_no_verdict_is_a_named_error(srv: FakeOpenAIServer) -> None:
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[InputGuardrail(lambda t: "yes")]
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(InvalidVerdict, match="returned str"):
        await agent.forward("hi")
    assert srv.chat.requests == []


def test_guardrails_are_checked_where_they_are_given() -> None:
    with pytest.raises(InvalidArgument, match="wrap a check function"):
        OpenaiToolCallingAgent("Help.", [], guardrails=[lambda t: True])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument, match="retry"):
        OutputGuardrail(lambda t: True, retry=float("nan"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="parallel"):
        InputGuardrail(lambda t: True, parallel="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="a check"):
        InputGuardrail("not callable")  # type: ignore[arg-type]
    assert ToolGuardrail(lambda n, a: True, tools="refund").tools == frozenset({"refund"})


def test_an_agent_without_guardrails_keeps_its_checkpoint_keys() -> None:
    plain = OpenaiToolCallingAgent("Help.", [])
    guarded = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(lambda t: True)])
    assert set(plain.state_dict()) == set(guarded.state_dict())
    assert "InputGuardrail" in repr(guarded)


# --- any module ----------------------------------------------------------------------------------


async def test_guarded_runs_guardrails_around_any_module(srv: FakeOpenAIServer) -> None:
    srv.chat.script("ANSWER 4111 1111")
    prompt = pm.Prompt("Repeat.").with_llm(llm(srv))

    class Echo(pm.Module):
        def __init__(self) -> None:
            super().__init__()
            self.prompt = prompt

        async def forward(self, text: str) -> str:
            reply = await self.prompt([pm.Message(role="user", content=text)])
            return str(reply.content)

    mask = OutputGuardrail(lambda text: Verdict.replace(text.replace("4111 1111", "[card]")))
    block = InputGuardrail(lambda text: "password" not in text)
    guarded = Guarded(Echo(), [block, mask])
    assert await guarded("card?") == "ANSWER [card]"
    with pytest.raises(GuardrailTripped):
        await guarded("my password")
    assert len(srv.chat.requests) == 1
    with pytest.raises(InvalidArgument, match="needs an agent"):
        Guarded(Echo(), [ToolGuardrail(lambda n, a: True)])


# --- a parallel check in a run that fails before its first model request --------------------


async def test_a_run_that_fails_before_racing_its_parallel_check_leaves_none_behind(
    srv: FakeOpenAIServer,
) -> None:
    gc.collect()  # earlier tests' clients close in tasks of their own: not this test's
    earlier = set(asyncio.all_tasks())
    unread: list[Any] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: unread.append(context))

    async def quick_block(text: str) -> bool:
        return False

    async def endless(text: str) -> bool:
        await asyncio.Event().wait()
        return True

    for judge in (quick_block, endless):  # a template variable is missing: no request is built
        agent = OpenaiToolCallingAgent(
            "Help {name}.", [], guardrails=[InputGuardrail(judge, parallel=True)]
        ).with_llm(llm(srv))
        with pm.Session(), pytest.raises(pm.errors.PromptFormatError):
            await agent.forward(f"ask {judge.__name__}")
        del agent
    for _ in range(3):  # let a cancelled check finish, then let the collector see the rest
        await asyncio.sleep(0)
    gc.collect()
    left = [
        task
        for task in asyncio.all_tasks()
        if task is not asyncio.current_task() and task not in earlier
    ]
    assert left == [] and unread == [] and srv.chat.requests == []


# --- tool guardrails and approvals -----------------------------------------------------------


async def test_a_resumed_run_keeps_the_verdicts_given_before_its_pause(
    srv: FakeOpenAIServer,
) -> None:
    deleted: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def protect(name: str, arguments: dict[str, Any]) -> Verdict:
        return Verdict.block("protected") if arguments["path"] == "b" else Verdict.allow()

    agent = OpenaiToolCallingAgent(
        "Help.",
        [pm.tools.Tool(delete, requires_approval=True)],
        guardrails=[InputGuardrail(lambda text: True, name="ok"), ToolGuardrail(protect)],
    ).with_llm(llm(srv))
    calls = [ToolCall("delete", {"path": p}, id=f"c_{p}") for p in "ab"]
    srv.chat.script(Reply(tool_calls=calls), "Done.")
    paused = await agent.run("delete a and b")
    assert [p.id for p in paused.pending] == ["c_a"]  # the refused call never waits for approval
    state = pm.agents.RunState.from_json(paused.state.to_json())
    done = await agent.run(resume=state, approvals={"c_a": True})
    assert done.output.content == "Done." and deleted == ["a"]
    assert state.record.guardrails == paused.record.guardrails  # through the state's JSON
    kept = [(g.kind, g.action, g.tool_call_id) for g in done.record.guardrails]
    assert kept == [("input", "allow", None), ("tool", "allow", "c_a"), ("tool", "block", "c_b")]
