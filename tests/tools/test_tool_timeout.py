"""A tool that never returns must not hang the agent, nor `asyncio.run()`, nor the interpreter:
past its timeout it becomes a `ToolTimeout` the model reads as the tool's result."""

from __future__ import annotations

import asyncio
import contextvars
import math
import subprocess
import sys
import textwrap
import threading

import pytest

from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent, ToolErrorEvent
from promptimus.dto import MessageRole
from promptimus.errors import InvalidArgument, ToolExecutionError, ToolTimeout
from promptimus.llms import ScriptedLLM
from promptimus.tools import CompositeTool, Tool
from promptimus.tools.tool import DEFAULT_TOOL_TIMEOUT

S = ScriptedLLM
CAP = 30.0  # a regression fails after this many seconds instead of hanging the suite


async def never_returns() -> str:
    """Wait forever."""
    await asyncio.Event().wait()
    return "unreachable"


def tool_results(llm: ScriptedLLM, request: int = 1) -> dict[str | None, str]:
    return {m.tool_call_id: m.content for m in llm.requests[request][0] if m.role == "tool"}


async def test_an_async_tool_past_its_timeout_is_an_error_the_model_reads() -> None:
    hang = Tool(never_returns, name="hang", timeout=0.05)
    llm = S([S.tool_call("hang", {}, id="c1"), "gave up on it"])
    agent = OpenaiToolCallingAgent("p", [hang]).with_llm(llm)

    output, record = await asyncio.wait_for(agent.run("go"), CAP)

    assert output.content == "gave up on it"
    result = tool_results(llm)["c1"]
    assert result.startswith("Error:") and "'hang' did not return within 0.05 s" in result
    entry = record.steps[0].tool_calls[0]
    assert entry.result is None and entry.error is not None and "did not return" in entry.error
    assert entry.duration_s is not None and entry.duration_s >= 0.05


async def test_the_agent_default_applies_and_a_tools_own_timeout_wins() -> None:
    async def slow() -> str:
        """Take a moment."""
        await asyncio.sleep(0.2)
        return "slow but fine"

    patient = Tool(slow, name="patient", timeout=CAP)
    llm = S(
        [
            S.tool_calls(
                S.call("never_returns", {}, id="default"), S.call("patient", {}, id="own")
            ),
            "done",
        ]
    )
    agent = OpenaiToolCallingAgent("p", [never_returns, patient], tool_timeout=0.05)
    agent.with_llm(llm)

    await asyncio.wait_for(agent("go"), CAP)

    results = tool_results(llm)
    assert "did not return within 0.05 s" in results["default"]
    assert results["own"] == "slow but fine"


def test_agents_default_to_a_bounded_tool_timeout() -> None:
    assert OpenaiToolCallingAgent("p").tool_timeout == DEFAULT_TOOL_TIMEOUT == 300.0
    assert ToolCallingAgent([]).tool_timeout == DEFAULT_TOOL_TIMEOUT
    assert OpenaiToolCallingAgent("p", tool_timeout=None).tool_timeout is None


