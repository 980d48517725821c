"""A long tool-using conversation played by each fake server: every turn the user states a fact
(``fact-N``), the model calls ``lookup`` twice in one reply, then answers. A request without
tools is a summary request: the "summary" lists the facts its transcript holds, as a faithful
summarizer would. Used by the compaction tests and bench/compaction.py."""

from __future__ import annotations

import re
from typing import Any

from promptimus.testing import (
    AnthropicReply,
    GeminiCall,
    GeminiReply,
    Reply,
    ResponsesReply,
    Thinking,
    ToolCall,
)

RESULT_WORDS = 150
"""How many words each lookup returns: what makes the conversation outgrow its window."""


def lookup(key: str) -> str:
    """Look up a record by its key."""
    return f"record {key}: " + " ".join(["data"] * RESULT_WORDS)


def turn_text(n: int) -> str:
    return f"Turn {n}: remember fact-{n}, then look up a{n} and b{n}."


def _summary(transcript: str) -> str:
    facts = sorted(set(re.findall(r"fact-\d+", transcript)), key=lambda f: int(f[5:]))
    return "Known facts: " + ", ".join(facts) if facts else "Nothing to keep."


def _turn(text: str) -> int:
    found = re.search(r"Turn (\d+)", text)
    return int(found.group(1)) if found else 0


def openai_responder(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    last = messages[-1]
    if "tools" not in body:
        return Reply(content=_summary(last["content"]))
    if last["role"] == "tool":
        users = [m for m in messages if m["role"] == "user" and "Turn" in str(m["content"])]
        return Reply(content=f"Done with turn {_turn(str(users[-1]['content']))}.")
    n = _turn(str(last["content"]))
    return Reply(
        tool_calls=[ToolCall("lookup", {"key": f"a{n}"}), ToolCall("lookup", {"key": f"b{n}"})]
    )


def _anthropic_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(block.get("text", "")) for block in content if isinstance(block, dict))


def anthropic_responder(thinking: bool) -> Any:
    def respond(body: dict[str, Any]) -> AnthropicReply:
        messages = body["messages"]
        last = messages[-1]
        blocks = last["content"] if isinstance(last["content"], list) else []
        if "tools" not in body:
            return AnthropicReply(content=_summary(_anthropic_text(last["content"])))
        if any(block.get("type") == "tool_result" for block in blocks):
            return AnthropicReply(content=f"Done with turn {_turn(_anthropic_text(blocks))}.")
        n = _turn(_anthropic_text(last["content"]))
        return AnthropicReply(
            thinking=Thinking(f"I will look up a{n} and b{n}.") if thinking else None,
            tool_calls=[ToolCall("lookup", {"key": f"a{n}"}), ToolCall("lookup", {"key": f"b{n}"})],
        )

    return respond


def gemini_responder(body: dict[str, Any]) -> GeminiReply:
    contents = body["contents"]
    parts = contents[-1]["parts"]
    text = " ".join(str(part.get("text", "")) for part in parts)
    if "tools" not in body:
        return GeminiReply(text=_summary(text))
    if any("functionResponse" in part for part in parts):
        return GeminiReply(text="Done with the lookups.")
    n = _turn(text)
    return GeminiReply(
        calls=[GeminiCall("lookup", {"key": f"a{n}"}), GeminiCall("lookup", {"key": f"b{n}"})]
    )


def responses_responder(body: dict[str, Any]) -> ResponsesReply:
    """The conversation on the fake Responses API: the turn a tool result belongs to is read from
    the result itself, since server-side compaction may have replaced the user's message."""
    given = body["input"]
    last = given[-1] if isinstance(given, list) else {"content": given}
    if last.get("type") == "function_call_output":
        found = re.search(r"record a(\d+)|record b(\d+)", str(last["output"]))
        n = next((g for g in found.groups() if g), "0") if found else "0"
        return ResponsesReply(content=f"Done with turn {n}.")
    n = _turn(payloads_text(last.get("content")))
    return ResponsesReply(
        tool_calls=[ToolCall("lookup", {"key": f"a{n}"}), ToolCall("lookup", {"key": f"b{n}"})]
    )


def payloads_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)
