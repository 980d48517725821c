"""The OpenAI-compatible face: `POST /v1/chat/completions` (plain, and `stream: true` as
server-sent events) and `GET /v1/models`, in the shapes the `openai` SDK parses.

The module runs here with its own tools; the reply is its answer (structured output as JSON
text). The conversation is named by the `X-Session-Id` header or the `user` field, scoped by the
caller: the server then keeps the history and takes only the new user messages (those after the
last assistant message). Without a name each request is a conversation of its own, built from
the messages it sends.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..agents.base_agent import BaseAgent
from ..agents.events import (
    AgentEvent,
    FinalResult,
    GuardrailEvent,
    NeedsApproval,
    TextDelta,
    ToolCallEvent,
)
from ..dto import Message, MessageRole, Usage
from ..errors import GuardrailTripped, PromptimusError
from .refusal import Refused
from .served import Served
from .served_run import ClientGone, ServedRun
from .served_text import served_text

__all__ = ["openai_routes"]

log = logging.getLogger("promptimus.serve")

_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}


def _error_type(refused: Refused) -> str:
    kind = _ERROR_TYPES.get(refused.status)
    if kind is None:
        kind = "invalid_request_error" if refused.status < 500 else "server_error"
    return kind


def error_response(refused: Refused) -> JSONResponse:
    body = {
        "error": {
            "message": refused.message,
            "type": _error_type(refused),
            "param": None,
            "code": refused.code,
        }
    }
    return JSONResponse(body, refused.status, headers=refused.headers)


def run_failure(exc: BaseException) -> Refused:
    """What a failed run tells the client: a guardrail's block as 400, anything else as 500
    naming the error, never a traceback (that goes to the server's log)."""
    if isinstance(exc, GuardrailTripped):
        return Refused(400, f"A guardrail blocked the request: {exc}", "guardrail_blocked")
    if isinstance(exc, PromptimusError):
        return Refused(500, f"The run failed: {type(exc).__name__}: {exc}", "run_failed")
    log.error("the served run failed", exc_info=exc)
    return Refused(
        500, f"The run failed ({type(exc).__name__}); see the server's log.", "run_failed"
    )


def paused_refusal() -> Refused:
    return Refused(
        409,
        "The run paused: a tool call needs a person's approval, which this endpoint cannot ask "
        "for. Use the AG-UI endpoint (POST /ag-ui) or the chat page to approve it.",
        "approval_required",
    )


@dataclass
class _ChatRequest:
    messages: list[Message]
    stream: bool
    include_usage: bool
    conversation: str | None


def _text_of(content: Any, index: int) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise Refused(
                    400,
                    f"messages[{index}].content: only text parts are supported here.",
                    "invalid_content",
                )
            text = part.get("text")
            if not isinstance(text, str):
                raise Refused(400, f"messages[{index}]: a text part needs text.", "invalid_content")
            parts.append(text)
        return "".join(parts)
    raise Refused(
        400, f"messages[{index}].content must be text or a list of parts.", "invalid_content"
    )


def _parse(body: Any, request: Request) -> _ChatRequest:
    if not isinstance(body, dict):
        raise Refused(400, "The body must be a JSON object.", "invalid_request")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise Refused(400, "messages must be a non-empty list.", "invalid_messages")
    messages: list[Message] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise Refused(400, f"messages[{index}] must be an object.", "invalid_messages")
        role = item.get("role")
        if role in ("system", "developer"):
            continue  # the served module has its own instructions
        if role == "tool":
            raise Refused(
                400,
                f"messages[{index}] is a tool result, but this server made no tool call for "
                "the client: the served module runs its own tools.",
                "invalid_tool_result",
            )
        if role not in ("user", "assistant"):
            raise Refused(
                400,
                f"messages[{index}].role {role!r} is not one of system, developer, user, "
                "assistant.",
                "invalid_role",
            )
        if role == "assistant" and item.get("tool_calls"):
            raise Refused(
                400,
                f"messages[{index}] holds tool calls this server never made.",
                "invalid_tool_call",
            )
        text = _text_of(item.get("content"), index)
        messages.append(
            Message(
                role=MessageRole.USER if role == "user" else MessageRole.ASSISTANT, content=text
            )
        )
    if not messages or messages[-1].role != MessageRole.USER:
        raise Refused(400, "The last message must be the user's.", "invalid_messages")
    stream = body.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise Refused(400, "stream must be true or false.", "invalid_stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise Refused(400, "stream_options must be an object.", "invalid_stream_options")
    conversation = request.headers.get("x-session-id") or body.get("user")
    if conversation is not None and not isinstance(conversation, str):
        raise Refused(400, "user must be text: it names the conversation.", "invalid_user")
    return _ChatRequest(
        messages, bool(stream), bool(options.get("include_usage")), conversation or None
    )


def _run_request(served: Served, chat: _ChatRequest) -> Any:
    """What the module is called with: the new user messages of a kept conversation, the whole
    exchange for a conversation of one request; the last user text for a module that is no
    agent."""
    if not isinstance(served.module, BaseAgent):
        return chat.messages[-1].content
    if chat.conversation is None:
        return chat.messages
    new: list[Message] = []
    for message in reversed(chat.messages):
        if message.role != MessageRole.USER:
            break
        new.insert(0, message)
    return new


def _usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def openai_routes(served: Served) -> list[Route]:
    async def completions(request: Request) -> Response:
        try:
            user = served.caller(request)
            chat = _parse(await served.body(request), request)
            session = served.session(user, chat.conversation)
            served.slots.take()
        except Refused as refused:
            return error_response(refused)
        run = ServedRun(served.module, _run_request(served, chat), session, served.slots)
        events = run.events(request)
        try:
            first = await _past_input_guardrails(events)
        except ClientGone:
            return Response(status_code=499)
        except StopAsyncIteration:
            return error_response(run_failure(RuntimeError("the run ended without an answer")))
        except Exception as exc:
            return error_response(run_failure(exc))
        if isinstance(first, NeedsApproval):
            await events.aclose()
            return error_response(paused_refusal())
        if chat.stream:
            return StreamingResponse(
                _sse(served, run, first, events, chat.include_usage),
                media_type="text/event-stream",
                headers={"cache-control": "no-store", "x-accel-buffering": "no"},
            )
        return await _whole(served, run, first, events)

    async def models(request: Request) -> Response:
        try:
            served.caller(request)
        except Refused as refused:
            return error_response(refused)
        model = {"id": served.name, "object": "model", "created": 0, "owned_by": "promptimus"}
        return JSONResponse({"object": "list", "data": [model]})

    return [
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ]


async def _past_input_guardrails(events: AsyncGenerator[AgentEvent, None]) -> AgentEvent:
    """The first event after the input guardrails decided, so a request they block is answered
    with its own status (400) instead of a stream that already said 200."""
    event = await anext(events)
    while isinstance(event, GuardrailEvent) and event.kind == "input":
        event = await anext(events)
    return event


async def _whole(
    served: Served, run: ServedRun, first: AgentEvent, events: AsyncGenerator[AgentEvent, None]
) -> Response:
    event: AgentEvent | None = first
    try:
        while not isinstance(event, FinalResult | NeedsApproval):
            event = await anext(events)
        async for _ in events:  # to the run's end, which counts its usage
            pass
    except ClientGone:
        return Response(status_code=499)
    except StopAsyncIteration:
        return error_response(run_failure(RuntimeError("the run ended without an answer")))
    except Exception as exc:
        return error_response(run_failure(exc))
    finally:
        await events.aclose()
    if isinstance(event, NeedsApproval):
        return error_response(paused_refusal())
    try:
        content = served_text(event.output)
    except Exception as exc:  # an answer no JSON can hold (one that refers to itself)
        return error_response(run_failure(exc))
    message = {"role": "assistant", "content": content, "refusal": None}
    return JSONResponse(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served.name,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
            ],
            "usage": _usage(run.usage),
        }
    )


