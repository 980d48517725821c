"""The A2A face: the served module as an A2A 1.0 agent (the protocol of March 2026), in the
JSON-RPC over HTTP binding, through the official a2a-sdk (1.3, which speaks 1.0; clients must
send the `A2A-Version: 1.0` header, as its client does).

- `GET /.well-known/agent-card.json`: the agent card (`promptimus.serve.a2a_card`).
- `POST /a2a`: JSON-RPC 2.0 — `SendMessage`, `SendStreamingMessage` (server-sent events),
  `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`.

The SDK's request handler, task store and JSON-RPC dispatcher do the protocol; this file puts
the server's own rules in front of them: the caller is who the token names (401 without one),
the body has the server's size limit (413), a message that starts a run takes one of the run
slots first (503 with Retry-After at the limit), and a message is checked before any task
exists (a user's text or an approval's data part; an invalid-params error otherwise).

A task belongs to the caller that sent it: the task store is kept per caller, so another
caller's task id is "task not found", never its content. The `contextId` names the
conversation, kept in the server's session store under the caller's scoped id exactly like the
OpenAI face's conversation name: the same `contextId` from two callers is two conversations.
Tasks themselves are kept in this process, the last 1000 of each caller (`a2a_task_store`). A
closed stream does not cancel its task (A2A clients reconnect with `SubscribeToTask` or read it
with `GetTask`); `CancelTask` does, and a cancelled run writes nothing to the conversation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, MutableMapping
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest, Task, TaskState
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InvalidParamsError,
    UnsupportedOperationError,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from ..errors import InvalidSessionId
from .a2a_card import A2A_PATH, agent_card
from .a2a_executor import ServedExecutor
from .a2a_slots import TICKET, RunTicket
from .a2a_task_store import CallerTaskStore
from .callers import scoped_id
from .refusal import Refused
from .served import Served

__all__ = ["a2a_routes"]

CARD_PATH = "/.well-known/agent-card.json"
_USER = "promptimus.a2a_user"
_RUN_METHODS = frozenset({"SendMessage", "SendStreamingMessage"})
_RUNNING = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})


class _Caller(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


class _CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, naming the caller the endpoint found and carrying its slot."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers")
        if isinstance(headers, dict):  # the token must not travel further than here
            headers.pop("authorization", None)
            headers.pop("x-api-key", None)
        context.state[TICKET] = request.scope.get(TICKET)
        return context

    def build_user(self, request: Request) -> User:
        return _Caller(request.scope[_USER])


class _CheckedHandler(DefaultRequestHandler):
    """The SDK's handler, refusing a message the served module cannot take before it becomes
    a task."""

    def __init__(self, served: Served, tasks: CallerTaskStore) -> None:
        super().__init__(
            agent_executor=ServedExecutor(served),
            task_store=tasks,
            agent_card=agent_card(served, "http://127.0.0.1"),
        )
        self._tasks = tasks

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        await self._check(params, context)
        answer: Message | Task = await super().on_message_send(params, context)
        return answer

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        await self._check(params, context)
        async for event in super().on_message_send_stream(params, context):
            yield event

    async def _check(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        _check_message(params, context)
        if not params.message.task_id:
            return
        # the SDK would queue it behind the running request and answer with that one's
        # result, the message never read: a running task takes no message
        task = await self._tasks.get(params.message.task_id, context)
        if task is not None and task.status.state in _RUNNING:
            raise UnsupportedOperationError(
                message=f"Task {task.id} is still running: wait until it finishes or asks for "
                "input, or cancel it, before sending it a message."
            )


def _check_message(params: SendMessageRequest, context: ServerCallContext) -> None:
    message = params.message
    if message.role != Role.ROLE_USER:
        raise InvalidParamsError(message="message.role must be ROLE_USER: you send the message.")
    if not message.parts:
        raise InvalidParamsError(message="message.parts is empty: send your text in a text part.")
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind not in ("text", "data"):
            raise ContentTypeNotSupportedError(
                message=f"message.parts[{index}] is a {kind or 'empty'} part: this agent reads "
                "text parts (and a data part answering an approval)."
            )
    has_text = any(part.text.strip() for part in message.parts if part.HasField("text"))
    if not message.task_id and not has_text:
        raise InvalidParamsError(message="The message holds no text: say something.")
    if message.context_id:
        try:
            scoped_id(context.user.user_name, message.context_id)
        except InvalidSessionId as exc:
            raise InvalidParamsError(message=f"Bad contextId: {exc}") from None


def a2a_routes(served: Served) -> list[BaseRoute]:
    handler = _CheckedHandler(served, CallerTaskStore())
    dispatcher = JsonRpcDispatcher(request_handler=handler, context_builder=_CallerContext())

    async def card(request: Request) -> Response:
        # under a Mount, root_path holds the mount's prefix (base_url leaves it out)
        base = request.url.replace(path=request.scope.get("root_path", ""), query="")
        return JSONResponse(agent_card_to_dict(agent_card(served, str(base))))

    return [
        Route(CARD_PATH, card, methods=["GET"]),
        Route(A2A_PATH, _Endpoint(served, dispatcher), methods=["POST"]),
    ]


class _Endpoint:
    """The server's rules in front of the SDK's JSON-RPC dispatcher."""

    def __init__(self, served: Served, dispatcher: JsonRpcDispatcher) -> None:
        self._served = served
        self._dispatcher = dispatcher

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        request_id: Any = None
        ticket: RunTicket | None = None
        try:
            user = self._served.caller(request)
            body = await self._served.body(request)
            if isinstance(body, dict):
                given = body.get("id")
                request_id = given if isinstance(given, str | int) else None
                if body.get("method") in _RUN_METHODS:
                    ticket = RunTicket(self._served.slots)
        except Refused as refused:
            await _refusal(refused, request_id)(scope, receive, send)
            return
        scope[_USER] = user
        scope[TICKET] = ticket
        replay = _replaying(json.dumps(body).encode(), receive)
        try:
            response = await self._dispatcher.handle_requests(Request(scope, replay))
            await response(scope, replay, send)
        finally:
            if ticket is not None:
                ticket.release_unclaimed()


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read given once more, for the dispatcher to read."""
    given = False

    async def replay() -> MutableMapping[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _refusal(refused: Refused, request_id: Any) -> JSONResponse:
    """A refusal in JSON-RPC's error shape: a body that does not parse is a parse error (as
    the SDK answers it, status 200); the server's own limits keep their HTTP status."""
    if refused.code == "invalid_json":
        code, status = -32700, 200
    elif refused.status >= 500:
        code, status = -32603, refused.status
    else:
        code, status = -32600, refused.status
    headers = dict(refused.headers)
    if refused.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    error = {"code": code, "message": refused.message}
    return JSONResponse(
        {"jsonrpc": "2.0", "id": request_id, "error": error}, status, headers=headers
    )
