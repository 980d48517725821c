"""The OpenAI chat API's check of a conversation's tool calls, as the fake server makes it:
every ``tool`` message answers a call of the assistant message before it, and every call of an
assistant message is answered before the next other message. What the real API answers when
compaction (or anything else) separated a call from its result."""

from __future__ import annotations

from typing import Any

__all__ = ["orphan_tool_error"]


def _error(message: str, param: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }


def orphan_tool_error(messages: Any) -> dict[str, Any] | None:
    """The 400 body the API sends for `messages` with a tool result that answers no call, or a
    call no result answers; None when every call and result pair up."""
    if not isinstance(messages, list):
        return None
    open_calls: list[str] = []  # the calls of the last assistant message not answered yet
    answering = False  # inside the tool messages after an assistant message with calls
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not answering or call_id not in open_calls:
                return _error(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            open_calls.remove(call_id)
            continue
        if open_calls:
            return _missing(open_calls, index - 1)
        calls = message.get("tool_calls") if role == "assistant" else None
        ids = [c.get("id") for c in calls or () if isinstance(c, dict)]
        open_calls, answering = [i for i in ids if isinstance(i, str)], bool(ids)
    if open_calls:
        return _missing(open_calls, len(messages) - 1)
    return None


def _missing(ids: list[str], index: int) -> dict[str, Any]:
    return _error(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(ids),
        f"messages.[{index}].role",
    )
