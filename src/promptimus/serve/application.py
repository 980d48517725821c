"""`app(module, ...)`: the served module as a Starlette ASGI app, to run with uvicorn (as
`promptimus serve` does) or mount in an existing Starlette or FastAPI service."""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping, MutableMapping
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..argument_checks import finite_number, positive_int
from ..core.module import Module
from ..errors import InvalidArgument
from .a2a import a2a_routes
from .ag_ui import ag_ui_routes
from .callers import Callers
from .chat_page import chat_routes
from .conversations import DEFAULT_MAX_CONVERSATIONS, Conversations
from .http_errors import http_error
from .openai_chat import openai_routes
from .served import Served
from .served_run import RunSlots

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONCURRENT_RUNS",
    "DEFAULT_MAX_CONVERSATIONS",
    "app",
]

DEFAULT_MAX_CONCURRENT_RUNS = 64
DEFAULT_MAX_BODY_BYTES = 1_000_000
DEFAULT_BODY_TIMEOUT = 30.0

_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def app(
    module: Module,
    *,
    store: Any = None,
    tokens: Mapping[str, str] | None = None,
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_conversations: int = DEFAULT_MAX_CONVERSATIONS,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    name: str | None = None,
    allowed_hosts: Collection[str] | None = None,
    board_url: str | None = None,
) -> Starlette:
    """Serve `module`: OpenAI-compatible chat completions and models, the AG-UI endpoint
    (`POST /ag-ui`), A2A (`promptimus.serve.a2a`), the chat page at `/`, and `GET /healthz`.

    - `store`: a session store (`promptimus.sessions`) keeping the conversations; None keeps
      them in this process.
    - `tokens`: `{token: user}`; each request then needs a token, and is that user. None: one
      local user, no token (serve it on 127.0.0.1 only).
    - `max_concurrent_runs`: runs at once; one more gets 503 with Retry-After.
    - `max_body_bytes`: the largest request body; a larger one gets 413.
    - `max_conversations`: without a store, the conversations kept in this process (default
      10,000); past it the least recently used is forgotten (its next request starts afresh).
    - `body_timeout`: seconds a request body may take to arrive whole; a slower one gets 408,
      so a client that never finishes its body holds no connection forever.
    - `name`: the model name clients see (default: the module's class name).
    - `allowed_hosts`: the `Host` headers answered (`host:port`); others get 403, so a web page
      whose domain was pointed at this address (DNS rebinding) cannot use it. None: any.
    - `board_url`: where the board of this server's recording is (`http://127.0.0.1:8321`,
      with the server run inside `promptimus.board.record(...)`); the chat page at `/` then
      links each finished run to it.
    """
    if not isinstance(module, Module):
        raise InvalidArgument(
            f"app() serves a promptimus Module, got {type(module).__name__}; pass the module "
            "(an agent or any Module)."
        )
    if store is not None and not all(
        callable(getattr(store, m, None)) for m in ("load_turns", "append_turn")
    ):
        raise InvalidArgument(
            f"store= takes a session store (promptimus.sessions: SQLiteSessionStore, "
            f"PostgresSessionStore, RedisSessionStore), got {type(store).__name__}."
        )
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidArgument("name= must be non-empty text: the model name clients see.")
    served = Served(
        module=module,
        name=name or type(module).__name__,
        description=inspect.cleandoc(type(module).__doc__ or ""),
        callers=Callers(tokens),
        store=store,
        slots=RunSlots(positive_int(max_concurrent_runs, "max_concurrent_runs")),
        max_body_bytes=positive_int(max_body_bytes, "max_body_bytes"),
        conversations=Conversations(positive_int(max_conversations, "max_conversations")),
        body_timeout=finite_number(body_timeout, "body_timeout", positive=True),
    )
    hosts = None if allowed_hosts is None else frozenset(allowed_hosts)
    board = _board_url(board_url)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "runs": served.slots.busy})

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        *openai_routes(served),
        *ag_ui_routes(served),
        *a2a_routes(served),
        *chat_routes(served, board),
    ]
    application = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    application.add_middleware(_Guard, hosts=hosts)
    application.state.served = served
    return application


def _board_url(given: object) -> str | None:
    if given is None:
        return None
    if (
        not isinstance(given, str)
        or not given.startswith(("http://", "https://"))
        or any(c.isspace() or c in "\"'<>" for c in given)
    ):
        raise InvalidArgument(
            f"board_url= takes the board's address, such as http://127.0.0.1:8321, got {given!r}."
        )
    return given.rstrip("/")


class _Guard:
    """The Host check, and headers every answer carries."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.hosts is not None:
            host = Request(scope).headers.get("host", "")
            if host not in self.hosts:
                refused = PlainTextResponse(
                    f"This server answers only at {sorted(self.hosts)}.", 403
                )
                await refused(scope, receive, send)
                return

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, sending)
