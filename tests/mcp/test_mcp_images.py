"""Images from MCP tools reach the model as images where the chat API allows: checked in the
requests the fake OpenAI server received from both agent types
(tests/support/mcp_servers/small_server.py has a `snapshot` tool returning a caption and a real
1x1 PNG)."""

from __future__ import annotations

import asyncio
import base64
import sys
from typing import Any

import pytest
from fake_llm import make_llm
from locations import MCP_SERVERS
from mcp_servers.small_server import red_pixel_png

from promptimus.agents.events import ToolResultEvent
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.run_record import ToolCallRecord
from promptimus.dto import ImageContent, Message, MessageRole
from promptimus.mcp import MCPToolset
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0
PNG_URL = "data:image/png;base64," + base64.b64encode(red_pixel_png()).decode()


def small(**options: Any) -> MCPToolset:
    return MCPToolset.stdio(sys.executable, [SERVER], include=["snapshot", "add"], **options)


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


def image_urls(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [part["image_url"]["url"] for part in content if part["type"] == "image_url"]


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if part["type"] == "text")


async def test_the_result_is_a_message_with_the_image() -> None:
    async with small() as toolset:
        result = await toolset.tool("snapshot").forward(label="door")
    assert isinstance(result, Message)
    assert result.content == "snapshot door\n[image 1 (image/png)]"
    assert result.images == [ImageContent(url=PNG_URL)]


async def test_openai_agent_sends_the_image_in_a_user_message_after_the_tool_messages(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("snapshot", {"label": "door"}, id="c1"),
                ToolCall("add", {"a": 1, "b": 2}, id="c2"),
            ]
        ),
        Reply(content="A red door."),
    )
    async with small() as toolset:
        agent = OpenaiToolCallingAgent("Look.", [toolset]).with_llm(make_llm(srv))
        events = [event async for event in agent.stream("what is there?")]

    messages = srv.chat.requests[1]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    first_tool, second_tool, images = messages[3], messages[4], messages[5]
    assert first_tool["tool_call_id"] == "c1"
    assert first_tool["content"] == "snapshot door\n[image 1 (image/png)]"  # text only
    assert second_tool["tool_call_id"] == "c2" and second_tool["content"] == '{"result":3}'
    assert image_urls(images) == [PNG_URL]
    assert "'snapshot' (call c1)" in text_of(images)

    record = events[-1].record
    snap, added = record.tool_calls
    assert snap.images == (ImageContent(url=PNG_URL),) and added.images == ()
    assert record.to_dict()["steps"][0]["tool_calls"][0]["images"] == [{"url": PNG_URL}]
    assert ToolCallRecord.from_dict(snap.to_dict()) == snap  # server and images come back too
    assert snap.server == "small"
    (result,) = [e for e in events if isinstance(e, ToolResultEvent) and e.id == "c1"]
    assert result.images == (ImageContent(url=PNG_URL),)
    # the image stays in the conversation the agent remembers
    assert any(m.images for m in agent.predictor.memory.as_list())


async def test_react_agent_puts_the_image_in_its_user_observation(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        'Thought: look\nAction: snapshot\nAction Input: {"label": "door"}',
        "Thought: seen\nAnswer: red",
    )
    async with small() as toolset:
        agent = ToolCallingAgent([toolset]).with_llm(make_llm(srv))
        reply = await asyncio.wait_for(agent.forward("colour?"), BOUND)

    assert reply.content == "red"
    observation = srv.chat.requests[1]["messages"][-1]
    assert observation["role"] == "user"
    assert text_of(observation).startswith("Observation: snapshot door")
    assert image_urls(observation) == [PNG_URL]


async def test_react_agent_with_a_system_observation_role_adds_a_user_image_message(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        'Thought: look\nAction: snapshot\nAction Input: {"label": "door"}',
        "Thought: seen\nAnswer: red",
    )
    async with small() as toolset:
        agent = ToolCallingAgent([toolset], observation_role=MessageRole.SYSTEM)
        await asyncio.wait_for(agent.with_llm(make_llm(srv)).forward("colour?"), BOUND)

    observation, images = srv.chat.requests[1]["messages"][-2:]
    assert observation["role"] == "system" and image_urls(observation) == []
    assert images["role"] == "user" and image_urls(images) == [PNG_URL]


async def test_images_false_names_the_image_in_the_text_only(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("snapshot", {"label": "door"}, id="c1")]),
        Reply(content="I cannot see it."),
    )
    async with small(images=False) as toolset:
        agent = OpenaiToolCallingAgent("Look.", [toolset]).with_llm(make_llm(srv))
        await asyncio.wait_for(agent.forward("what is there?"), BOUND)

    messages = srv.chat.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[-1]["content"] == "snapshot door\n[image (image/png), not shown]"
    assert "base64" not in str(messages)


