"""A stream the server closes right after its first event (what a web server does when its
client is gone before the run's events were asked for) cancels the run and frees its slot,
on both faces. Driven in process: the moment between two events cannot be hit reliably over
a socket."""

from __future__ import annotations

import asyncio
from typing import Any

from ag_ui_client import run_input, user

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.core.session import Session
from promptimus.dto import Message, MessageRole
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.serve.ag_ui import _Face, _Start
from promptimus.serve.ag_ui_input import read_run_input
from promptimus.serve.openai_chat import _sse
from promptimus.serve.served import Served
from promptimus.serve.served_run import ServedRun


class Held:
    """A model that answers only when let go, counting its cancellations."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = 0

    async def reply(self, history: list[Message], kwargs: dict[str, Any]) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "never"


def served_with(held: Held) -> Served:
    agent = OpenaiToolCallingAgent("You wait.").with_llm(ScriptedLLM(held.reply))
    served = app(agent).state.served
    assert isinstance(served, Served)
    return served


async def settle(run: ServedRun) -> None:
    for _ in range(1000):  # a hang guard: the cancelled task ends within a few loop turns
        if run._task.done():
            return
        await asyncio.sleep(0)


def test_an_ag_ui_stream_closed_after_run_started_cancels_its_run() -> None:
    async def scenario() -> tuple[int, int]:
        held = Held()
        served = served_with(held)
        given = read_run_input(run_input("t", user("wait")))
        served.slots.take()
        run = ServedRun(served.module, given.new, Session(None), served.slots)
        stream = _Face(served)._stream(None, run, given, ("local", "t"), _Start())  # type: ignore[arg-type]
        assert "RUN_STARTED" in await anext(stream)
        await held.started.wait()
        await stream.aclose()
        await settle(run)
        return held.cancelled, served.slots.busy

    assert asyncio.run(scenario()) == (1, 0)


def test_an_openai_stream_closed_after_its_first_chunk_cancels_its_run() -> None:
    async def scenario() -> tuple[int, int]:
        held = Held()

        async def wait() -> str:
            """Waits."""
            return await held.reply([], {})

        llm = ScriptedLLM([ScriptedLLM.tool_call("wait", {}, id="w1"), "done"])
        agent = OpenaiToolCallingAgent("You wait.", [wait]).with_llm(llm)
        served = app(agent).state.served
        served.slots.take()
        request = [Message(role=MessageRole.USER, content="wait")]
        run = ServedRun(served.module, request, Session(None), served.slots)
        events = run.events(None)
        first = await anext(events)
        stream = _sse(served, run, first, events, False)
        assert b'"role": "assistant"' in await anext(stream)
        await held.started.wait()
        await stream.aclose()
        await settle(run)
        return held.cancelled, served.slots.busy

    assert asyncio.run(scenario()) == (1, 0)
