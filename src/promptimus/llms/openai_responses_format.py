"""Translate between promptimus messages and the OpenAI Responses API's items.

A conversation goes out as ``input`` items: system and user messages as role messages (images
as ``input_image``, PDFs as ``input_file`` parts), an assistant reply as the items the server
produced, in their order (its reasoning items first, then the calls the server ran itself, its
text, and its ``function_call`` items), and each tool result as a ``function_call_output``
paired with its call by ``call_id``. Reasoning items are sent back only where the server can
read them: with their ``encrypted_content`` (a stateless request), or by id to a server that
stored them (``store=True``); another provider's thinking blocks and hosted calls are skipped.

Replies are read from their JSON form: reasoning items become ``ThinkingBlock`` s (provider
``"openai-responses"``: ``id`` the ``rs_`` id, ``text`` the summary, ``redacted`` the encrypted
content), ``message`` items the text, ``function_call`` items ``ToolRequest`` s, and every
other ``*_call`` item a `HostedToolCall`. A field of the wrong type raises ``MalformedReply``
naming it.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from promptimus.dto import (
    HostedToolCall,
    Message,
    MessageRole,
    ThinkingBlock,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.errors import MalformedReply, RequestRejected

__all__ = [
    "PROVIDER",
    "compaction_item",
    "hosted_call",
    "reasoning_block",
    "reasoning_ids",
    "to_input",
    "translate_options",
    "usage_from_responses",
]

PROVIDER = "openai-responses"
"""The `ThinkingBlock.provider` / `HostedToolCall.provider` of what this API wrote."""


# --- requests ---------------------------------------------------------------------------------


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    if not message.images and not message.documents:
        return message.content
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "input_text", "text": message.content})
    for image in message.images:
        part: dict[str, Any] = {"type": "input_image", "image_url": image.url}
        part["detail"] = image.detail or "auto"
        parts.append(part)
    for document in message.documents:
        parts.append(
            {
                "type": "input_file",
                "filename": document.name or "document.pdf",
                "file_data": f"data:{document.media_type};base64,{document.data}",
            }
        )
    return parts


def _reasoning_item(
    block: ThinkingBlock, stored: bool, unreadable: Container[str]
) -> dict[str, Any] | None:
    """The reasoning item for ``block``, or None when the server could not read it: without
    its encrypted content, only a server that stored the reply knows the id; one it refused
    (``unreadable``) it will refuse again."""
    if block.provider != PROVIDER or not block.id or block.id in unreadable:
        return None
    if block.redacted is None and not stored:
        return None
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": block.id,
        "summary": [{"type": "summary_text", "text": block.text}] if block.text else [],
    }
    if block.redacted is not None:
        item["encrypted_content"] = block.redacted
    return item


def _assistant_items(
    message: Message, stored: bool, unreadable: Container[str]
) -> list[dict[str, Any]]:
    # the server's compaction of the input came first in its output
    items: list[dict[str, Any]] = [dict(edit) for edit in _compactions(message)]
    compacted = len(items)
    outputs = 0
    for block in message.thinking or ():
        item = _reasoning_item(block, stored, unreadable)
        if item is not None:
            items.append(item)
    reasoning = len(items) - compacted
    for call in message.hosted_calls or ():
        if call.provider == PROVIDER and call.item:
            items.append(dict(call.item))
            outputs += 1
    if message.content:
        items.append({"role": "assistant", "content": message.content})
        outputs += 1
    for request in message.tool_calls or ():
        items.append(
            {
                "type": "function_call",
                "call_id": request.id or "",
                "name": request.function.name,
                "arguments": request.function.arguments,
            }
        )
        outputs += 1
    if reasoning and not outputs:
        # a reasoning item must be followed by what it led to; alone it would be refused
        del items[compacted : compacted + reasoning]
    return items


def to_input(
    history: list[Message], *, stored: bool = False, unreadable: Container[str] = ()
) -> list[dict[str, Any]]:
    """The ``input`` items for ``history``; ``stored``: the server keeps what it sends (so a
    reasoning item without its encrypted content may still go back by id); ``unreadable``: ids
    of reasoning items the server refused to read, left out. A compaction item the server
    returned stands for everything before it: only the system messages before
    the latest one are sent."""
    items: list[dict[str, Any]] = []
    latest = max((i for i, m in enumerate(history) if _compactions(m)), default=0)
    for message in history[:latest]:
        if message.role is MessageRole.SYSTEM:
            items.append({"role": message.role.value, "content": _user_content(message)})
    for message in history[latest:]:
        role = message.role
        if role is MessageRole.ASSISTANT:
            items.extend(_assistant_items(message, stored, unreadable))
        elif role is MessageRole.TOOL:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content,
                }
            )
        else:
            items.append({"role": role.value, "content": _user_content(message)})
    return items


def reasoning_ids(items: list[dict[str, Any]]) -> list[str]:
    """The ids of the reasoning items among ``items`` that carry encrypted content."""
    return [
        item["id"]
        for item in items
        if item.get("type") == "reasoning" and item.get("encrypted_content") is not None
    ]


def strict_schema(schema: Any) -> bool:
    """Whether ``schema`` meets strict mode's rules (every object closed with
    ``additionalProperties: false`` and every property required), so the tool can be strict."""
    if isinstance(schema, list):
        return all(strict_schema(entry) for entry in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return False
        names = set(properties or {})
        if set(schema.get("required") or ()) != names:
            return False
    return all(strict_schema(value) for value in schema.values())


def _tool(entry: Any) -> Any:
    """A Responses ``tools`` entry for a chat-completions one (others pass through: a hosted
    tool, or one already in the Responses shape)."""
    if not isinstance(entry, dict) or entry.get("type") != "function" or "function" not in entry:
        return entry
    function = entry["function"]
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    out: dict[str, Any] = {"type": "function", "name": function["name"]}
    if function.get("description"):
        out["description"] = function["description"]
    out["parameters"] = parameters
    strict = function.get("strict")
    # the API takes a function as strict unless told otherwise, and refuses a strict one whose
    # schema breaks strict mode's rules: say which it is
    out["strict"] = bool(strict) if strict is not None else strict_schema(parameters)
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function" and "function" in choice:
        return {"type": "function", "name": choice["function"]["name"]}
    return choice


def _text_format(response_format: Any) -> dict[str, Any] | None:
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        out: dict[str, Any] = {
            "type": "json_schema",
            "name": spec.get("name") or "answer",
            "schema": spec.get("schema") or {},
        }
        if spec.get("description"):
            out["description"] = spec["description"]
        if "strict" in spec:
            out["strict"] = spec["strict"]
        return out
    if kind == "json_object":
        return {"type": "json_object"}
    if kind in (None, "text"):
        return None
    raise RequestRejected(
        f"The Responses API has no response_format {kind!r}: use a json_schema or json_object "
        "response_format, or none.",
        status=None,
        server_message="",
        rejected_fields=("response_format.type",),
    )


def translate_options(options: dict[str, Any]) -> dict[str, Any]:
    """Request options in the chat-completions shape, as Responses fields (others pass
    through): ``max_tokens`` / ``max_completion_tokens`` -> ``max_output_tokens``, function
    tools flattened, ``response_format`` -> ``text.format``. ``stop`` has no Responses field
    and is dropped (a text protocol such as ReACT reads up to its stop word anyway)."""
    out = dict(options)
    for name in ("max_completion_tokens", "max_tokens"):
        if name in out:
            out["max_output_tokens"] = out.pop(name)
    out.pop("stop", None)
    if "tools" in out:
        out["tools"] = [_tool(entry) for entry in out["tools"]]
    if "tool_choice" in out:
        out["tool_choice"] = _tool_choice(out["tool_choice"])
    if "response_format" in out:
        text_format = _text_format(out.pop("response_format"))
        if text_format is not None:
            out["text"] = {**(out.get("text") or {}), "format": text_format}
    return out


# --- replies ----------------------------------------------------------------------------------


def _count(data: dict[str, Any], key: str, where: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedReply(f"{where}{key} is {value!r}, expected a token count")
    return value


def _object(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedReply(f"{where}{key} is {type(value).__name__}, expected an object")
    return value


def usage_from_responses(data: Any) -> Usage | None:
    """`Usage` for a Responses usage object: ``input_tokens`` (cached ones included, as
    ``cached_tokens``), ``output_tokens`` (reasoning ones included, as ``reasoning_tokens``)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise MalformedReply(f"usage is {type(data).__name__}, expected an object")
    where = "usage."
    prompt = _count(data, "input_tokens", where)
    completion = _count(data, "output_tokens", where)
    total = _count(data, "total_tokens", where) or prompt + completion
    inputs = _object(data, "input_tokens_details", where)
    outputs = _object(data, "output_tokens_details", where)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        cached_tokens=_count(inputs, "cached_tokens", f"{where}input_tokens_details."),
        cache_write_tokens=_count(inputs, "cache_write_tokens", f"{where}input_tokens_details."),
        reasoning_tokens=_count(outputs, "reasoning_tokens", f"{where}output_tokens_details."),
    )


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReply(f"{where} is {type(value).__name__}, expected a string")
    return value