@pytest.mark.parametrize("bad", [0, -1, math.nan, "5", True])
def test_a_timeout_must_be_positive_seconds(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        Tool(never_returns, timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        OpenaiToolCallingAgent("p", tool_timeout=bad)  # type: ignore[arg-type]


async def test_a_stuck_sync_tool_times_out_and_its_thread_is_left_running() -> None:
    release = threading.Event()
    started = threading.Event()

    @Tool.decorate(timeout=0.05)
    def stuck() -> str:
        """Block a thread."""
        started.set()
        release.wait()
        return "late"

    try:
        llm = S([S.tool_call("stuck", {}, id="c1"), "ok"])
        agent = OpenaiToolCallingAgent("p", [stuck]).with_llm(llm)
        await asyncio.wait_for(agent("go"), CAP)
        assert started.is_set()
        assert "'stuck' did not return" in tool_results(llm)["c1"]
        names = [t.name for t in threading.enumerate() if t.is_alive()]
        assert "promptimus-tool-stuck" in names  # abandoned, not joined
    finally:
        release.set()


def test_asyncio_run_and_the_interpreter_finish_with_a_sync_tool_stuck_forever() -> None:
    script = textwrap.dedent(
        """
        import asyncio, threading
        from promptimus.agents import OpenaiToolCallingAgent
        from promptimus.llms import ScriptedLLM as S
        from promptimus.tools import Tool

        @Tool.decorate(timeout=0.1)
        def stuck() -> str:
            '''Block forever.'''
            threading.Event().wait()
            return "never"

        async def main():
            llm = S([S.tool_call("stuck", {}, id="c1"), "finished"])
            agent = OpenaiToolCallingAgent("p", [stuck]).with_llm(llm)
            reply = await agent("go")
            print(reply.content)
            print([m.content for m in llm.requests[1][0] if m.role == "tool"][0])

        asyncio.run(main())
        print("asyncio.run returned")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "finished"
    assert "did not return within 0.1 s" in lines[1]
    assert lines[2] == "asyncio.run returned"


async def test_sync_tools_still_see_the_callers_context_variables() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    @Tool.decorate
    def read() -> str:
        """Read the variable."""
        return var.get()

    var.set("from the caller")
    assert await asyncio.wait_for(read.call({}), CAP) == "from the caller"


async def test_a_sync_tools_exception_still_becomes_a_tool_error() -> None:
    @Tool.decorate(timeout=CAP)
    def broken() -> str:
        """Fail."""
        raise StopIteration

    with pytest.raises(ToolExecutionError, match="StopIteration"):
        await asyncio.wait_for(broken.call({}), CAP)


async def test_react_agent_reports_a_timed_out_tool_as_an_observation() -> None:
    llm = S(
        [
            "Thought: t\nAction: never_returns\nAction Input: {}",
            "Thought: ok\nAnswer: moved on",
        ]
    )
    agent = ToolCallingAgent([never_returns], tool_timeout=0.05).with_llm(llm)

    reply = await asyncio.wait_for(agent("go"), CAP)

    assert reply.content == "moved on"
    observation = llm.requests[1][0][-1]
    assert observation.role == MessageRole.USER
    assert observation.content.startswith("Observation: Error: Tool 'never_returns' did not")


async def test_an_agent_as_tool_is_bounded_by_the_parent_timeout() -> None:
    inner_llm = S(lambda history, kwargs: S.tool_call("never_returns", {}))
    inner = OpenaiToolCallingAgent("inner", [never_returns], tool_timeout=None)
    inner.with_llm(inner_llm)
    llm = S([S.tool_call("helper", {"request": "help"}, id="c1"), "without help"])
    outer = OpenaiToolCallingAgent("outer", [Tool.from_module(inner, name="helper")])
    outer.tool_timeout = 0.1
    outer.with_llm(llm)

    assert (await asyncio.wait_for(outer("go"), CAP)).content == "without help"
    assert "'helper' did not return within 0.1 s" in tool_results(llm)["c1"]
    assert len(inner_llm.requests) == 1  # the sub-agent was cancelled while its tool hung


async def test_composite_sub_calls_and_the_whole_batch_are_bounded() -> None:
    @Tool.decorate
    def ping() -> str:
        """Answer."""
        return "pong"

    hang = Tool(never_returns, name="hang", timeout=0.05)
    batch = CompositeTool("ops", "Operations.", [hang, ping])
    calls = {"calls": [{"name": "hang", "args": {}}, {"name": "ping", "args": {}}]}

    result = await asyncio.wait_for(batch.call(calls), CAP)
    assert '"name":"ping","result":"pong"' in result
    assert "'hang' did not return within 0.05 s" in result

    unbounded = CompositeTool("ops", "Operations.", [Tool(never_returns, name="hang")])
    with pytest.raises(ToolTimeout, match=r"'ops' did not return within 0\.05 s"):
        await asyncio.wait_for(
            unbounded.call({"calls": [{"name": "hang"}]}, default_timeout=0.05), CAP
        )
    owned = CompositeTool("ops", "Operations.", [Tool(never_returns, name="hang")], timeout=0.05)
    with pytest.raises(ToolTimeout):
        await asyncio.wait_for(owned.call({"calls": [{"name": "hang"}]}), CAP)


async def test_stream_events_show_the_timeout_as_a_tool_error() -> None:
    llm = S([S.tool_call("never_returns", {}, id="c1"), "done"])
    agent = OpenaiToolCallingAgent("p", [never_returns], tool_timeout=0.05).with_llm(llm)

    async def collect() -> list[object]:
        return [event async for event in agent.stream("go")]

    events = await asyncio.wait_for(collect(), CAP)
    errors = [e for e in events if isinstance(e, ToolErrorEvent)]
    assert len(errors) == 1 and "did not return within 0.05 s" in errors[0].error


async def test_a_tool_raising_timeout_error_itself_is_an_ordinary_failure() -> None:
    @Tool.decorate(timeout=CAP)
    async def flaky() -> str:
        """Time out on its own."""
        raise TimeoutError("upstream timed out")

    with pytest.raises(ToolExecutionError) as caught:
        await asyncio.wait_for(flaky.call({}), CAP)
    assert not isinstance(caught.value, ToolTimeout)
    assert "upstream timed out" in str(caught.value)


def test_asyncio_run_returns_when_the_caller_gives_up_on_a_stuck_sync_tool() -> None:
    # no tool timeout at all: the caller's own asyncio.wait_for abandons the call
    script = textwrap.dedent(
        """
        import asyncio, threading
        from promptimus.tools import Tool

        @Tool.decorate
        def stuck() -> str:
            '''Block forever.'''
            threading.Event().wait()
            return "never"

        async def main():
            try:
                await asyncio.wait_for(stuck.call({}), 0.1)
            except TimeoutError:
                print("gave up")

        asyncio.run(main())
        print("asyncio.run returned")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["gave up", "asyncio.run returned"]
