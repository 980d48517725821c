"""The fake Anthropic server applies context editing (``context_management``, beta
``context-management-2025-06-27``) as the public docs describe it, spoken to by the official
SDK's beta client: old tool results are cleared (the tool uses stay, answered), old thinking is
removed, the edited request is what the context window holds, and the reply reports what was
cleared, plain and streamed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from promptimus.testing import AnthropicReply, FakeAnthropicServer, ToolCall
from promptimus.testing.anthropic_context_edits import CLEARED_TOOL_RESULT

BETA = "context-management-2025-06-27"
RESULT = " ".join(["data"] * 100)


@pytest.fixture
def srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(context_window=600) as server:
        yield server


def conversation(srv: FakeAnthropicServer, turns: int) -> list[dict[str, Any]]:
    """`turns` exchanges played through the server: each a reply with thinking (signed by the
    server) and one tool use, then its 100-word result."""
    client = anthropic.Anthropic(base_url=srv.base_url, api_key=srv.api_key, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look everything up."}]
    for n in range(turns):
        srv.messages.script(
            AnthropicReply(thinking=f"step {n}", tool_calls=[ToolCall("lookup", {"n": n})])
        )
        reply = client.messages.create(
            model="claude-x",
            max_tokens=50,
            messages=messages,  # type: ignore[arg-type]
        )
        blocks = [block.model_dump(exclude_none=True) for block in reply.content]
        messages.append({"role": "assistant", "content": blocks})
        use = blocks[-1]["id"]
        result = {"type": "tool_result", "tool_use_id": use, "content": RESULT}
        messages.append({"role": "user", "content": [result]})
    return messages


def create(srv: FakeAnthropicServer, edits: list[dict[str, Any]] | None, **kwargs: Any) -> Any:
    client = anthropic.Anthropic(base_url=srv.base_url, api_key=srv.api_key, max_retries=0)
    extra = {} if edits is None else {"context_management": {"edits": edits}}
    messages = conversation(srv, 6)
    srv.messages.script(AnthropicReply(content="Done."))
    return client.beta.messages.create(
        model="claude-x",
        max_tokens=50,
        messages=messages,  # type: ignore[arg-type]
        betas=[BETA],
        **extra,  # type: ignore[arg-type]
        **kwargs,
    )


CLEAR = {
    "type": "clear_tool_uses_20250919",
    "trigger": {"type": "input_tokens", "value": 300},
    "keep": {"type": "tool_uses", "value": 2},
}


def test_without_edits_the_conversation_is_too_long(srv: FakeAnthropicServer) -> None:
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        create(srv, None)


def test_clearing_old_tool_results_fits_the_window_and_is_reported(
    srv: FakeAnthropicServer,
) -> None:
    message = create(srv, [CLEAR])

    assert message.content[0].text == "Done."
    [applied] = message.context_management.applied_edits
    assert applied.type == "clear_tool_uses_20250919"
    assert applied.cleared_tool_uses == 4
    assert applied.cleared_input_tokens == 4 * (100 - len(CLEARED_TOOL_RESULT.split()))
    # the request as sent is recorded whole; the usage counts what the model read
    sent = srv.messages.requests[-1]
    assert sent["context_management"] == {"edits": [CLEAR]}
    assert message.usage.input_tokens < 600 - 50


def test_below_its_trigger_an_edit_clears_nothing(srv: FakeAnthropicServer) -> None:
    edit = {**CLEAR, "trigger": {"type": "input_tokens", "value": 5000}}
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        create(srv, [edit])


def test_excluded_tools_and_thinking_edits_stream_their_report(srv: FakeAnthropicServer) -> None:
    thinking = {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}
    excluded = {**CLEAR, "exclude_tools": ["lookup"]}
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        create(srv, [excluded, thinking])  # nothing it may clear is large enough

    srv.messages.clear()  # the reply the refused request left scripted
    client = anthropic.Anthropic(base_url=srv.base_url, api_key=srv.api_key, max_retries=0)
    messages = conversation(srv, 6)
    srv.messages.script(AnthropicReply(content="Done."))
    with client.beta.messages.stream(
        model="claude-x",
        max_tokens=50,
        messages=messages,  # type: ignore[arg-type]
        betas=[BETA],
        context_management={"edits": [thinking, CLEAR]},  # type: ignore[list-item]
    ) as stream:
        final = stream.get_final_message()
    kinds = [(e.type, e.cleared_input_tokens) for e in final.context_management.applied_edits]
    assert [kind for kind, _ in kinds] == ["clear_thinking_20251015", "clear_tool_uses_20250919"]
    assert kinds[0][1] == 0  # the fake counts no thinking in a request's size
    assert final.context_management.applied_edits[0].cleared_thinking_turns == 5


def test_an_unknown_edit_is_refused_in_the_apis_words(srv: FakeAnthropicServer) -> None:
    with pytest.raises(anthropic.BadRequestError, match="does not match any of the expected"):
        create(srv, [{"type": "clear_everything"}])
