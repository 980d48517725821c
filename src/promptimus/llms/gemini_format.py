"""Translate between promptimus messages and the Gemini API's ``generateContent`` JSON.

Requests: system messages become ``systemInstruction``, user and tool messages ``user``
contents (a tool result is a ``functionResponse`` part, consecutive results share one content),
assistant messages ``model`` contents. What a reply left for the next request goes back on its
part: a function call's thought signature (``ToolRequest.extra_content["google"]``) on its
``functionCall`` part, a thought part's signature on that thought part, and a signature that
came on an answer's text on its text part (both kept in ``Message.thinking`` as
``ThinkingBlock(provider="gemini")``; thought blocks carry their text, answer-text ones none).

Replies: thought parts are the ``reasoning``, text parts the ``content``, ``functionCall``
parts tool calls (their arguments as JSON text). ``usageMetadata`` maps onto `Usage` as OpenAI
counts: every input token is a prompt token, thoughts are completion tokens too
(``reasoning_tokens`` says how many), ``cachedContentTokenCount`` the cached ones.
"""

from __future__ import annotations

import itertools
import json
import mimetypes
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
from promptimus.errors import EmptyReply, ErrorInReply, MalformedReply, UnknownRequestOption
from promptimus.llms.option_shapes import json_schema_of, object_option, text_list_option
from promptimus.llms.server_said import said_by_server

__all__ = [
    "PROVIDER",
    "chunk_to_delta",
    "messages_to_gemini",
    "request_body",
    "response_to_message",
    "signature_of",
    "usage_from_gemini",
]

PROVIDER = "gemini"
"""`ThinkingBlock.provider` of the blocks this provider writes and sends back."""

_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}

_CALL_IDS = itertools.count(1)


# --- requests --------------------------------------------------------------------------------


def signature_of(call: ToolRequest) -> str | None:
    """The thought signature a Gemini function call came with (None if it had none)."""
    extra = call.extra_content
    google = extra.get("google") if extra else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) else None


def _media_part(url: str) -> dict[str, Any]:
    """An image as ``inlineData`` (a ``data:`` URL) or ``fileData`` (any other URL)."""
    if url.startswith("data:"):
        head, _, data = url[5:].partition(",")
        mime = head.split(";", 1)[0] or "application/octet-stream"
        return {"inlineData": {"mimeType": mime, "data": data}}
    mime = mimetypes.guess_type(url.split("?", 1)[0])[0] or "image/jpeg"
    return {"fileData": {"mimeType": mime, "fileUri": url}}


def _user_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.content or not (message.images or message.documents):
        parts.append({"text": message.content})
    parts.extend(_media_part(image.url) for image in message.images)
    parts.extend(
        {"inlineData": {"mimeType": doc.media_type, "data": doc.data}} for doc in message.documents
    )
    return parts


def _model_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    answer_signature: str | None = None
    for block in message.thinking or ():
        if block.provider != PROVIDER:
            continue
        if block.text:
            part: dict[str, Any] = {"text": block.text, "thought": True}
            if block.signature:
                part["thoughtSignature"] = block.signature
            parts.append(part)
        elif block.signature and answer_signature is None:
            answer_signature = block.signature
    if message.content or answer_signature is not None:
        text: dict[str, Any] = {"text": message.content}
        if answer_signature is not None:
            text["thoughtSignature"] = answer_signature
        parts.append(text)
    for call in message.tool_calls or ():
        function: dict[str, Any] = {"name": call.function.name, "args": _args(call)}
        if call.id:
            function["id"] = call.id
        part = {"functionCall": function}
        signature = signature_of(call)
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    if not parts:
        parts.append({"text": ""})
    return parts


def _args(call: ToolRequest) -> Any:
    """A call's arguments as the object the model sent (an object, whatever the text holds)."""
    try:
        value = json.loads(call.function.arguments or "{}")
    except ValueError:
        return {"arguments": call.function.arguments}
    return value if isinstance(value, dict) else {"value": value}


def _tool_result(message: Message, names: dict[str, str]) -> list[dict[str, Any]]:
    name = names.get(message.tool_call_id or "", "tool")
    response: dict[str, Any] = {"name": name, "response": {"output": message.content}}
    if message.tool_call_id:
        response["id"] = message.tool_call_id
    parts: list[dict[str, Any]] = [{"functionResponse": response}]
    parts.extend(_media_part(image.url) for image in message.images)
    return parts