def summary_text(item: dict[str, Any], where: str) -> str:
    """A reasoning item's summary parts, joined by blank lines."""
    summary = item.get("summary") or []
    if not isinstance(summary, list):
        raise MalformedReply(f"{where}.summary is {type(summary).__name__}, expected a list")
    texts = [
        _text(part.get("text"), f"{where}.summary[{i}].text")
        for i, part in enumerate(summary)
        if isinstance(part, dict)
    ]
    return "\n\n".join(text for text in texts if text)


def reasoning_block(item: dict[str, Any], where: str) -> ThinkingBlock:
    """The `ThinkingBlock` that keeps a reasoning item for the next request."""
    encrypted = item.get("encrypted_content")
    return ThinkingBlock(
        provider=PROVIDER,
        id=_text(item.get("id"), f"{where}.id") or None,
        text=summary_text(item, where),
        redacted=_text(encrypted, f"{where}.encrypted_content") if encrypted is not None else None,
    )


def compaction_item(item: dict[str, Any], where: str) -> dict[str, Any]:
    """A ``compaction`` item the server made of the request's input (server-side compaction),
    kept as it came: it goes back in later requests in place of what it replaced."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content:
        raise MalformedReply(f"{where}.encrypted_content is missing, expected the compaction")
    kept = {"type": "compaction", "encrypted_content": content}
    if isinstance(item.get("id"), str):
        kept["id"] = item["id"]
    return kept


def _compactions(message: Message) -> list[dict[str, Any]]:
    return [e for e in message.context_edits or () if e.get("type") == "compaction"]


def hosted_call(item: dict[str, Any]) -> HostedToolCall:
    """A `HostedToolCall` for an item of a tool the server ran (``web_search_call``...)."""
    kind = str(item.get("type"))
    call_id = item.get("id")
    status = item.get("status")
    return HostedToolCall(
        provider=PROVIDER,
        type=kind,
        id=call_id if isinstance(call_id, str) else None,
        status=status if isinstance(status, str) else None,
        name=kind.removesuffix("_call"),
        item=item,
    )


def message_text(item: dict[str, Any], where: str) -> tuple[str, str]:
    """A ``message`` item's text and refusal."""
    content = item.get("content") or []
    if not isinstance(content, list):
        raise MalformedReply(f"{where}.content is {type(content).__name__}, expected a list")
    text: list[str] = []
    refusal: list[str] = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise MalformedReply(f"{where}.content[{i}] is not an object")
        if part.get("type") == "refusal":
            refusal.append(_text(part.get("refusal"), f"{where}.content[{i}].refusal"))
        else:
            text.append(_text(part.get("text"), f"{where}.content[{i}].text"))
    return "".join(text), "".join(refusal)


