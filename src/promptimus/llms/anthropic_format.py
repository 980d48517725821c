"""Translate between promptimus messages and Anthropic's Messages API.

Requests: system messages become the top-level ``system`` (text blocks); tool results become
``tool_result`` blocks in a user message (consecutive ones, and a user message that follows
them, merged into one turn); an assistant message sends back its Anthropic thinking blocks
unchanged (``thinking`` with its ``signature``, ``redacted_thinking``) before its text and the
``tool_use`` blocks they led to; images become ``image`` blocks and documents ``document``
blocks. Request options given in the OpenAI shape the rest of promptimus speaks (``tools``,
``tool_choice``, ``response_format``, ``stop``, ``max_completion_tokens``) are translated.

Replies are read from their JSON: content blocks become the text, the tool calls and the
thinking (its text is the reply's ``reasoning``); ``stop_reason`` maps onto OpenAI's finish
reasons (``max_tokens`` is ``length``); usage maps onto `Usage` with ``prompt_tokens`` counting
every input token (input + cache reads + cache writes).
"""

from __future__ import annotations

import json
from typing import Any

from promptimus.dto import (
    Message,
    MessageDelta,
    MessageRole,
    ThinkingBlock,
    ToolCallDelta,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.errors import (
    EmptyReply,
    ErrorInReply,
    InvalidArgument,
    MalformedReply,
    RequestRejected,
)
from promptimus.llms.option_shapes import json_schema_of, object_option, text_list_option
from promptimus.llms.server_said import said_by_server

__all__ = [
    "PROVIDER",
    "StreamReader",
    "add_cache_breakpoints",
    "reply_to_message",
    "to_anthropic",
    "translate_options",
    "usage_from_anthropic",
]

PROVIDER = "anthropic"
"""The `ThinkingBlock.provider` of blocks this API wrote."""

MAX_BREAKPOINTS = 4
"""Anthropic takes at most four ``cache_control`` breakpoints per request."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}

_EPHEMERAL = {"type": "ephemeral"}


# --- requests ---------------------------------------------------------------------------------


def _image_block(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        media_type = head[5:].split(";", 1)[0] or "image/png"
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for document in message.documents:
        block: dict[str, Any] = {
            "type": "document",
            "source": {"type": "base64", "media_type": document.media_type, "data": document.data},
        }
        if document.name:
            block["title"] = document.name
        blocks.append(block)
    blocks.extend(_image_block(image.url) for image in message.images)
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    return blocks


def _thinking_blocks(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.thinking or ():
        if block.provider != PROVIDER:
            continue  # another provider's: Anthropic could not verify it
        if block.redacted is not None:
            out.append({"type": "redacted_thinking", "data": block.redacted})
        elif block.signature is not None:
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
    return out


def _tool_input(call: ToolRequest) -> dict[str, Any]:
    try:
        value = json.loads(call.function.arguments or "{}")
    except ValueError:
        value = None
    # the API takes an object; arguments the model wrote as invalid JSON go back as written
    return value if isinstance(value, dict) else {"_raw_arguments": call.function.arguments}


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = _thinking_blocks(message)
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for i, call in enumerate(message.tool_calls or ()):
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_{i}",
                "name": call.function.name,
                "input": _tool_input(call),
            }
        )
    return blocks


def _tool_result(message: Message) -> dict[str, Any]:
    content: Any = message.content
    if message.images or message.documents:
        content = _user_blocks(message)
    return {"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": content}


def to_anthropic(history: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system, messages)``: the system text blocks and the conversation's turns."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in history:
        role = message.role
        if role == MessageRole.SYSTEM:
            if message.content:
                system.append({"type": "text", "text": message.content})
            continue
        if role == MessageRole.ASSISTANT:
            blocks = _assistant_blocks(message)
            if not blocks:
                continue  # the API refuses an empty turn
            wire_role = "assistant"
        elif role == MessageRole.TOOL:
            blocks, wire_role = [_tool_result(message)], "user"
        else:
            blocks, wire_role = _user_blocks(message), "user"
            if not blocks:
                blocks = [{"type": "text", "text": ""}]
        if turns and turns[-1]["role"] == wire_role:
            turns[-1]["content"].extend(blocks)  # one turn per role, as the API reads them
        else:
            turns.append({"role": wire_role, "content": blocks})
    return system, turns


def add_cache_breakpoints(params: dict[str, Any]) -> None:
    """Mark the stable prefix with ``cache_control``: the last tool, the last system block
    and the last block of the conversation so far (at most `MAX_BREAKPOINTS`, counting any the
    caller set)."""
    used = _count_breakpoints(params)
    targets: list[dict[str, Any]] = []
    if params.get("tools"):
        targets.append(params["tools"][-1])
    system = params.get("system")
    if isinstance(system, list) and system:
        targets.append(system[-1])
    messages = params.get("messages") or []
    if messages and isinstance(messages[-1].get("content"), list) and messages[-1]["content"]:
        targets.append(messages[-1]["content"][-1])
    for target in targets:
        if used >= MAX_BREAKPOINTS:
            return
        if "cache_control" not in target:
            target["cache_control"] = dict(_EPHEMERAL)
            used += 1


def _count_breakpoints(params: dict[str, Any]) -> int:
    count = sum("cache_control" in tool for tool in params.get("tools") or ())
    system = params.get("system")
    if isinstance(system, list):
        count += sum("cache_control" in block for block in system)
    for message in params.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list):
            count += sum("cache_control" in block for block in content)
    return count


_WHO = "Anthropic"


def _tool(entry: Any) -> dict[str, Any]:
    """An OpenAI ``tools`` entry as an Anthropic tool (an Anthropic-shaped one passes)."""
    if not isinstance(entry, dict):
        raise InvalidArgument(
            f"{_WHO}: each entry of the tools option must be a tool dict, got {entry!r:.60}."
        )
    function = entry.get("function")
    if entry.get("type") != "function" or not isinstance(function, dict):
        if not isinstance(entry.get("name"), str):
            raise InvalidArgument(
                f"{_WHO}: a tools entry needs a name: {{'type': 'function', 'function': "
                f"{{'name': ..., 'parameters': {{...}}}}}} or {{'name': ..., 'input_schema': "
                f"{{...}}}}, got {entry!r:.80}."
            )
        return entry
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgument(
            f"{_WHO}: a function in the tools option needs a name, got {entry!r:.80}."
        )
    tool: dict[str, Any] = {"name": name}
    if function.get("description"):
        tool["description"] = function["description"]
    tool["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return tool


_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}


def _tool_choice(choice: Any, parallel: bool | None) -> Any:
    if isinstance(choice, str) and choice in _CHOICES:
        choice = _CHOICES[choice]
    elif isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name:
            raise InvalidArgument(
                f"{_WHO}: tool_choice names a function as {{'type': 'function', 'function': "
                f"{{'name': ...}}}}, got {choice!r:.80}."
            )
        choice = {"type": "tool", "name": name}
    elif not isinstance(choice, dict) or not isinstance(choice.get("type"), str):
        raise InvalidArgument(
            f"{_WHO}: tool_choice must be 'auto', 'required', 'none', {{'type': 'function', "
            f"'function': {{'name': ...}}}} or the API's own object, got {choice!r:.60}."
        )
    if parallel is False and choice.get("type") != "none":
        choice = {**choice, "disable_parallel_tool_use": True}
    return choice


def translate_options(options: dict[str, Any]) -> dict[str, Any]:
    """Request options in the OpenAI shape, as Messages API fields (others pass through).
    ``InvalidArgument`` names an option of the wrong shape."""
    out = dict(options)
    for key in ("extra_body", "extra_headers", "extra_query", "metadata"):
        object_option(out, key, _WHO)
    if "max_completion_tokens" in out:
        out["max_tokens"] = out.pop("max_completion_tokens")
    stop = out.pop("stop", None)
    if stop is not None:
        out["stop_sequences"] = text_list_option(stop, "stop", _WHO)
    if "tools" in out:
        tools = out["tools"]
        if not isinstance(tools, list | tuple):
            raise InvalidArgument(
                f"{_WHO}: the tools option must be a list of tools, got {tools!r:.60}."
            )
        out["tools"] = [_tool(entry) for entry in tools]
    parallel = out.pop("parallel_tool_calls", None)
    if "tool_choice" in out or parallel is False:
        out["tool_choice"] = _tool_choice(out.pop("tool_choice", "auto"), parallel)
    if "response_format" in out:
        output_format = _output_format(out.pop("response_format"))
        if output_format is not None:
            out["output_config"] = {**out.get("output_config", {}), "format": output_format}
    return out


def _output_format(response_format: Any) -> dict[str, Any] | None:
    """Anthropic's structured-output format for an OpenAI ``response_format``."""
    kind, schema = json_schema_of(response_format, _WHO)
    if kind == "json_schema":
        return {"type": "json_schema", "schema": schema}
    if kind in (None, "text"):
        return None
    # the Messages API has no JSON mode without a schema: StructuralOutput's prompted mode is
    # the next step, so say so before sending anything
    raise RequestRejected(
        f"The Anthropic Messages API has no response_format {kind!r}: use a json_schema "
        "response_format (structured outputs) or none.",
        status=None,
        server_message="",
        rejected_fields=("response_format.type",),
    )


# --- replies ----------------------------------------------------------------------------------


def _count(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedReply(f"usage.{key} is {value!r}, expected a token count")
    return value


def usage_from_anthropic(data: Any) -> Usage | None:
    """`Usage` for an Anthropic usage object: ``prompt_tokens`` counts every input token."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise MalformedReply(f"usage is {type(data).__name__}, expected an object")
    fresh = _count(data, "input_tokens")
    read = _count(data, "cache_read_input_tokens")
    written = _count(data, "cache_creation_input_tokens")
    output = _count(data, "output_tokens")
    prompt = fresh + read + written
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=output,
        total_tokens=prompt + output,
        cached_tokens=read,
        cache_write_tokens=written,
    )


def _kind(block: Any, where: str) -> str:
    """A content block's ``type`` (``MalformedReply`` for a block that is not an object or has
    no text type)."""
    if not isinstance(block, dict):
        raise MalformedReply(f"{where} is {type(block).__name__}, expected a content block")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise MalformedReply(f"{where}.type is {kind!r}, expected the block's type as text")
    return kind


def _thinking(block: dict[str, Any]) -> ThinkingBlock:
    if block.get("type") == "redacted_thinking":
        return ThinkingBlock(provider=PROVIDER, redacted=_text(block, "data"))
    return ThinkingBlock(
        provider=PROVIDER, text=_text(block, "thinking"), signature=_optional(block, "signature")
    )


def _optional(block: dict[str, Any], key: str) -> str | None:
    """A text field of a block that may be absent (None), never another type."""
    value = block.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedReply(
            f"a {block.get('type')} block's {key} is {type(value).__name__} ({value!r:.40}), "
            "expected text"
        )
    return value


def _text(block: dict[str, Any], key: str) -> str:
    return _optional(block, key) or ""


def _tool_request(block: dict[str, Any]) -> ToolRequest:
    name = _optional(block, "name")
    if not name:
        raise MalformedReply("a tool_use block has no name")
    arguments = block.get("input")
    text = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return ToolRequest(id=_optional(block, "id"), function=ToolFunction(name=name, arguments=text))


def reply_to_message(data: Any) -> Message:
    """The assistant `Message` of a Messages API reply (JSON). ``MalformedReply`` names what is
    wrong with a body that is not a message; ``EmptyReply`` is a reply with no text and no
    tool call."""
    if not isinstance(data, dict):
        raise MalformedReply(f"the body is {type(data).__name__}, not a JSON object")
    blocks = data.get("content")
    if not isinstance(blocks, list):
        if data.get("error") is not None:
            raise ErrorInReply(said_by_server(data["error"]))
        raise MalformedReply("content is missing or not a list of content blocks")
    texts: list[str] = []
    calls: list[ToolRequest] = []
    thinking: list[ThinkingBlock] = []
    for position, block in enumerate(blocks):
        kind = _kind(block, f"content[{position}]")
        if kind == "text":
            texts.append(_text(block, "text"))
        elif kind == "tool_use":
            calls.append(_tool_request(block))
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(_thinking(block))
    stop = data.get("stop_reason")
    finish = _FINISH.get(stop, stop) if isinstance(stop, str) else None
    content = "".join(texts)
    if not content.strip() and not calls:
        raise EmptyReply("the message holds no text and no tool call", finish_reason=finish)
    model = data.get("model")
    return Message(
        role=MessageRole.ASSISTANT,
        content=content,
        tool_calls=calls or None,
        reasoning="".join(block.text for block in thinking) or None,
        thinking=thinking or None,
        usage=usage_from_anthropic(data.get("usage")),
        finish_reason=finish,
        model_name=model if isinstance(model, str) and model else None,
        context_edits=applied_edits(data),
    )


def applied_edits(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """What the server's context editing cleared (``context_management.applied_edits``, on a
    reply or a ``message_delta`` event); None when it cleared nothing. ``MalformedReply`` for
    a report of the wrong shape."""
    management = data.get("context_management")
    if management is None:
        return None
    edits = management.get("applied_edits") if isinstance(management, dict) else None
    if edits is None:
        return None
    if not isinstance(edits, list) or not all(isinstance(edit, dict) for edit in edits):
        raise MalformedReply(
            f"context_management.applied_edits is {edits!r:.80}, expected a list of objects"
        )
    return [dict(edit) for edit in edits] or None


_TEXT_FIELDS = {
    "text": ("text",),
    "tool_use": ("id", "name"),
    "thinking": ("thinking", "signature"),
    "redacted_thinking": ("data",),
}
"""The text fields of each content block type a stream starts (checked when it starts)."""


def _usage_object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedReply(
            f"{where} is {type(value).__name__} ({value!r:.40}), expected an object"
        )
    return value


class StreamReader:
    """Turn the events of one streamed reply into `MessageDelta`s (None: nothing to pass on).

    Text, thinking text and tool input arrive as deltas of their content block; a thinking
    block is passed whole (with its signature) once it stops; usage from ``message_start``
    (input and cache counts) and ``message_delta`` (output) are joined on the delta that
    carries the finish reason."""

    __slots__ = ("_blocks", "_calls", "_model", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._calls: dict[int, int] = {}  # block index -> tool call index
        self._usage: dict[str, Any] = {}
        self._model: str | None = None

    def read(self, event: Any) -> MessageDelta | None:
        if not isinstance(event, dict):
            raise MalformedReply("a stream event is not a JSON object")
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            index = event.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                raise MalformedReply(
                    f"content_block_stop.index is {index!r:.40}, expected a block's number"
                )
            block = self._blocks.get(index)
            if block is not None and block["type"] in ("thinking", "redacted_thinking"):
                return MessageDelta(thinking=[_thinking(block)])
            return None
        if kind == "message_start":
            message = event.get("message")
            if not isinstance(message, dict):
                raise MalformedReply("message_start carries no message")
            self._usage.update(_usage_object(message.get("usage"), "message_start.message.usage"))
            model = message.get("model")
            self._model = model if isinstance(model, str) and model else None
            return MessageDelta(model_name=self._model)
        if kind == "message_delta":
            return self._finish(event)
        return None  # ping, message_stop, and event types added later

    def _start(self, event: dict[str, Any]) -> MessageDelta | None:
        index = event.get("index")
        block = event.get("content_block")
        if not isinstance(index, int) or isinstance(index, bool) or not isinstance(block, dict):
            raise MalformedReply("content_block_start has no index or no content_block")
        block = dict(block)
        kind = _kind(block, "content_block_start.content_block")
        for key in _TEXT_FIELDS.get(kind, ()):
            _optional(block, key)
        self._blocks[index] = block
        if kind == "tool_use":
            call = self._calls[index] = len(self._calls)
            given = block.get("input")  # {} from the API; whole from a server that sends no deltas
            fragment = ToolCallDelta(
                index=call,
                id=block.get("id"),
                name=block.get("name"),
                arguments=json.dumps(given, ensure_ascii=False) if given else "",
            )
            return MessageDelta(tool_calls=[fragment])
        if kind == "text" and block.get("text"):
            return MessageDelta(content=block["text"])
        return None

    def _delta(self, event: dict[str, Any]) -> MessageDelta | None:
        index = event.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        delta = event.get("delta")
        if block is None or not isinstance(delta, dict):
            raise MalformedReply("content_block_delta for a block that was not started")
        kind = delta.get("type")
        if kind == "text_delta":
            return MessageDelta(content=_text(delta, "text"))
        if kind == "thinking_delta":
            text = _text(delta, "thinking")
            block["thinking"] = block.get("thinking", "") + text
            return MessageDelta(reasoning=text)
        if kind == "signature_delta":
            block["signature"] = (block.get("signature") or "") + _text(delta, "signature")
            return None
        if kind == "input_json_delta":
            partial = _text(delta, "partial_json")
            assert isinstance(index, int)
            if index not in self._calls:
                raise MalformedReply(
                    f"an input_json_delta came for content block {index}, a {block['type']} "
                    "block, not a tool_use block"
                )
            return MessageDelta(
                tool_calls=[ToolCallDelta(index=self._calls[index], arguments=partial)]
            )
        return None

    def _finish(self, event: dict[str, Any]) -> MessageDelta:
        delta = event.get("delta") or {}
        self._usage.update(_usage_object(event.get("usage"), "message_delta.usage"))
        stop = delta.get("stop_reason") if isinstance(delta, dict) else None
        finish = _FINISH.get(stop, stop) if isinstance(stop, str) else None
        return MessageDelta(
            usage=usage_from_anthropic(self._usage),
            finish_reason=finish,
            model_name=self._model,
            context_edits=applied_edits(event),
        )
