"""FakeAnthropicServer spoken to by the official anthropic SDK as it is: replies, events,
checks and faults in the Messages API's own terms."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from promptimus.testing import (
    AnthropicReply,
    FakeAnthropicServer,
    Fault,
    Reply,
    Thinking,
    ToolCall,
    anthropic_error,
)


@pytest.fixture
def srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


def client(srv: FakeAnthropicServer, **kwargs: object) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=srv.base_url, api_key=srv.api_key, max_retries=0, **kwargs)


def test_a_reply_parses_into_the_sdks_message(srv: FakeAnthropicServer) -> None:
    srv.messages.script(
        AnthropicReply(thinking="Think.", content="Hi.", tool_calls=[ToolCall("f", {"x": 1})])
    )
    message = client(srv).messages.create(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hello"}]
    )
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text", "tool_use"]
    thinking, text, call = message.content
    assert thinking.thinking == "Think." and thinking.signature.startswith("sig_")  # type: ignore[union-attr]
    assert text.text == "Hi." and call.input == {"x": 1}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use" and message.model == "claude-x"
    assert message.usage.input_tokens == 1 and message.usage.output_tokens >= 1
    assert srv.messages.requests[0]["messages"][0]["content"] == "hello"


def test_the_stream_is_the_documented_event_sequence(srv: FakeAnthropicServer) -> None:
    srv.messages.script(
        AnthropicReply(
            thinking=[Thinking("a b"), Thinking(redacted="XX")],
            content="one two",
            tool_calls=[ToolCall("f", {"x": 1})],
        )
    )
    with client(srv).messages.stream(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        events = [
            event.type
            for event in stream
            if not event.type.endswith(("text", "json", "thinking", "signature"))
        ]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert events[-2] == "message_delta"
    assert events.count("content_block_start") == events.count("content_block_stop") == 4
    assert [block.type for block in final.content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
    ]
    assert final.content[0].signature.startswith("sig_")  # type: ignore[union-attr]
    assert final.content[2].text == "one two"  # type: ignore[union-attr]
    assert final.content[3].input == {"x": 1}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"


def test_errors_are_anthropic_bodies_with_retry_after(srv: FakeAnthropicServer) -> None:
    srv.messages.script(Fault.status(429, retry_after=2), Fault.status(529))
    sdk = client(srv)
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        sdk.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert overloaded.value.status_code == 529
    assert anthropic_error(529)["error"]["type"] == "overloaded_error"


def test_an_error_event_inside_a_stream_reaches_the_sdk(srv: FakeAnthropicServer) -> None:
    srv.messages.script(Fault.stream_error(after_chunks=3))
    stream = client(srv).messages.stream(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"), stream as events:
        for _ in events:
            pass


def test_what_the_real_api_refuses_is_refused(srv: FakeAnthropicServer) -> None:
    sdk = client(srv)
    with pytest.raises(anthropic.BadRequestError, match="role"):
        sdk.messages.create(model="m", max_tokens=8, messages=[{"role": "system", "content": "x"}])
    srv.messages.script(AnthropicReply(thinking="t", tool_calls=[ToolCall("f", id="tu_1")]))
    first = sdk.messages.create(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    assistant = [block.model_dump(exclude_none=True) for block in first.content]
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "r"}],
    }
    thinking = {"type": "enabled", "budget_tokens": 1024}
    forged = [{**assistant[0], "signature": "forged"}, assistant[1]]
    for blocks, problem in ((assistant[1:], "Expected `thinking`"), (forged, "signature")):
        with pytest.raises(anthropic.BadRequestError, match=problem):
            sdk.messages.create(
                model="m",
                max_tokens=2048,
                thinking=thinking,  # type: ignore[arg-type]
                messages=[
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": blocks},
                    result,
                ],  # type: ignore[list-item]
            )
    sdk.messages.create(
        model="m",
        max_tokens=2048,
        thinking=thinking,  # type: ignore[arg-type]
        messages=[
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": assistant},
            result,
        ],  # type: ignore[list-item]
    )
    with pytest.raises(anthropic.BadRequestError, match="tool_use_id"):
        sdk.messages.create(model="m", max_tokens=8, messages=[result])  # type: ignore[list-item]


def test_cache_breakpoints_write_then_read(srv: FakeAnthropicServer) -> None:
    sdk = client(srv)
    system = [{"type": "text", "text": "a b c d e f", "cache_control": {"type": "ephemeral"}}]
    args = {
        "model": "m",
        "max_tokens": 8,
        "system": system,
        "messages": [{"role": "user", "content": "q r"}],
    }
    first = sdk.messages.create(**args)  # type: ignore[arg-type]
    second = sdk.messages.create(**args)  # type: ignore[arg-type]
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (6, 0)
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (
        0,
        6,
    )
    assert second.usage.input_tokens == 2
    five = [dict(system[0]) for _ in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        sdk.messages.create(**{**args, "system": five})  # type: ignore[arg-type]


def test_auth_context_window_and_openai_replies() -> None:
    with FakeAnthropicServer(require_auth=True, context_window=10) as srv:
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(
                base_url=srv.base_url, api_key="wrong", max_retries=0
            ).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            client(srv).messages.create(
                model="m", max_tokens=50, messages=[{"role": "user", "content": "x"}]
            )
        srv.messages.script(Reply(content="plain", reasoning="why"))
        message = client(srv).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        assert [block.type for block in message.content] == ["thinking", "text"]


def test_a_tool_use_without_its_result_in_the_next_message_is_refused(
    srv: FakeAnthropicServer,
) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks"):
        client(srv).messages.create(
            model="claude-test",
            max_tokens=10,
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": "and?"},
            ],
        )
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"}
    client(srv).messages.create(
        model="claude-test",
        max_tokens=10,
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
    )
