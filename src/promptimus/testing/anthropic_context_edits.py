"""Anthropic's context editing, as the fake Anthropic server applies it: a request's
``context_management.edits`` (beta ``context-management-2025-06-27``) change what the model
reads before the request is sized against the context window, and the reply reports what they
cleared (``context_management.applied_edits``).

Written from Anthropic's public documentation of context editing:

- ``clear_tool_uses_20250919``: once the input is over ``trigger`` (``{"type": "input_tokens",
  "value": N}``, 100,000 by default), the results of every tool use but the last ``keep``
  (``{"type": "tool_uses", "value": K}``, 3 by default) are replaced by a placeholder, except
  those of the tools in ``exclude_tools``; ``clear_tool_inputs`` also empties their inputs. The
  tool uses stay, answered. Reported: ``cleared_tool_uses`` and ``cleared_input_tokens``.
- ``clear_thinking_20251015``: the thinking blocks of every assistant turn but the last
  ``keep`` (``{"type": "thinking_turns", "value": N}``, 1 by default; ``"all"`` keeps all) are
  removed. Reported: ``cleared_thinking_turns`` and ``cleared_input_tokens``.

Tokens are counted as the fake counts a request's size: one a word of text and tool results
(thinking and tool inputs are not counted, so clearing them reports no tokens).
"""

from __future__ import annotations

import copy
from typing import Any

from promptimus.testing.fake_anthropic_script import input_tokens

__all__ = ["CLEARED_TOOL_RESULT", "ContextEditError", "apply_context_edits"]

CLEARED_TOOL_RESULT = "[cleared to save context]"
_KINDS = ("clear_tool_uses_20250919", "clear_thinking_20251015")


class ContextEditError(ValueError):
    """A ``context_management`` the API refuses; the message is the API's."""


def apply_context_edits(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The request as the model reads it once its edits are applied, and the edits that
    cleared something (the reply's ``applied_edits``). A request without edits comes back
    as it is."""
    config = body.get("context_management")
    if config is None:
        return body, []
    edits = config.get("edits") if isinstance(config, dict) else None
    if not isinstance(edits, list):
        raise ContextEditError("context_management.edits: Input should be a valid list")
    edited = copy.deepcopy(body)
    applied = []
    for position, edit in enumerate(edits):
        kind = edit.get("type") if isinstance(edit, dict) else None
        if kind not in _KINDS:
            raise ContextEditError(
                f"context_management.edits.{position}.type: Input tag {kind!r} found using "
                f"'type' does not match any of the expected tags: {', '.join(map(repr, _KINDS))}"
            )
        before = input_tokens(edited)
        if kind == "clear_tool_uses_20250919":
            cleared = _clear_tool_uses(edited, edit, before)
            count_key = "cleared_tool_uses"
        else:
            cleared = _clear_thinking(edited, edit)
            count_key = "cleared_thinking_turns"
        if cleared:
            saved = before - input_tokens(edited)
            applied.append({"type": kind, count_key: cleared, "cleared_input_tokens": saved})
    return edited, applied


def _value(setting: Any, kind: str, default: int) -> int:
    if setting is None:
        return default
    if isinstance(setting, dict) and setting.get("type") == kind:
        value = setting.get("value")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    raise ContextEditError(f"{kind}: expected {{'type': {kind!r}, 'value': <count>}}")


def _assistant_blocks(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [
        message["content"]
        for message in body.get("messages") or ()
        if isinstance(message, dict)
        and message.get("role") == "assistant"
        and isinstance(message.get("content"), list)
    ]


def _clear_tool_uses(body: dict[str, Any], edit: dict[str, Any], size: int) -> int:
    if size <= _value(edit.get("trigger"), "input_tokens", 100_000):
        return 0
    keep = _value(edit.get("keep"), "tool_uses", 3)
    exclude = set(edit.get("exclude_tools") or ())
    uses = [
        block
        for blocks in _assistant_blocks(body)
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]
    old = uses[: max(len(uses) - keep, 0)]
    clearing = {use["id"]: use for use in old if use.get("name") not in exclude}
    cleared = 0
    for message in body.get("messages") or ():
        blocks = message.get("content") if isinstance(message, dict) else None
        for block in blocks if isinstance(blocks, list) else ():
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            use = clearing.get(block.get("tool_use_id"))
            if use is None or block.get("content") == CLEARED_TOOL_RESULT:
                continue
            block["content"] = CLEARED_TOOL_RESULT
            if edit.get("clear_tool_inputs") is True:
                use["input"] = {}
            cleared += 1
    return cleared


def _clear_thinking(body: dict[str, Any], edit: dict[str, Any]) -> int:
    setting = edit.get("keep")
    turns = [blocks for blocks in _assistant_blocks(body) if _thinks(blocks)]
    if setting == "all" or (isinstance(setting, dict) and setting.get("type") == "all"):
        return 0
    keep = _value(setting, "thinking_turns", 1)
    old = turns[: max(len(turns) - keep, 0)]
    for blocks in old:
        blocks[:] = [b for b in blocks if b.get("type") not in ("thinking", "redacted_thinking")]
    return len(old)


def _thinks(blocks: list[Any]) -> bool:
    return any(
        isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking") for b in blocks
    )
