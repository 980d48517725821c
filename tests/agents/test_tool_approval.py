"""Tool approval and resumable runs: a run pauses before a tool that needs approval, runs the
rest of the reply, and resumes (in memory or from JSON in a fresh agent object) with decisions —
all through the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import make_llm

from promptimus import Session
from promptimus.agents import (
    NeedsApproval,
    RunState,
    SQLiteResumeLedger,
    StepEnd,
    ToolErrorEvent,
    ToolResultEvent,
    set_resume_ledger,
)
from promptimus.agents.events import FinalResult
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.errors import (
    ApprovalRequired,
    InvalidArgument,
    MissingApproval,
    PromptFormatError,
    RunStateConsumed,
    RunStateError,
    RunStateMismatch,
    SubAgentPaused,
)
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.composite_tool import CompositeTool
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool

BOUND = 30.0


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


class Files:
    """Tools over a fake file system that count what really ran."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.read: list[str] = []
        self.deps_seen: list[Any] = []

    def tools(self) -> list[Tool]:
        def read(ctx: RunContext[Any], path: str) -> str:
            """Read a file."""
            self.read.append(path)
            self.deps_seen.append(ctx.deps)
            return f"contents of {path}"

        def delete(ctx: RunContext[Any], path: str) -> str:
            """Delete a file."""
            self.deleted.append(path)
            self.deps_seen.append(ctx.deps)
            return f"deleted {path}"

        return [Tool(read), Tool(delete, requires_approval=True)]


def mixed_reply() -> Reply:
    return Reply(
        tool_calls=[
            ToolCall("read", {"path": "a.txt"}, id="c_read"),
            ToolCall("delete", {"path": "b.txt"}, id="c_delete"),
        ]
    )


def build(srv: FakeOpenAIServer, files: Files) -> OpenaiToolCallingAgent:
    return OpenaiToolCallingAgent("p", files.tools()).with_llm(make_llm(srv))


