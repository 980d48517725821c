"""Errors inside an OpenAI-compatible stream carry the same `type` and `code` as the same
refusal answered without a stream, so a client handles both alike (through the `openai` SDK
and a real uvicorn server)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from serve_support import serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.core.module import Module
from promptimus.dto import Message
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.tools import Tool

S = ScriptedLLM


def book(room: str) -> str:
    """Books a room."""
    return f"booked {room}"


def scripted(history: list[Message], kwargs: dict[str, Any]) -> Any:
    return S.tool_call("book", {"room": "blue"}, id="b1")


def test_a_refusal_in_a_stream_has_the_type_of_the_same_refusal_without_one() -> None:
    agent = OpenaiToolCallingAgent("You book.", [Tool(book, requires_approval=True)])
    agent.with_llm(S(scripted))
    with serving(app(agent)) as running:
        sdk = openai.OpenAI(base_url=f"{running.url}/v1", api_key="unused", max_retries=0)
        ask = {"model": "x", "messages": [{"role": "user", "content": "book blue"}]}
        with pytest.raises(openai.APIStatusError) as plain:
            sdk.chat.completions.create(**ask)  # type: ignore[call-overload]
        with pytest.raises(openai.APIError) as streamed:
            for _ in sdk.chat.completions.create(stream=True, **ask):  # type: ignore[call-overload]
                pass
    assert plain.value.status_code == 409
    assert isinstance(plain.value.body, dict) and isinstance(streamed.value.body, dict)
    assert streamed.value.body["code"] == plain.value.body["code"] == "approval_required"
    assert streamed.value.body["type"] == plain.value.body["type"] == "invalid_request_error"


class Loop(Module):
    """Answers with a value that refers to itself, which no JSON can hold."""

    async def forward(self, text: str) -> Any:
        answer: dict[str, Any] = {"text": text}
        answer["self"] = answer
        return answer


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_that_cannot_be_written_is_a_500_in_openais_shape(stream: bool) -> None:
    with serving(app(Loop())) as running:
        reply = httpx.post(
            f"{running.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}], "stream": stream},
            timeout=60.0,
        )
    if stream:
        assert reply.status_code == 200 and "[DONE]" not in reply.text
        error = json.loads(reply.text.strip().splitlines()[-1][len("data: ") :])["error"]
    else:
        assert reply.status_code == 500
        error = reply.json()["error"]
    assert error["code"] == "run_failed" and "Traceback" not in reply.text
