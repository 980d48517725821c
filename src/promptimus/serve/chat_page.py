"""The chat page at `/`: try the served module in a browser.

Rendered here as plain HTML (no build step, nothing from another host); its one script,
`static/chat.js`, talks to the AG-UI endpoint (`POST /ag-ui`) and shows the run as it streams:
the answer, each tool call with its arguments, progress and result, nested agents, and the
calls waiting for approval with Approve and Deny. A server with tokens needs one: the page asks
for it, keeps it in the tab's `sessionStorage` and sends it as `Authorization: Bearer`; it is
never part of the page the server renders.

A Content-Security-Policy lets the page load only this server's script and style and talk only
to this server; with `board_url` the page links each finished run to the board's runs list,
searched for the run's message (the board of the same recording), and only a link leaves.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .served import Served

__all__ = ["CSP", "chat_routes"]

STATIC = Path(__file__).with_name("static")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
)


def escaped(text: str) -> str:
    return escape(text, quote=True)


def render(served: Served, board_url: str | None) -> str:
    """The page; behind tokens it names nothing of the module (anyone may load the page,
    only a caller with a token learns what it serves)."""
    board = f' data-board="{escaped(board_url)}"' if board_url else ""
    private = served.callers.required
    needs_token = ' data-token="required"' if private else ""
    name = "promptimus agent" if private else served.name
    about = "" if private else served.description.split("\n\n")[0]
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{escaped(name)} · promptimus</title>"
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/chat.css">'
        '<script src="/static/chat.js" defer></script></head>'
        f"<body{needs_token}{board}>"
        f"<header><span class=brand>{escaped(name)}</span>"
        f"<span class=about>{escaped(about)}</span>"
        "<button type=button id=new-conversation>New conversation</button></header>"
        "<main>"
        "<form id=token-form hidden><label for=token>This server needs a token</label>"
        "<input id=token type=password autocomplete=off placeholder=token>"
        "<button type=submit>Use it</button></form>"
        "<div id=log aria-live=polite></div>"
        "<form id=ask><textarea id=message rows=2 placeholder='Write a message'></textarea>"
        "<button type=submit id=send>Send</button></form>"
        "<noscript>This page needs JavaScript to talk to the agent.</noscript>"
        "</main></body></html>"
    )


def chat_routes(served: Served, board_url: str | None) -> list[BaseRoute]:
    async def home(request: Request) -> Response:
        return HTMLResponse(render(served, board_url), headers={"content-security-policy": CSP})

    return [
        Route("/", home, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