def tool_messages(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_a_mixed_reply_runs_the_free_call_and_pauses_before_the_other(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(mixed_reply(), "All done.")
    files = Files()
    agent = build(srv, files)

    result = await asyncio.wait_for(agent.run("clean up", deps="D1"), BOUND)

    assert result.status == "needs_approval"
    assert [(p.id, p.tool, p.arguments) for p in result.pending] == [
        ("c_delete", "delete", {"path": "b.txt"})
    ]
    assert files.read == ["a.txt"] and files.deleted == []
    assert len(srv.chat.requests) == 1
    assert list(agent.memory.data) == []  # nothing is committed while paused
    step = result.record.steps[0]
    assert [(c.name, c.result, c.approval) for c in step.tool_calls] == [
        ("read", "contents of a.txt", None),
        ("delete", None, "pending"),
    ]

    done = await asyncio.wait_for(
        agent.run(resume=result.state, approvals={"c_delete": True}, deps="D2"), BOUND
    )

    assert done.status == "completed" and done.output.content == "All done."
    assert files.deleted == ["b.txt"] and files.read == ["a.txt"]
    assert files.deps_seen == ["D1", "D2"]
    assert tool_messages(srv.chat.requests[1]) == [
        ("c_read", "contents of a.txt"),
        ("c_delete", "deleted b.txt"),
    ]
    assert [c.approval for c in done.record.tool_calls] == [None, "approved"]
    assert len(done.record.steps) == 2
    roles = [m.role.value for m in agent.memory.data]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    output, record = done  # a completed result still unpacks like the old pair
    assert output.content == "All done." and record is done.record


async def test_a_denial_goes_back_to_the_model_with_the_reason(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "Understood, I kept it.")
    files = Files()
    agent = build(srv, files)

    paused = await asyncio.wait_for(agent.run("clean up"), BOUND)
    done = await asyncio.wait_for(
        agent.run(resume=paused.state, approvals={"c_delete": "b.txt is the only backup"}), BOUND
    )

    assert files.deleted == []
    (_, text) = tool_messages(srv.chat.requests[1])[1]
    assert "did not approve" in text and "b.txt is the only backup" in text
    assert text.startswith("Error:")
    denied = done.record.tool_calls[1]
    assert denied.approval == "denied" and "only backup" in (denied.error or "")
    assert done.output.content == "Understood, I kept it."


async def test_a_plain_false_denies_without_a_reason(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "ok")
    agent = build(srv, Files())
    paused = await asyncio.wait_for(agent.run("x"), BOUND)
    await asyncio.wait_for(agent.run(resume=paused.state, approvals={"c_delete": False}), BOUND)
    (_, text) = tool_messages(srv.chat.requests[1])[1]
    assert "did not approve" in text and "Reason" not in text


async def test_resume_from_json_in_a_fresh_agent_object(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "Finished.")
    first_files = Files()
    with Session():
        paused = await asyncio.wait_for(build(srv, first_files).run("clean up"), BOUND)
    saved = paused.state.to_json()
    json.loads(saved)  # plain JSON text, e.g. for a database column

    second_files = Files()
    fresh = build(srv, second_files)  # another object, as after a restart
    with Session():
        done = await asyncio.wait_for(
            fresh.run(resume=RunState.from_json(saved), approvals={"c_delete": True}, deps="D"),
            BOUND,
        )
        remembered = [m.role.value for m in fresh.memory.data]

    assert done.output.content == "Finished."
    assert second_files.deleted == ["b.txt"] and second_files.deps_seen == ["D"]
    assert first_files.deleted == []
    assert tool_messages(srv.chat.requests[1]) == [
        ("c_read", "contents of a.txt"),
        ("c_delete", "deleted b.txt"),
    ]
    assert [s.index for s in done.record.steps] == [0, 1]
    assert done.record.steps[0].tool_calls[0].result == "contents of a.txt"
    assert remembered == ["user", "assistant", "tool", "tool", "assistant"]


async def test_a_state_from_another_agent_is_refused(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "ok")
    files = Files()
    paused = await asyncio.wait_for(build(srv, files).run("x"), BOUND)

    def other_tool(path: str) -> str:
        """Another tool."""
        return path

    other = OpenaiToolCallingAgent("p", [other_tool]).with_llm(make_llm(srv))
    with pytest.raises(RunStateMismatch, match="belongs to the agent"):
        await other.run(resume=paused.state, approvals={"c_delete": True})
    react = ToolCallingAgent(files.tools()).with_llm(make_llm(srv))
    with pytest.raises(RunStateMismatch):
        await react.run(resume=paused.state, approvals={"c_delete": True})
    assert files.deleted == [] and len(srv.chat.requests) == 1

    # refusing it did not use it up: the right agent still resumes it
    done = await asyncio.wait_for(
        build(srv, files).run(resume=paused.state, approvals={"c_delete": True}), BOUND
    )
    assert done.status == "completed" and files.deleted == ["b.txt"]


async def test_a_state_resumes_once_only(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "ok")
    files = Files()
    agent = build(srv, files)
    paused = await asyncio.wait_for(agent.run("x"), BOUND)
    saved = paused.state.to_json()
    await asyncio.wait_for(agent.run(resume=paused.state, approvals={"c_delete": True}), BOUND)

    with pytest.raises(RunStateConsumed, match="already resumed"):
        await agent.run(resume=paused.state, approvals={"c_delete": True})
    with pytest.raises(RunStateConsumed):  # the JSON copy, on another agent object
        await build(srv, files).run(resume=RunState.from_json(saved), approvals={"c_delete": True})
    assert files.deleted == ["b.txt"] and len(srv.chat.requests) == 2


async def test_every_pending_call_needs_a_decision(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "ok")
    files = Files()
    agent = build(srv, files)
    paused = await asyncio.wait_for(agent.run("x"), BOUND)

    with pytest.raises(MissingApproval, match="no decision for 'c_delete'"):
        await agent.run(resume=paused.state, approvals={})
    with pytest.raises(MissingApproval, match="'c_read' is not pending"):
        await agent.run(resume=paused.state, approvals={"c_delete": True, "c_read": True})
    with pytest.raises(InvalidArgument, match="True \\(run it\\)"):
        await agent.run(resume=paused.state, approvals={"c_delete": 1})
    with pytest.raises(InvalidArgument, match="not both"):
        await agent.run("hi", resume=paused.state, approvals={"c_delete": True})
    assert files.deleted == [] and len(srv.chat.requests) == 1

    done = await asyncio.wait_for(
        agent.run(resume=paused.state, approvals={"c_delete": True}), BOUND
    )
    assert done.status == "completed"


async def test_forward_raises_a_named_error_and_a_paused_result_has_no_output(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(mixed_reply())
    agent = build(srv, Files())

    with pytest.raises(ApprovalRequired, match=r"agent\.run") as caught:
        await asyncio.wait_for(agent("x"), BOUND)

    result = caught.value.result
    assert result.status == "needs_approval" and result.pending[0].id == "c_delete"
    with pytest.raises(ApprovalRequired):
        result.output  # noqa: B018
    with pytest.raises(ApprovalRequired):
        _output, _record = result
    assert list(agent.memory.data) == []


async def test_the_stream_ends_with_needs_approval_and_resumes_as_a_stream(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(mixed_reply(), "Streamed done.")
    files = Files()
    agent = build(srv, files)

    async def drain(**kwargs: Any) -> list[Any]:
        return [event async for event in agent.stream(**kwargs)]

    first = await asyncio.wait_for(drain(request="x"), BOUND)
    last = first[-1]
    assert isinstance(last, NeedsApproval)
    assert [p.id for p in last.pending] == ["c_delete"]
    assert not any(isinstance(e, StepEnd | FinalResult) for e in first)
    assert [e.name for e in first if isinstance(e, ToolResultEvent)] == ["read"]

    second = await asyncio.wait_for(drain(resume=last.state, approvals={"c_delete": True}), BOUND)
    assert isinstance(second[0], ToolResultEvent) and second[0].name == "delete"
    assert isinstance(second[1], StepEnd) and second[1].step == 0
    assert isinstance(second[-1], FinalResult)
    assert second[-1].output.content == "Streamed done."
    assert files.deleted == ["b.txt"]


async def test_a_stream_denial_is_a_tool_error_event(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply(), "ok")
    agent = build(srv, Files())
    paused = await asyncio.wait_for(agent.run("x"), BOUND)

    async def drain() -> list[Any]:
        return [e async for e in agent.stream(resume=paused.state, approvals={"c_delete": "no"})]

    events = await asyncio.wait_for(drain(), BOUND)
    errors = [e for e in events if isinstance(e, ToolErrorEvent)]
    assert len(errors) == 1 and "Reason: no" in errors[0].error


# --- deciding per call ---------------------------------------------------------------------------


async def test_an_approval_function_decides_per_call(srv: FakeOpenAIServer) -> None:
    paid: list[int] = []

    async def big(ctx: RunContext[Any], args: dict[str, Any]) -> bool:
        await asyncio.sleep(0)
        return bool(args["amount"] > ctx.deps["limit"])

    @Tool.decorate(requires_approval=big)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("pay", {"amount": 20}, id="small"),
                ToolCall("pay", {"amount": 500}, id="large"),
            ]
        ),
        "ok",
    )
    agent = OpenaiToolCallingAgent("p", [pay]).with_llm(make_llm(srv))

    paused = await asyncio.wait_for(agent.run("pay", deps={"limit": 100}), BOUND)

    assert [p.id for p in paused.pending] == ["large"] and paid == [20]
    await asyncio.wait_for(
        agent.run(resume=paused.state, approvals={"large": True}, deps={"limit": 100}), BOUND
    )
    assert paid == [20, 500]


async def test_an_approval_function_must_return_a_bool(srv: FakeOpenAIServer) -> None:
    def forgot_to_return(ctx: RunContext[Any], args: dict[str, Any]) -> Any:
        args.get("path")

    tool = Tool(lambda path: path, name="rm", requires_approval=forgot_to_return)
    srv.chat.script(Reply(tool_calls=[ToolCall("rm", {"path": "/"})]))
    agent = OpenaiToolCallingAgent("p", [tool]).with_llm(make_llm(srv))
    with pytest.raises(InvalidArgument, match="must return True"):
        await asyncio.wait_for(agent.run("x"), BOUND)
    with pytest.raises(InvalidArgument, match="requires_approval"):
        Tool(lambda: None, name="t", requires_approval="yes")  # type: ignore[arg-type]


async def test_invalid_arguments_need_no_approval_they_fail_without_running(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("delete", '{"path": 1', id="bad")]), "ok")
    files = Files()
    result = await asyncio.wait_for(build(srv, files).run("x"), BOUND)
    assert result.status == "completed" and files.deleted == []
    assert tool_messages(srv.chat.requests[1])[0][1].startswith("Error:")


