"""What an A2A stream carries, read through the official a2a-sdk client against a real uvicorn
server on 127.0.0.1: tool calls and tool progress as working status messages, the answer of the
last step only, structured output as JSON, nothing a guardrail holds back, a failed run as a
failed task that names its error, and a tool call waiting for approval as `input-required`,
continued by the caller's answer."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToJson
from pydantic import BaseModel
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.guardrails import OutputGuardrail, Verdict
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.tools import RunContext, Tool

S = ScriptedLLM


def message(text: str = "", *, task_id: str = "", data: Any = None) -> SendMessageRequest:
    parts = [Part(text=text)] if text else []
    if data is not None:
        part = Part()
        part.data.struct_value.update(data)
        parts.append(part)
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts, task_id=task_id
        )
    )


def exchange(running: Running, *requests: SendMessageRequest) -> list[list[StreamResponse]]:
    """The streamed events of each request in turn (one client)."""

    async def main() -> list[list[StreamResponse]]:
        client = await create_client(running.url, client_config=ClientConfig(streaming=True))
        answers: list[list[StreamResponse]] = []
        for request in requests:
            answers.append([event async for event in client.send_message(request)])
        await client.close()
        return answers

    return asyncio.run(main())


def get_task(running: Running, task_id: str) -> Task:
    async def main() -> Task:
        client = await create_client(running.url, client_config=ClientConfig(streaming=True))
        task = await client.get_task(GetTaskRequest(id=task_id))
        await client.close()
        return task

    return asyncio.run(main())


def statuses(events: list[StreamResponse]) -> list[tuple[int, str]]:
    return [
        (
            e.status_update.status.state,
            "".join(p.text for p in e.status_update.status.message.parts),
        )
        for e in events
        if e.HasField("status_update")
    ]


def streamed_answer(events: list[StreamResponse]) -> str:
    text = ""
    for event in events:
        if event.HasField("artifact_update"):
            update = event.artifact_update
            piece = "".join(p.text for p in update.artifact.parts)
            text = text + piece if update.append else piece
    return text


async def crawl(ctx: RunContext[Any], pages: int) -> str:
    """Reads some pages."""
    for page in range(pages):
        ctx.progress(f"page {page + 1} of {pages}", fraction=(page + 1) / pages)
        await asyncio.sleep(0)
    return f"read {pages}"


def test_tool_calls_and_progress_are_working_status_messages() -> None:
    llm = S([S.tool_call("crawl", {"pages": 2}, content="Let me read."), "I read two pages."])
    agent = OpenaiToolCallingAgent("You read.", [Tool(crawl)]).with_llm(llm)
    with serving(app(agent)) as running:
        [events] = exchange(running, message("read"))
        [artifact] = get_task(running, events[0].task.id).artifacts
    working = [text for state, text in statuses(events) if state == TaskState.TASK_STATE_WORKING]
    assert working[1:] == ["Calling the tool crawl.", "page 1 of 2", "page 2 of 2"]
    progress = [
        e.status_update.metadata["fraction"]
        for e in events
        if e.HasField("status_update") and "fraction" in e.status_update.metadata
    ]
    assert progress == [0.5, 1.0]
    # the text of the step that called the tool is replaced by the answer
    assert streamed_answer(events) == "I read two pages."
    assert [p.text for p in artifact.parts] == ["I read two pages."]
    assert statuses(events)[-1][0] == TaskState.TASK_STATE_COMPLETED


class Grade(BaseModel):
    label: str
    score: float


def test_structured_output_is_the_json_answer() -> None:
    agent = OpenaiToolCallingAgent("You grade.", structural_output=Grade)
    agent.with_llm(S(['{"label": "good", "score": 0.5}']))
    with serving(app(agent)) as running:
        [events] = exchange(running, message("grade this"))
    assert Grade.model_validate_json(streamed_answer(events)) == Grade(label="good", score=0.5)


def refuse_secret(text: str) -> Verdict:
    return Verdict.block("a secret") if "hunter2" in text else Verdict.allow()


def redact_secret(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


def test_a_blocked_answer_never_reaches_the_stream() -> None:
    agent = OpenaiToolCallingAgent("Help.", guardrails=[OutputGuardrail(refuse_secret)])
    agent.with_llm(S(["the password is hunter2, keep it safe"]))
    with serving(app(agent)) as running:
        [events] = exchange(running, message("the password?"))
        task = get_task(running, events[0].task.id)
    assert "hunter2" not in "".join(MessageToJson(e) for e in events)
    assert "hunter2" not in MessageToJson(task)
    state, text = statuses(events)[-1]
    assert state == TaskState.TASK_STATE_FAILED
    assert "guardrail blocked" in text and "Traceback" not in text
    assert not task.artifacts


def test_a_redacted_answer_streams_redacted() -> None:
    agent = OpenaiToolCallingAgent("Help.", guardrails=[OutputGuardrail(redact_secret)])
    agent.with_llm(S(["the password is hunter2, keep it safe"]))
    with serving(app(agent)) as running:
        [events] = exchange(running, message("the password?"))
    assert "hunter2" not in "".join(MessageToJson(e) for e in events)
    assert streamed_answer(events) == "the password is [redacted], keep it safe"
    assert statuses(events)[-1][0] == TaskState.TASK_STATE_COMPLETED


def test_a_failed_run_is_a_failed_task_naming_its_error() -> None:
    agent = OpenaiToolCallingAgent("Help.").with_llm(S([RuntimeError("the model is down")]))
    with serving(app(agent)) as running:
        [events] = exchange(running, message("hello"))
    state, text = statuses(events)[-1]
    assert state == TaskState.TASK_STATE_FAILED
    assert "RuntimeError" in text and "Traceback" not in text


def test_an_empty_answer_is_never_a_success() -> None:
    agent = OpenaiToolCallingAgent("Help.").with_llm(S([""]))
    with serving(app(agent)) as running:
        [events] = exchange(running, message("hello"))
    state, text = statuses(events)[-1]
    assert state == TaskState.TASK_STATE_FAILED
    assert "empty answer" in text


def approval_agent(done: list[str]) -> OpenaiToolCallingAgent:
    def delete(name: str) -> str:
        """Delete a file."""
        done.append(name)
        return f"deleted {name}"

    llm = S([S.tool_call("delete", {"name": "notes.txt"}, id="call-1"), "It is gone."])
    return OpenaiToolCallingAgent("You tidy up.", [Tool(delete, requires_approval=True)]).with_llm(
        llm
    )


def test_an_approval_is_input_required_and_the_answer_continues_the_task() -> None:
    done: list[str] = []
    with serving(app(approval_agent(done))) as running:
        [paused] = exchange(running, message("tidy up"))
        task_id = paused[0].task.id
        state, text = statuses(paused)[-1]
        assert state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "delete (call-1)" in text
        [data] = get_data_parts(paused[-1].status_update.status.message.parts)
        assert data["pending"][0]["tool"] == "delete"
        assert data["pending"][0]["arguments"] == {"name": "notes.txt"}
        assert get_task(running, task_id).status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [unclear] = exchange(running, message("hmm, maybe", task_id=task_id))
        assert statuses(unclear)[-1][0] == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "still wait for your approval" in statuses(unclear)[-1][1]
        assert done == []
        [approved] = exchange(running, message("approve", task_id=task_id))
        task = get_task(running, task_id)
    assert statuses(approved)[-1][0] == TaskState.TASK_STATE_COMPLETED
    assert streamed_answer(approved) == "It is gone."
    assert done == ["notes.txt"]
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert answer_of(task) == "It is gone."


def answer_of(task: Task) -> str:
    [artifact] = task.artifacts
    return "".join(part.text for part in artifact.parts)


def test_a_denial_by_data_part_tells_the_model_and_runs_nothing() -> None:
    done: list[str] = []
    agent = approval_agent(done)
    with serving(app(agent)) as running:
        [paused] = exchange(running, message("tidy up"))
        [denied] = exchange(
            running,
            message(task_id=paused[0].task.id, data={"approvals": {"call-1": "keep my notes"}}),
        )
    assert done == []
    assert statuses(denied)[-1][0] == TaskState.TASK_STATE_COMPLETED
    llm = agent.predictor.llm
    assert isinstance(llm, ScriptedLLM)
    told = json.dumps([m.content for m in llm.requests[-1][0]])
    assert "keep my notes" in told
