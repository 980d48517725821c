"""A hosted tool (`HostedTool`: the server runs it) on a provider whose API runs none is refused
before any request, and an agent on `OpenAIResponses` passes it through without running it."""

from __future__ import annotations

from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import HostedToolUnsupported
from promptimus.llms import Anthropic, Gemini, OpenAILike, OpenAIResponses
from promptimus.testing import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    ResponsesReply,
)
from promptimus.tools import HostedTool

SEARCH = HostedTool("web_search", search_context_size="low")
ASK = [pm.Message(role="user", content="How many people live in Oslo?")]


def _refused(error: HostedToolUnsupported) -> None:
    text = str(error)
    assert "web_search" in text and "OpenAIResponses" in text


@pytest.mark.parametrize("given", [SEARCH.to_openai(), SEARCH])
async def test_openai_chat_completions_refuses_a_hosted_tool_before_any_request(given: Any) -> None:
    with FakeOpenAIServer() as srv:
        llm = OpenAILike("gpt-test", api_key=srv.api_key, base_url=srv.base_url)
        with pytest.raises(HostedToolUnsupported) as caught:
            await llm.achat(ASK, tools=[given])
        with pytest.raises(HostedToolUnsupported):
            async for _ in llm.astream(ASK, tools=[given]):
                pass
        assert srv.requests == []
    _refused(caught.value)


@pytest.mark.parametrize("given", [SEARCH.to_openai(), SEARCH])
async def test_anthropic_refuses_a_hosted_tool_before_any_request(given: Any) -> None:
    with FakeAnthropicServer() as srv:
        llm = Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url)
        with pytest.raises(HostedToolUnsupported) as caught:
            await llm.achat(ASK, tools=[given])
        assert srv.requests == []
    _refused(caught.value)


@pytest.mark.parametrize("given", [SEARCH.to_openai(), SEARCH])
async def test_gemini_refuses_a_hosted_tool_before_any_request(given: Any) -> None:
    with FakeGeminiServer(api_key="k-test") as srv:
        llm = Gemini("gemini-test", api_key="k-test", base_url=srv.base_url)
        with pytest.raises(HostedToolUnsupported) as caught:
            await llm.achat(ASK, tools=[given])
        assert srv.requests == []
    _refused(caught.value)


async def test_an_agent_on_chat_completions_refuses_a_hosted_tool_before_any_request() -> None:
    with FakeOpenAIServer() as srv:
        agent = OpenaiToolCallingAgent("Answer.", [SEARCH])
        agent.with_llm(OpenAILike("gpt-test", api_key=srv.api_key, base_url=srv.base_url))
        with pm.Session(), pytest.raises(HostedToolUnsupported) as caught:
            await agent.forward("How many people live in Oslo?")
        assert srv.requests == []
    _refused(caught.value)


async def test_an_agent_on_responses_sends_a_hosted_tool_and_runs_nothing_locally() -> None:
    with FakeOpenAIServer() as srv:
        item = {"type": "web_search_call", "action": {"type": "search", "query": "oslo"}}
        srv.responses.script(ResponsesReply(hosted_calls=[item], content="About 700,000."))
        agent = OpenaiToolCallingAgent("Answer.", [SEARCH])
        agent.with_llm(OpenAIResponses("gpt-test", api_key=srv.api_key, base_url=srv.base_url))
        with pm.Session():
            answer = await agent.forward("How many people live in Oslo?")
        (sent,) = srv.responses.requests
    assert answer.content == "About 700,000."
    assert sent["tools"] == [{"type": "web_search", "search_context_size": "low"}]


def test_an_agent_that_lists_its_tools_in_its_prompt_refuses_a_hosted_tool() -> None:
    from promptimus.agents.react_agent import ToolCallingAgent

    with pytest.raises(HostedToolUnsupported, match="OpenAIResponses"):
        ToolCallingAgent("Answer.", [SEARCH])