async def test_a_composite_asks_when_a_sub_tool_would(srv: FakeOpenAIServer) -> None:
    files = Files()
    composite = CompositeTool("files", "File operations.", files.tools())
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("files", {"calls": [{"name": "read", "args": {"path": "a"}}]}, id="r"),
                ToolCall("files", {"calls": [{"name": "delete", "args": {"path": "b"}}]}, id="d"),
            ]
        ),
        "ok",
    )
    agent = OpenaiToolCallingAgent("p", [composite]).with_llm(make_llm(srv))
    paused = await asyncio.wait_for(agent.run("x"), BOUND)
    assert [p.id for p in paused.pending] == ["d"]
    assert files.read == ["a"] and files.deleted == []


async def test_react_agent_pauses_and_resumes(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        'Thought: t\nAction: delete\nAction Input: {"path": "b.txt"}',
        "Thought: t\nAnswer: removed",
    )
    files = Files()
    agent = ToolCallingAgent(files.tools()).with_llm(make_llm(srv))

    paused = await asyncio.wait_for(agent.run("remove b"), BOUND)
    (pending,) = paused.pending
    assert pending.tool == "delete" and pending.arguments == {"path": "b.txt"}
    fresh = ToolCallingAgent(Files().tools()).with_llm(make_llm(srv))
    state = RunState.from_json(paused.state.to_json())
    done = await asyncio.wait_for(fresh.run(resume=state, approvals={pending.id: True}), BOUND)

    assert done.output.content == "removed"
    assert srv.chat.requests[1]["messages"][-1]["content"] == "Observation: deleted b.txt"


