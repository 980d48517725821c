"""Translate between promptimus messages and the OpenAI chat-completions wire format.

Only API fields are sent: ``usage``, ``reasoning``, ``finish_reason``, ``model_name`` are reply
metadata and never go back to the server; content is a plain string unless the message carries
images, and is left out of an assistant message that only calls tools.

Replies are read from their JSON form (the SDK builds its objects without validating them, so a
field may hold anything the server sent) and checked on the way: a reply that is not an object,
lacks its ``choices``, or holds a field of the wrong type raises ``MalformedReply`` naming the
field, and a reply with no text, no tool call and no refusal raises ``EmptyReply``.
"""

from __future__ import annotations

import json
from typing import Any

from promptimus.dto import (
    DocumentContent,
    Message,
    MessageDelta,
    MessageRole,
    ToolCallDelta,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.errors import EmptyReply, ErrorInReply, MalformedReply
from promptimus.llms.server_said import said_by_server


def message_to_openai(message: Message, empty_content: bool = False) -> dict[str, Any]:
    """One message in the wire format. An assistant message that only calls tools carries no
    `content`, unless `empty_content` (``""``, for servers that demand the key: see
    `OpenAILike`)."""
    out: dict[str, Any] = {"role": message.role.value}
    text = message.content
    if message.documents:
        text = "\n\n".join([*filter(None, [text]), *map(document_placeholder, message.documents)])
    if message.images:
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "text", "text": text})
        for image in message.images:
            url: dict[str, Any] = {"url": image.url}
            if image.detail is not None:
                url["detail"] = image.detail
            parts.append({"type": "image_url", "image_url": url})
        out["content"] = parts
    elif not (message.tool_calls and not text):
        out["content"] = text
    elif empty_content:
        # "" rather than null: llama-cpp-python's chat templates refuse null as they refuse a
        # missing key, and every server that takes either takes an empty string
        out["content"] = ""
    # Without `content` at all: the OpenAI API, vLLM, Ollama and current llama.cpp take it so,
    # and the SDK's request transform spends ~0.1 ms on every `"content": None` it is given,
    # each time the history is resent.
    if message.tool_calls:
        out["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def _tool_call(call: ToolRequest) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "type": call.type,
        "function": {"name": call.function.name, "arguments": call.function.arguments},
    }
    if call.extra_content is not None:  # what the server attached to it (a thought signature)
        out["extra_content"] = call.extra_content
    return out


def document_placeholder(document: DocumentContent) -> str:
    """The text that stands for an attached document on an API that takes none: what it was,
    so the model knows something was attached that it cannot read."""
    name = f" {document.name!r}" if document.name else ""
    size = len(document.data) * 3 // 4
    return (
        f"[Attached document{name} ({document.media_type}, about {size} bytes): this model "
        "cannot read attached documents, so its content is not included.]"
    )


def messages_to_openai(history: list[Message], empty_content: bool = False) -> list[dict[str, Any]]:
    return [message_to_openai(message, empty_content) for message in history]


def demands_content(error: BaseException, sent: list[dict[str, Any]]) -> bool:
    """Whether `error` is a server refusing an assistant message sent without `content`, as
    one of `sent` was: llama.cpp builds from before spring 2025 ("Expected 'content'") and
    llama-cpp-python's chat templates (HTTP 500 "'dict object' has no attribute 'content'")."""
    said = str(error)
    return any(words in said for words in _CONTENT_DEMANDS) and any(
        m["role"] == "assistant" and m.get("content") is None for m in sent
    )


_CONTENT_DEMANDS = ("Expected 'content'", "'dict object' has no attribute 'content'")


def _data(obj: Any, what: str) -> dict[str, Any]:
    """The JSON object the SDK read (its objects keep every field as the server sent it)."""
    if isinstance(obj, dict):
        return obj
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict) and hasattr(type(obj), "model_fields"):
        data = to_dict(warnings=False)
        if isinstance(data, dict):
            return data
    raise MalformedReply(f"{what} is {_shown(obj)}, not a JSON object")


