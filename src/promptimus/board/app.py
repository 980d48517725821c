"""The board's web app (Starlette): the pages, and what keeps them local.

- Host check: a request whose Host header is not the board's own address is refused (403), so
  a web page whose domain was pointed at 127.0.0.1 (DNS rebinding) cannot read the board. A
  board bound to every address (`--host 0.0.0.0` or `::`) is reached by whatever name or
  address its clients use; there the token (which such a board always has) keeps it, and a
  page of another site never holds the token (its cookie is SameSite=Strict, for the board's
  own host).
- Token: with `token` set (required by `promptimus board` for a non-local `--host`), every
  request needs it: `?token=...` once (it is then kept in an HttpOnly, SameSite=Strict cookie),
  the cookie, or an `Authorization: Bearer` header.
- Actions (approve, deny, delete) are POSTs carrying this server's CSRF token, which only the
  board's own pages hold; a POST with another site's Origin is refused too.
- A Content-Security-Policy lets the pages load only the board's own script and style.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import PromptimusError
from . import approvals_page, runs_page, stores_page, training_page
from .html import esc, page

__all__ = ["BoardConfig", "build_app", "is_local"]

STATIC = Path(__file__).with_name("static")
_LOCAL = {"127.0.0.1", "localhost", "::1"}
_EVERY_ADDRESS = {"0.0.0.0", "::", ""}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)


def is_local(host: str) -> bool:
    return host in _LOCAL or host.startswith("127.")


def same_secret(given: object, expected: str) -> bool:
    """Whether `given` is `expected`, compared in constant time as UTF-8 bytes (any text a
    client sends, non-ASCII too, is a wrong value, never an error)."""
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )


@dataclass
class BoardConfig:
    """What `promptimus board` serves (see the command's help)."""

    path: Path
    host: str = "127.0.0.1"
    port: int = 8321
    fits: Path | None = None
    sessions: str | None = None
    dbos: str | None = None
    checkpoints: Path | None = None
    token: str | None = None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def any_host(self) -> bool:
        """A board on every address with a token answers any Host (see the module docstring)."""
        return self.host in _EVERY_ADDRESS and self.token is not None

    def allowed_hosts(self) -> set[str]:
        names = {self.host} | (_LOCAL if is_local(self.host) else set())
        return {f"[{name}]:{self.port}" if ":" in name else f"{name}:{self.port}" for name in names}


class _Guard:
    """The Host check and the token (see the module docstring), before any route runs."""

    def __init__(self, app: ASGIApp, config: BoardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        host = request.headers.get("host", "")
        if not self.config.any_host() and host not in self.config.allowed_hosts():
            response: Response = PlainTextResponse(
                f"This board answers only at {sorted(self.config.allowed_hosts())}.", 403
            )
            await response(scope, receive, send)
            return
        token = self.config.token
        if token is not None:
            given = request.query_params.get("token")
            if given is not None and same_secret(given, token):
                rest = {k: v for k, v in request.query_params.items() if k != "token"}
                target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                response = RedirectResponse(target, 303)
                response.set_cookie(
                    "board_token", token, httponly=True, samesite="strict", path="/"
                )
                await response(scope, receive, send)
                return
            held = request.cookies.get("board_token") or request.headers.get(
                "authorization", ""
            ).removeprefix("Bearer ")
            if not same_secret(held, token):
                response = PlainTextResponse("This board needs its token: open ?token=...", 401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, _with_headers(send))


def _with_headers(send: Send) -> Send:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            headers += [
                (b"content-security-policy", _CSP.encode()),
                (b"x-frame-options", b"DENY"),
                (b"x-content-type-options", b"nosniff"),
                (b"referrer-policy", b"same-origin"),
                (b"cache-control", b"no-store"),
            ]
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def _checked_form(request: Request, config: BoardConfig) -> dict[str, str] | None:
    """The POSTed form if it carries the CSRF token and no foreign Origin, else None."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers['host']}":
        return None
    form = await request.form()
    given = form.get("csrf")
    if not same_secret(given, config.csrf):
        return None
    return {key: value for key, value in form.items() if isinstance(value, str)}


def _html(body: str | None, status: int = 200) -> Response:
    if body is None:
        return HTMLResponse(page("Not found", "", "<p class=empty>Nothing here.</p>"), 404)
    return HTMLResponse(body, status)


def _forbidden() -> Response:
    text = "Refused: this action needs a form from the board's own page."
    return HTMLResponse(page("Refused", "", f"<p class=err>{esc(text)}</p>"), 403)


def build_app(config: BoardConfig) -> Starlette:
    """The board for `config` (DBOS is joined and the session store opened at startup)."""
    state: dict[str, Any] = {"store": None}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if config.dbos is not None:
            approvals_page.launch(config.dbos)
        if config.sessions is not None:
            state["store"] = stores_page.open_store(config.sessions)
        try:
            yield
        finally:
            store = state["store"]
            if store is not None:
                await store.aclose()
            if config.dbos is not None:
                approvals_page.shutdown()

    routes = _page_routes(config, state) + _action_routes(config, state)
    routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(_Guard, config=config)
    return app


def _page_routes(config: BoardConfig, state: dict[str, Any]) -> list[Route | Mount]:
    """The pages (GET)."""

    async def runs(request: Request) -> Response:
        query = request.query_params.get("q", "")
        status = request.query_params.get("status", "")
        return _html(runs_page.runs_page(config.path, query, status))

    async def run(request: Request) -> Response:
        return _html(runs_page.run_page(config.path, request.path_params["run_id"]))

    async def training(request: Request) -> Response:
        return _html(training_page.training_page(config.fits))

    async def fit(request: Request) -> Response:
        name = request.query_params.get("dir", "")
        if config.fits is None:
            return _html(None)
        return _html(training_page.fit_page(config.fits, name))

    async def fit_step(request: Request) -> Response:
        name = request.query_params.get("dir", "")
        step = request.query_params.get("step", "")
        if config.fits is None:
            return _html(None)
        return _html(training_page.step_page(config.fits, name, step))

    async def conversations(request: Request) -> Response:
        return _html(await stores_page.conversations_page(state["store"], config.csrf))

    async def conversation(request: Request) -> Response:
        if state["store"] is None:
            return _html(None)
        session_id = request.path_params["session_id"]
        runs = runs_page.runs_of_session(config.path, session_id)
        shown = await stores_page.conversation_page(state["store"], session_id, config.csrf, runs)
        return _html(shown)

    async def approvals(request: Request) -> Response:
        note = request.query_params.get("note", "")
        enabled = config.dbos is not None
        return _html(await approvals_page.approvals_page(enabled, config.csrf, note))

    async def checkpoints(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        return _html(stores_page.checkpoints_page(config.checkpoints, a, b))

    async def home(request: Request) -> Response:
        return RedirectResponse("/runs", 303)

    return [
        Route("/", home),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/training", training),
        Route("/training/fit", fit),
        Route("/training/step", fit_step),
        Route("/conversations", conversations),
        Route("/conversations/{session_id:path}", conversation),
        Route("/approvals", approvals),
        Route("/checkpoints", checkpoints),
    ]


def _action_routes(config: BoardConfig, state: dict[str, Any]) -> list[Route | Mount]:
    """The POSTs (see `_checked_form`): delete a conversation, decide a pending call."""

    async def delete(request: Request) -> Response:
        if await _checked_form(request, config) is None:
            return _forbidden()
        if state["store"] is not None:
            await state["store"].delete(request.path_params["session_id"])
        return RedirectResponse("/conversations", 303)

    async def decide(request: Request) -> Response:
        form = await _checked_form(request, config)
        if form is None or config.dbos is None:
            return _forbidden()
        approved = form.get("decision") == "approve"
        workflow_id, call_id = request.path_params["workflow_id"], request.path_params["call_id"]
        try:
            await approvals_page.decide(workflow_id, call_id, approved)
        except PromptimusError as exc:
            return RedirectResponse("/approvals?" + urlencode({"note": str(exc)}), 303)
        word = "approved" if approved else "denied"
        note = f"{call_id} of {workflow_id} {word}; the run goes on in its worker."
        return RedirectResponse("/approvals?" + urlencode({"note": note}), 303)

    return [
        Route("/conversations/{session_id:path}/delete", delete, methods=["POST"]),
        Route("/approvals/{workflow_id:path}/{call_id}", decide, methods=["POST"]),
    ]