async def test_state_json_that_is_not_a_state_is_a_named_error() -> None:
    for text in ("not json", "[]", '{"format": 99}', '{"format": 1}'):
        with pytest.raises(RunStateError, match="to_json"):
            RunState.from_json(text)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000 + "]" * 200_000,
        '{"format": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"format": 1, "step": ' + "9" * 100_000 + "}",
        b'{"format": 1, "id": "\xff"}',
        None,
    ],
    ids=["deep list", "deep field", "huge integer", "not UTF-8", "None"],
)
def test_state_text_past_the_limits_is_a_named_error(text: Any) -> None:
    with pytest.raises(RunStateError, match="to_json"):
        RunState.from_json(text)


TAMPERED = {
    "record is a list": lambda d: d.__setitem__("record", []),
    "record without steps": lambda d: d["record"].__setitem__("steps", []),
    "position past the calls": lambda d: d["paused"][0].__setitem__("position", 99),
    "negative position": lambda d: d["paused"][0].__setitem__("position", -5),
    "id not text": lambda d: d["paused"][0].__setitem__("approval_id", ["x"]),
    "name not text": lambda d: d["paused"][0].__setitem__("name", 5),
    "arguments not text": lambda d: d["paused"][0].__setitem__("arguments", 5),
    "parsed not an object": lambda d: d["paused"][0].__setitem__("parsed", "zz"),
    "nothing pending": lambda d: d.__setitem__("paused", []),
    "negative step": lambda d: d.__setitem__("step", -5),
    "step as text": lambda d: d.__setitem__("step", "3"),
    "fractional steps": lambda d: d.__setitem__("steps", 1.5),
    "boolean retries": lambda d: d.__setitem__("retries", True),
    "rejected as text": lambda d: d.__setitem__("rejected", "abc"),
    "errors as an object": lambda d: d.__setitem__("errors", {"a": 1}),
    "errors holding a number": lambda d: d.__setitem__("errors", [1]),
    "agent not text": lambda d: d.__setitem__("agent", None),
    "conversation as text": lambda d: d.__setitem__("conversation", "hi"),
    "message without a role": lambda d: d["keep"].__setitem__(0, {"content": "x"}),
    "step index negative": lambda d: d["record"]["steps"][0].__setitem__("index", -1),
    "tool call duration negative": lambda d: d["record"]["steps"][0]["tool_calls"][0].__setitem__(
        "duration_s", -1.0
    ),
    "approval unknown": lambda d: d["record"]["steps"][0]["tool_calls"][1].__setitem__(
        "approval", "maybe"
    ),
    "usage as text": lambda d: d["record"]["steps"][0].__setitem__("usage", {"total_tokens": "9"}),
    "sub-agent record as a list": lambda d: d["record"]["steps"][0]["tool_calls"][0].__setitem__(
        "children", [[]]
    ),
}


@pytest.mark.parametrize("tamper", list(TAMPERED))
async def test_a_damaged_state_is_refused_when_read_not_halfway_through_a_resume(
    srv: FakeOpenAIServer, tamper: str
) -> None:
    # A state kept in a browser or a database column comes back edited or damaged: reading it
    # must fail with the named error, before the resume claims it or runs an approved tool.
    srv.chat.script(mixed_reply(), "Finished.")
    with Session():
        paused = await asyncio.wait_for(build(srv, Files()).run("clean up"), BOUND)
    data = json.loads(paused.state.to_json())
    RunState.from_json(json.dumps(data))  # the untouched state reads
    TAMPERED[tamper](data)

    with pytest.raises(RunStateError, match="to_json"):
        RunState.from_json(json.dumps(data))