def _shown(value: Any) -> str:
    """A short description of a value that should have been something else."""
    if value is None:
        return "null"
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return "empty text"
        excerpt = text if len(text) <= 60 else text[:57] + "..."
        return f"text ({excerpt!r})"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, list):
        return f"a JSON list of {len(value)} item(s)"
    if isinstance(value, dict):
        return "a JSON object"
    return type(value).__name__


_KINDS: dict[type, str] = {str: "a string", int: "an integer", dict: "an object", list: "a list"}


def _field(
    data: dict[str, Any], key: str, kind: type, where: str, *, required: bool = False
) -> Any:
    """``data[key]`` if it is a ``kind`` (None if absent or null, unless ``required``)."""
    value = data.get(key)
    if value is None:
        if required:
            state = "null" if key in data else "missing"
            raise MalformedReply(f"{where}{key} is {state}, expected {_KINDS[kind]}")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedReply(f"{where}{key} is {_shown(value)}, expected {_KINDS[kind]}")
    return value


def _reasoning(data: dict[str, Any]) -> str | None:
    for name in ("reasoning_content", "reasoning"):
        value = data.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _count(data: dict[str, Any], key: str, where: str) -> int:
    """A token count: an integer, or what pydantic would read as one (``12.0``, ``"12"``)."""
    value = data.get(key)
    if value is None:
        return 0
    if (isinstance(value, float) and value.is_integer()) or (
        isinstance(value, str) and value.strip().isdigit()
    ):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedReply(f"{where}{key} is {_shown(value)}, expected a token count")
    return value


def usage_from_openai(usage: Any, where: str = "") -> Usage | None:
    if usage is None:
        return None
    data = usage if isinstance(usage, dict) else _data(usage, f"{where}usage")
    place = f"{where}usage."
    prompt_details = _field(data, "prompt_tokens_details", dict, place) or {}
    completion_details = _field(data, "completion_tokens_details", dict, place) or {}
    return Usage(
        prompt_tokens=_count(data, "prompt_tokens", place),
        completion_tokens=_count(data, "completion_tokens", place),
        total_tokens=_count(data, "total_tokens", place),
        cached_tokens=_count(prompt_details, "cached_tokens", f"{place}prompt_tokens_details."),
        reasoning_tokens=_count(
            completion_details, "reasoning_tokens", f"{place}completion_tokens_details."
        ),
    )


def _arguments(function: dict[str, Any], where: str) -> str:
    arguments = function.get("arguments")
    if arguments is None:
        return "{}"
    if isinstance(arguments, dict):  # some servers send the object itself
        return json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise MalformedReply(f"{where}arguments is {_shown(arguments)}, expected a string")
    return arguments or "{}"


def _tool_request(call: Any, where: str) -> ToolRequest:
    if not isinstance(call, dict):
        raise MalformedReply(f"{where} is {_shown(call)}, expected a tool call object")
    kind = _field(call, "type", str, f"{where}.") or "function"
    custom = call.get("custom") if "function" not in call else None
    if isinstance(custom, dict):  # "custom" tool calls carry free-form input
        name = _field(custom, "name", str, f"{where}.custom.", required=True)
        arguments = _field(custom, "input", str, f"{where}.custom.") or ""
    else:
        function = _field(call, "function", dict, f"{where}.", required=True)
        name = _field(function, "name", str, f"{where}.function.", required=True)
        arguments = _arguments(function, f"{where}.function.")
    return ToolRequest(
        id=_field(call, "id", str, f"{where}."),
        type=kind,
        function=ToolFunction(name=name, arguments=arguments),
        extra_content=_field(call, "extra_content", dict, f"{where}."),
    )


def _tool_calls(data: dict[str, Any], where: str) -> list[Any]:
    calls = _field(data, "tool_calls", list, where)
    return calls or []