async def test_an_image_format_chat_apis_refuse_is_named_not_sent(srv: FakeOpenAIServer) -> None:
    # OpenAI takes PNG, JPEG, GIF and WebP only and answers 400 to anything else, which would
    # end the whole run; an SVG (a diagram server's usual output) is named in the text instead.
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("diagram", {"label": "flow"}, id="c1"),
                ToolCall("snapshot", {"label": "door"}, id="c2"),
            ]
        ),
        Reply(content="A flow and a red door."),
    )
    async with MCPToolset.stdio(
        sys.executable, [SERVER], include=["diagram", "snapshot"]
    ) as toolset:
        agent = OpenaiToolCallingAgent("Look.", [toolset]).with_llm(make_llm(srv))
        reply = await asyncio.wait_for(agent.forward("what is there?"), BOUND)

    assert reply.content == "A flow and a red door."
    messages = srv.chat.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert "image/svg+xml" in messages[3]["content"] and "not shown" in messages[3]["content"]
    assert image_urls(messages[5]) == [PNG_URL]  # only the PNG reaches the model
    assert "svg" not in str(messages[5])


# --- a model that takes no images: each image described in text -------------------------------

NO_VISION = {
    "error": {
        "message": "Invalid content type. image_url is only supported by certain models.",
        "type": "invalid_request_error",
        "param": "messages.[5].content.[1].type",
        "code": None,
    }
}


def refuse_images(body: dict[str, Any]) -> Any:
    """A text-only model's server: a request with an image part is refused (400)."""
    from promptimus.testing import Fault

    if any(image_urls(message) for message in body["messages"]):
        return Fault.status(400, body=NO_VISION)
    return "A red door."


def snapshot_steps(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("snapshot", {"label": "door"}, id="c1")]))
    srv.chat.respond_with(refuse_images)


async def test_a_server_that_refuses_images_gets_them_described_and_the_provider_learns(
    srv: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    from promptimus.llms.capabilities import capabilities

    llm = make_llm(srv)
    snapshot_steps(srv)
    async with small() as toolset:
        agent = OpenaiToolCallingAgent("Look.", [toolset]).with_llm(llm)
        output, record = await asyncio.wait_for(agent.run("what is there?"), BOUND)
        assert output.content == "A red door."
        assert len(srv.chat.requests) == 3  # the step with the image, refused once, then described
        described = srv.chat.requests[2]["messages"][-1]
        assert image_urls(described) == []
        assert "[image 1 (image/png): not shown, this model takes no images]" in text_of(described)
        assert capabilities(llm).images is False
        assert record.tool_calls[0].images  # the record keeps the image itself

        snapshot_steps(srv)
        await asyncio.wait_for(
            agent.run(
                "and now?",
            ),
            BOUND,
        )
    assert len(srv.chat.requests) == 5  # remembered: no refused request the second time
    assert sum("rejected a request with images" in r.getMessage() for r in caplog.records) == 1


async def test_a_provider_set_to_take_no_images_never_sends_one(srv: FakeOpenAIServer) -> None:
    from promptimus.llms.capabilities import capabilities

    llm = make_llm(srv)
    capabilities(llm).images = False
    snapshot_steps(srv)
    async with small() as toolset:
        agent = ToolCallingAgent([toolset]).with_llm(llm)
        srv.chat.clear()
        srv.chat.script(
            'Thought: look\nAction: snapshot\nAction Input: {"label": "door"}',
            "Thought: seen\nAnswer: red",
        )
        reply = await asyncio.wait_for(agent.forward("colour?"), BOUND)
    assert reply.content == "red"
    assert len(srv.chat.requests) == 2
    observation = srv.chat.requests[1]["messages"][-1]
    assert image_urls(observation) == []
    assert "not shown, this model takes no images" in text_of(observation)


async def test_a_refusal_that_is_not_about_the_images_is_raised(srv: FakeOpenAIServer) -> None:
    from promptimus.errors import RequestRejected
    from promptimus.llms.capabilities import capabilities
    from promptimus.testing import Fault

    llm = make_llm(srv)
    srv.chat.script(
        Reply(tool_calls=[ToolCall("snapshot", {"label": "door"}, id="c1")]),
        Fault.status(401),
    )
    async with small() as toolset:
        agent = OpenaiToolCallingAgent("Look.", [toolset]).with_llm(llm)
        with pytest.raises(RequestRejected):
            await asyncio.wait_for(agent.run("what is there?"), BOUND)
    assert len(srv.chat.requests) == 2 and capabilities(llm).images is None