async def _sse(
    served: Served,
    run: ServedRun,
    first: AgentEvent,
    events: AsyncGenerator[AgentEvent, None],
    include_usage: bool,
) -> AsyncIterator[bytes]:
    """The stream: a chunk per piece of the answer, the finishing chunk, usage when asked, then
    `[DONE]`; a run that fails sends an `error` object (the SDK raises it) and no `[DONE]`."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": served.name,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        data = {**base, "choices": [choice], **extra}
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

    step_text = ""
    event: AgentEvent = first
    try:
        yield chunk({"role": "assistant", "content": ""})
        while True:
            if isinstance(event, TextDelta):
                step_text += event.text
                yield chunk({"content": event.text})
            elif isinstance(event, ToolCallEvent):
                step_text = ""  # the answer is the text after the last tool call
            elif isinstance(event, NeedsApproval):
                yield _error_event(paused_refusal())
                return
            elif isinstance(event, FinalResult):
                answer = served_text(event.output)
                if not step_text:
                    yield chunk({"content": answer})
                elif answer.startswith(step_text) and answer != step_text:
                    yield chunk({"content": answer[len(step_text) :]})
                async for _ in events:  # to the run's end, which counts its usage
                    pass
                break
            event = await anext(events)
    except ClientGone:
        return
    except StopAsyncIteration:
        yield _error_event(run_failure(RuntimeError("the run ended without an answer")))
        return
    except Exception as exc:
        yield _error_event(run_failure(exc))
        return
    finally:
        await events.aclose()  # closed at any chunk, the first too: the run stops
    yield chunk({}, "stop")
    if include_usage:
        data = {**base, "choices": [], "usage": _usage(run.usage)}
        yield f"data: {json.dumps(data)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _error_event(refused: Refused) -> bytes:
    error = {"message": refused.message, "type": _error_type(refused), "code": refused.code}
    return f"data: {json.dumps({'error': error})}\n\n".encode()