def completion_to_message(completion: Any) -> Message:
    """Map a ``ChatCompletion`` to an assistant ``Message`` (first choice).

    Raises ``MalformedReply`` naming what is missing or wrongly typed, and ``EmptyReply`` for a
    reply with no text, no tool call and no refusal (a refusal becomes the message's text)."""
    data = _data(completion, "the body")
    choices = data.get("choices")
    if choices is None and data.get("error"):
        raise ErrorInReply(said_by_server(data["error"]))
    if not isinstance(choices, list):
        state = "missing" if "choices" not in data else _shown(choices)
        raise MalformedReply(f"choices is {state}, expected a list of choices")
    if not choices:
        raise MalformedReply("choices is an empty list: the server sent no completion")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedReply(f"choices[0] is {_shown(choice)}, expected an object")
    message = _field(choice, "message", dict, "choices[0].", required=True)
    where = "choices[0].message."
    finish_reason = _field(choice, "finish_reason", str, "choices[0].")
    content = _field(message, "content", str, where) or ""
    refusal = _field(message, "refusal", str, where)
    calls = [
        _tool_request(call, f"{where}tool_calls[{i}]")
        for i, call in enumerate(_tool_calls(message, where))
    ]
    usage = usage_from_openai(data.get("usage"))
    if not content.strip() and not calls:
        if not (refusal and refusal.strip()):
            raise EmptyReply("the message holds nothing", finish_reason=finish_reason)
        content = refusal  # the model declined: its refusal is its answer
    return Message(
        role=MessageRole.ASSISTANT,
        content=content,
        tool_calls=calls or None,
        reasoning=_reasoning(message),
        usage=usage,
        finish_reason=finish_reason,
        model_name=_model_name(data),
    )


def _model_name(data: dict[str, Any]) -> str | None:
    """The model the server says produced the reply (None if it did not say)."""
    model = data.get("model")
    return model if isinstance(model, str) and model else None


def chunk_to_delta(chunk: Any) -> MessageDelta:
    """Map one ``ChatCompletionChunk`` to a ``MessageDelta`` (first choice).

    A chunk must be an object whose ``choices`` is a list; a chunk without choices is accepted
    only when it carries ``usage`` (the last chunk of a stream). A missing or null ``delta`` is
    an empty one (Azure sends content-filter chunks without it). ``MalformedReply`` otherwise."""
    data = _data(chunk, "a stream chunk")
    usage = usage_from_openai(data.get("usage"), "chunk ")
    choices = data.get("choices")
    if choices is None and usage is None:
        state = "null" if "choices" in data else "missing"
        raise MalformedReply(f"a stream chunk's choices is {state} and it carries no usage")
    if choices is not None and not isinstance(choices, list):
        raise MalformedReply(f"a stream chunk's choices is {_shown(choices)}, expected a list")
    if not choices:
        return MessageDelta(usage=usage, model_name=_model_name(data))
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedReply(f"a stream chunk's choices[0] is {_shown(choice)}, expected an object")
    where = "chunk choices[0].delta."
    delta = _field(choice, "delta", dict, "chunk choices[0].") or {}
    fragments = []
    for i, call in enumerate(_tool_calls(delta, where)):
        place = f"{where}tool_calls[{i}]"
        if not isinstance(call, dict):
            raise MalformedReply(f"{place} is {_shown(call)}, expected a tool call object")
        index = _field(call, "index", int, f"{place}.")
        function = _field(call, "function", dict, f"{place}.") or {}
        arguments = function.get("arguments")
        fragments.append(
            ToolCallDelta(
                index=index if index is not None else i,
                id=_field(call, "id", str, f"{place}."),
                name=_field(function, "name", str, f"{place}.function."),
                arguments=_arguments(function, f"{place}.function.") if arguments else "",
                extra_content=_field(call, "extra_content", dict, f"{place}."),
            )
        )
    content = _field(delta, "content", str, where)
    if content is None:  # a streamed refusal is the answer's text, as in a plain reply
        content = _field(delta, "refusal", str, where)
    return MessageDelta(
        content=content,
        reasoning=_reasoning(delta),
        tool_calls=fragments,
        usage=usage,
        finish_reason=_field(choice, "finish_reason", str, "chunk choices[0]."),
        model_name=_model_name(data),
    )