async def test_a_state_with_an_infinite_step_is_refused(srv: FakeOpenAIServer) -> None:
    srv.chat.script(mixed_reply())
    with Session():
        paused = await asyncio.wait_for(build(srv, Files()).run("clean up"), BOUND)
    data = json.loads(paused.state.to_json())
    text = json.dumps({**data, "step": "STEP"}).replace('"STEP"', "1e400")

    with pytest.raises(RunStateError, match=r"step: .*integer"):
        RunState.from_json(text)


def test_a_sqlite_ledger_refuses_a_second_claim_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "resumed.sqlite"
    ledger = SQLiteResumeLedger(path)
    code = (
        "import sys; from promptimus.agents import SQLiteResumeLedger as L; "
        "print(L(sys.argv[1]).claim('run-1'))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60
    )
    assert other.stdout.strip() == "True", other.stderr
    assert ledger.claim("run-1") is False
    assert ledger.claim("run-2") is True


async def test_a_shared_ledger_is_used_for_resumes(srv: FakeOpenAIServer, tmp_path: Path) -> None:
    srv.chat.script(mixed_reply(), "ok")
    files = Files()
    paused = await asyncio.wait_for(build(srv, files).run("x"), BOUND)
    shared = SQLiteResumeLedger(tmp_path / "l.sqlite")
    assert shared.claim(paused.state.id) is True  # as if another worker resumed it
    previous = set_resume_ledger(shared)
    try:
        with pytest.raises(RunStateConsumed):
            await build(srv, files).run(resume=paused.state, approvals={"c_delete": True})
    finally:
        set_resume_ledger(previous)
    assert files.deleted == []


async def test_a_missing_template_variable_fails_before_the_state_is_used(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(mixed_reply(), "ok")
    files = Files()
    agent = OpenaiToolCallingAgent("Answer in {lang}.", files.tools()).with_llm(make_llm(srv))
    paused = await asyncio.wait_for(agent.run("x", lang="French"), BOUND)

    with pytest.raises(PromptFormatError, match="lang"):
        await agent.run(resume=paused.state, approvals={"c_delete": True})
    assert files.deleted == []

    await asyncio.wait_for(
        agent.run(resume=paused.state, approvals={"c_delete": True}, lang="French"), BOUND
    )
    assert files.deleted == ["b.txt"]
    assert srv.chat.requests[1]["messages"][0]["content"] == "Answer in French."


async def test_a_sub_agent_that_pauses_fails_its_parent_with_a_clear_error(
    srv: FakeOpenAIServer,
) -> None:
    files = Files()
    child = OpenaiToolCallingAgent("child", files.tools())
    parent = OpenaiToolCallingAgent("parent", [Tool.from_module(child, name="janitor")])
    parent.with_llm(make_llm(srv))
    srv.chat.script(
        Reply(tool_calls=[ToolCall("janitor", {"request": "clean"}, id="p1")]), mixed_reply()
    )

    with pytest.raises(ApprovalRequired, match="cannot be resumed through its parent"):
        await asyncio.wait_for(parent.run("go"), BOUND)
    assert files.deleted == [] and list(parent.memory.data) == []


@pytest.mark.parametrize("how", ["forward", "run", "stream"])
async def test_the_caller_of_a_paused_sub_agent_raises_where_the_tool_call_is_made(
    srv: FakeOpenAIServer, how: str
) -> None:
    files = Files()
    child = OpenaiToolCallingAgent("child", files.tools())
    parent = OpenaiToolCallingAgent("parent", [Tool.from_module(child, name="janitor")])
    parent.with_llm(make_llm(srv))
    srv.chat.script(
        Reply(tool_calls=[ToolCall("janitor", {"request": "clean"}, id="p1")]), mixed_reply()
    )

    with pytest.raises(SubAgentPaused, match="cannot be resumed through its parent") as caught:
        if how == "stream":
            _ = [event async for event in parent.stream("go")]
        else:
            await asyncio.wait_for(getattr(parent, how)("go"), BOUND)

    paused = caught.value
    assert isinstance(paused, ApprovalRequired)
    assert paused.tool == "janitor" and "'janitor'" in str(paused)
    assert paused.result.status == "needs_approval"  # the sub-agent's own paused result
    assert [p.tool for p in paused.result.pending] == ["delete"]
    assert files.deleted == [] and list(parent.memory.data) == []