def messages_to_gemini(
    history: list[Message],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(systemInstruction, contents)`` for ``history``."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> function name, for the results
    for message in history:
        role = message.role
        if role == MessageRole.SYSTEM:
            system.append({"text": message.content})
        elif role == MessageRole.ASSISTANT:
            for call in message.tool_calls or ():
                if call.id:
                    names[call.id] = call.function.name
            contents.append({"role": "model", "parts": _model_parts(message)})
        elif role == MessageRole.TOOL:
            parts = _tool_result(message, names)
            last = contents[-1] if contents else None
            if last is not None and last.get("_results"):
                last["parts"].extend(parts)
            else:
                contents.append({"role": "user", "parts": parts, "_results": True})
        else:
            contents.append({"role": "user", "parts": _user_parts(message)})
    for content in contents:
        content.pop("_results", None)
    return ({"parts": system} if system else None), contents


def _response_format(value: Any) -> dict[str, Any]:
    """The ``generationConfig`` fields for an OpenAI-style ``response_format``: a JSON schema
    through ``responseJsonSchema``, JSON mode (``json_object``) through the MIME type alone."""
    kind, schema = json_schema_of(value, "Gemini", schema_required=False)
    if kind == "json_schema":
        config: dict[str, Any] = {"responseMimeType": "application/json"}
        if schema is not None:
            config["responseJsonSchema"] = schema
        return config
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    return {}


def _tools(tools: Any) -> list[dict[str, Any]]:
    declarations = []
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or "name" not in function:
            raise UnknownRequestOption(
                f"Gemini takes function tools ({{'type': 'function', 'function': {{'name': ..., "
                f"'parameters': ...}}}}); got {tool!r}."
            )
        declaration: dict[str, Any] = {"name": function["name"]}
        if function.get("description"):
            declaration["description"] = function["description"]
        if function.get("parameters") is not None:
            declaration["parametersJsonSchema"] = function["parameters"]
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}] if declarations else []


def _tool_config(choice: Any) -> dict[str, Any]:
    if isinstance(choice, dict):
        name = choice.get("function", {}).get("name")
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}.get(str(choice))
    if mode is None:
        raise UnknownRequestOption(
            f"tool_choice {choice!r} is not one of 'auto', 'none', 'required' or "
            "{'type': 'function', 'function': {'name': ...}}."
        )
    return {"functionCallingConfig": {"mode": mode}}


_GENERATION_OPTIONS = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "candidate_count": "candidateCount",
}
_KNOWN_OPTIONS = frozenset(
    {
        *_GENERATION_OPTIONS,
        "stop",
        "response_format",
        "tools",
        "tool_choice",
        "thinking",
        "generation_config",
        "safety_settings",
        "extra_body",
        "parallel_tool_calls",
    }
)


