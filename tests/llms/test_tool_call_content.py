"""An assistant message that only calls tools goes out without `content` (the OpenAI API, vLLM,
Ollama and current llama.cpp take it so, and the SDK's request transform is slower on a null);
a server that demands the key, as llama.cpp did before spring 2025 and llama-cpp-python's chat
templates do, gets the request again with `"content": ""` (which llama-cpp-python takes where
it refuses null), and the provider remembers it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_llm import make_llm

from promptimus import Session
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall

CAP = 60.0
OLD_LLAMA_CPP = (
    "Failed to parse messages: Expected 'content' "
    "(ref: https://github.com/ggml-org/llama.cpp/issues/8367)"
)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def assistant_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def old_llama_cpp(status: int) -> Any:
    def answer(body: dict[str, Any]) -> Any:
        if any("content" not in m for m in assistant_turns(body)):
            return Fault.status(status, body={"message": OLD_LLAMA_CPP, "type": "server_error"})
        if body["messages"][-1]["role"] == "tool":
            return f"it is {body['messages'][-1]['content']}"
        return Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})])

    return answer


async def test_a_tool_call_turn_goes_out_without_content(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), "it is 5")
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(make_llm(fake_openai))

    assert (await asyncio.wait_for(agent("2+3?"), CAP)).content == "it is 5"
    [turn] = assistant_turns(fake_openai.chat.requests[1])
    assert "content" not in turn and turn["tool_calls"][0]["function"]["name"] == "add"


@pytest.mark.parametrize("status", [400, 500])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_server_that_demands_content_gets_an_empty_one_and_the_provider_remembers(
    fake_openai: FakeOpenAIServer, status: int, stream: bool
) -> None:
    fake_openai.chat.respond_with(old_llama_cpp(status))
    llm = make_llm(fake_openai)
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)

    async def ask() -> str:
        with Session():
            if not stream:
                return (await agent("2+3?")).content
            events = [event async for event in agent.stream("2+3?")]
            return events[-1].output.content  # type: ignore[union-attr]

    assert await asyncio.wait_for(ask(), CAP) == "it is 5"
    last = assistant_turns(fake_openai.chat.requests[-1])
    assert last[0]["content"] == ""  # sent again, with the key
    assert llm.capabilities.tool_call_content

    fake_openai.chat.requests.clear()
    assert await asyncio.wait_for(ask(), CAP) == "it is 5"
    assert len(fake_openai.chat.requests) == 2  # no refused request any more
    assert assistant_turns(fake_openai.chat.requests[1])[0]["content"] == ""


def llama_cpp_python(body: dict[str, Any]) -> Any:
    """llama-cpp-python's function-calling server: its chat template reads every message's
    `content`, and refuses null as well as a missing key."""
    if any(m.get("content") is None for m in assistant_turns(body)):
        return Fault.template_error("content")
    if body["messages"][-1]["role"] == "tool":
        return f"it is {body['messages'][-1]['content']}"
    return Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})])


@pytest.mark.parametrize("stream", [False, True])
async def test_llama_cpp_python_template_error_is_learnt_once_and_not_retried(
    fake_openai: FakeOpenAIServer, stream: bool
) -> None:
    fake_openai.chat.respond_with(llama_cpp_python)
    llm = make_llm(fake_openai)
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)

    async def ask() -> str:
        with Session():
            if not stream:
                return (await agent("2+3?")).content
            events = [event async for event in agent.stream("2+3?")]
            return events[-1].output.content  # type: ignore[union-attr]

    assert await asyncio.wait_for(ask(), CAP) == "it is 5"
    # the tool call, the one refused request (not retried), the same request with content ""
    assert len(fake_openai.chat.requests) == 3
    assert assistant_turns(fake_openai.chat.requests[-1])[0]["content"] == ""

    fake_openai.chat.requests.clear()
    assert await asyncio.wait_for(ask(), CAP) == "it is 5"
    assert len(fake_openai.chat.requests) == 2  # learnt: no refused request any more