def function_call(item: dict[str, Any], where: str) -> ToolRequest:
    name = _text(item.get("name"), f"{where}.name")
    if not name:
        raise MalformedReply(f"{where}.name is missing, expected the function's name")
    return ToolRequest(
        id=_text(item.get("call_id"), f"{where}.call_id") or None,
        function=ToolFunction(name=name, arguments=_text(item.get("arguments"), where) or "{}"),
    )


def read_output(data: dict[str, Any]) -> Message:
    """The assistant `Message` a response object's ``output`` holds (no end checks)."""
    output = data.get("output")
    if not isinstance(output, list):
        state = "missing" if "output" not in data else type(output).__name__
        raise MalformedReply(f"output is {state}, expected a list of items")
    text: list[str] = []
    refusals: list[str] = []
    calls: list[ToolRequest] = []
    thinking: list[ThinkingBlock] = []
    hosted: list[HostedToolCall] = []
    compactions: list[dict[str, Any]] = []
    for i, item in enumerate(output):
        where = f"output[{i}]"
        if not isinstance(item, dict):
            raise MalformedReply(f"{where} is {type(item).__name__}, expected an item object")
        kind = item.get("type")
        if kind == "reasoning":
            thinking.append(reasoning_block(item, where))
        elif kind == "message":
            said, refused = message_text(item, where)
            text.append(said)
            refusals.append(refused)
        elif kind == "function_call":
            calls.append(function_call(item, where))
        elif kind == "compaction":
            compactions.append(compaction_item(item, where))
        elif isinstance(kind, str) and kind.endswith("_call"):
            hosted.append(hosted_call(item))
    content = "".join(text)
    if not content.strip() and not calls:
        content = "".join(refusals)  # the model declined: its refusal is its answer
    reasoning = "\n\n".join(block.text for block in thinking if block.text)
    response_id = data.get("id")
    model = data.get("model")
    return Message(
        role=MessageRole.ASSISTANT,
        content=content,
        tool_calls=calls or None,
        reasoning=reasoning or None,
        thinking=thinking or None,
        hosted_calls=hosted or None,
        usage=usage_from_responses(data.get("usage")),
        finish_reason="tool_calls" if calls else "stop",
        model_name=model if isinstance(model, str) and model else None,
        response_id=response_id if isinstance(response_id, str) and response_id else None,
        context_edits=compactions or None,
    )
