"""Starlette's own refusals (no such path, a method a path does not take) in each protocol's
error shape, so a client of that protocol can read them: OpenAI's `error` object under `/v1/`,
a `RUN_ERROR` body at `/ag-ui`. Other paths keep Starlette's plain answer."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from . import ag_ui, openai_chat
from .refusal import Refused

__all__ = ["http_error"]


def _refusal(request: Request, exc: HTTPException) -> Refused:
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        allowed = headers.get("Allow") or headers.get("allow") or "another method"
        return Refused(
            405,
            f"{request.method} {request.url.path} is not answered here; send {allowed}.",
            "method_not_allowed",
            headers,
        )
    if exc.status_code == 404:
        return Refused(
            404,
            f"There is no {request.url.path} here; the OpenAI-compatible endpoints are "
            "POST /v1/chat/completions and GET /v1/models, the AG-UI one POST /ag-ui.",
            "not_found",
            headers,
        )
    return Refused(exc.status_code, str(exc.detail), "http_error", headers)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    path = request.url.path
    if path == "/ag-ui" or path.startswith("/ag-ui/"):
        return ag_ui.error_response(_refusal(request, exc))
    if path.startswith("/v1/"):
        return openai_chat.error_response(_refusal(request, exc))
    return PlainTextResponse(str(exc.detail), exc.status_code, headers=exc.headers)