def request_body(
    history: list[Message], options: dict[str, Any], thinking: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``generateContent`` body for ``history`` with the request ``options`` (OpenAI-style
    names: ``temperature``, ``max_tokens``, ``stop``, ``tools``, ``tool_choice``,
    ``response_format``...; ``generation_config`` and ``extra_body`` merge in verbatim)."""
    unknown = sorted(set(options) - _KNOWN_OPTIONS)
    if unknown:
        raise UnknownRequestOption(
            f"Gemini got request option(s) it does not know: {', '.join(unknown)}. It takes "
            f"{', '.join(sorted(_KNOWN_OPTIONS))}; pass other generationConfig fields in "
            "generation_config={...} and other request fields in extra_body={...}."
        )
    system, contents = messages_to_gemini(history)
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = system
    config: dict[str, Any] = {}
    for name, field in _GENERATION_OPTIONS.items():
        if options.get(name) is not None:
            config[field] = options[name]
    stop = options.get("stop")
    if stop is not None:
        config["stopSequences"] = text_list_option(stop, "stop", "Gemini")
    config.update(_response_format(options.get("response_format")))
    thinking = options.get("thinking", thinking)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    config.update(object_option(options, "generation_config", "Gemini"))
    if config:
        body["generationConfig"] = config
    tools = _tools(options.get("tools"))
    if tools:
        body["tools"] = tools
        if options.get("tool_choice") is not None:
            body["toolConfig"] = _tool_config(options["tool_choice"])
    if options.get("safety_settings") is not None:
        body["safetySettings"] = options["safety_settings"]
    body.update(object_option(options, "extra_body", "Gemini"))
    return body


# --- replies ---------------------------------------------------------------------------------


def _count(data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, str) and value.isascii() and value.isdigit():  # int64 as a string
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedReply(f"usageMetadata.{key} is {value!r}, expected a token count")
    return value


def usage_from_gemini(metadata: Any) -> Usage | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise MalformedReply(f"usageMetadata is {type(metadata).__name__}, expected an object")
    prompt = _count(metadata, "promptTokenCount") + _count(metadata, "toolUsePromptTokenCount")
    thoughts = _count(metadata, "thoughtsTokenCount")
    completion = _count(metadata, "candidatesTokenCount") + thoughts
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=_count(metadata, "totalTokenCount") or prompt + completion,
        cached_tokens=_count(metadata, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _candidate(data: Any, where: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The first candidate and its parts (None and [] when the reply has no candidate)."""
    if not isinstance(data, dict):
        raise MalformedReply(f"{where} is {type(data).__name__}, expected a JSON object")
    candidates = data.get("candidates")
    if candidates is None and data.get("error") is not None:
        raise ErrorInReply(said_by_server(data["error"]))
    if candidates is None:
        return None, []
    if not isinstance(candidates, list):
        raise MalformedReply(f"{where}'s candidates is not a list")
    if not candidates:
        return None, []
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise MalformedReply(f"{where}'s candidates[0] is not an object")
    content = candidate.get("content") or {}
    parts = content.get("parts") if isinstance(content, dict) else None
    if parts is None:
        return candidate, []
    if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
        raise MalformedReply(f"{where}'s candidates[0].content.parts is not a list of objects")
    return candidate, parts


def _finish_reason(candidate: dict[str, Any] | None, has_calls: bool) -> str | None:
    reason = candidate.get("finishReason") if candidate else None
    if not isinstance(reason, str) or reason == "FINISH_REASON_UNSPECIFIED":
        return None
    if reason == "STOP" and has_calls:
        return "tool_calls"
    return _FINISH_REASONS.get(reason, reason.lower())


def _call(part: dict[str, Any]) -> tuple[str | None, str, str, dict[str, Any] | None]:
    """``(id, name, arguments JSON, extra_content)`` of a ``functionCall`` part."""
    function = part["functionCall"]
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise MalformedReply("a functionCall part has no name")
    call_id = function.get("id")
    args = function.get("args")
    arguments = json.dumps(args if args is not None else {}, ensure_ascii=False)
    signature = part.get("thoughtSignature")
    extra = {"google": {"thought_signature": signature}} if isinstance(signature, str) else None
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{next(_CALL_IDS)}"  # Gemini 2 sends none: results find theirs by it
    return call_id, function["name"], arguments, extra


def _block(part: dict[str, Any]) -> ThinkingBlock | None:
    """The thinking block a text part leaves for the next request (its signature), if any."""
    signature = part.get("thoughtSignature")
    if not isinstance(signature, str):
        return None
    text = part.get("text") if part.get("thought") else ""
    return ThinkingBlock(provider=PROVIDER, text=text or "", signature=signature)


def _model_name(data: dict[str, Any]) -> str | None:
    name = data.get("modelVersion")
    return name if isinstance(name, str) and name else None


def response_to_message(data: Any) -> Message:
    """The assistant `Message` of a ``generateContent`` reply. ``EmptyReply`` for a reply with
    neither text nor a function call (a blocked prompt included), ``MalformedReply`` for one
    that does not fit the API's shape."""
    candidate, parts = _candidate(data, "the body")
    text: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolRequest] = []
    thinking: list[ThinkingBlock] = []
    for part in parts:
        if "functionCall" in part:
            call_id, name, arguments, extra = _call(part)
            function = ToolFunction(name=name, arguments=arguments)
            calls.append(ToolRequest(id=call_id, function=function, extra_content=extra))
            continue
        block = _block(part)
        if block is not None:
            thinking.append(block)
        value = part.get("text")
        if isinstance(value, str):
            (thoughts if part.get("thought") else text).append(value)
    content = "".join(text)
    finish_reason = _finish_reason(candidate, bool(calls))
    if not content.strip() and not calls:
        feedback = data.get("promptFeedback") if candidate is None else None
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        problem = f"the prompt was blocked ({blocked})" if blocked else "the reply holds nothing"
        raise EmptyReply(problem, finish_reason=finish_reason)
    return Message(
        role=MessageRole.ASSISTANT,
        content=content,
        tool_calls=calls or None,
        reasoning="".join(thoughts) or None,
        thinking=thinking or None,
        usage=usage_from_gemini(data.get("usageMetadata")),
        finish_reason=finish_reason,
        model_name=_model_name(data),
    )


def chunk_to_delta(data: Any, calls_so_far: int) -> MessageDelta:
    """One ``streamGenerateContent`` event as a `MessageDelta`; its function calls are numbered
    from ``calls_so_far`` (each arrives whole, in one part)."""
    candidate, parts = _candidate(data, "a stream chunk")
    text: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCallDelta] = []
    thinking: list[ThinkingBlock] = []
    for part in parts:
        if "functionCall" in part:
            call_id, name, arguments, extra = _call(part)
            index = calls_so_far + len(calls)
            calls.append(
                ToolCallDelta(
                    index=index, id=call_id, name=name, arguments=arguments, extra_content=extra
                )
            )
            continue
        block = _block(part)
        if block is not None:
            thinking.append(block)
        value = part.get("text")
        if isinstance(value, str) and value:
            (thoughts if part.get("thought") else text).append(value)
    return MessageDelta(
        content="".join(text) or None,
        reasoning="".join(thoughts) or None,
        thinking=thinking,
        tool_calls=calls,
        usage=usage_from_gemini(data.get("usageMetadata")),
        finish_reason=_finish_reason(candidate, bool(calls or calls_so_far)),
        model_name=_model_name(data),
    )
