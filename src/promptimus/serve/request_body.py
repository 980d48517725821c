"""Reading a request's JSON body within the server's size limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request

from .refusal import Refused

__all__ = ["read_json"]


async def read_json(request: Request, max_bytes: int, seconds: float) -> Any:
    """The body as JSON; `Refused` 413 past `max_bytes` (checked on the declared length and on
    the bytes as they arrive, so a body without a length cannot slip past); 408 when the whole
    body has not arrived within `seconds` (a body that never ends holds nothing); 415 for a
    body that is not declared JSON; 400 for one that does not parse (or holds a number too
    long to read)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json" and not kind.endswith("+json"):
        raise Refused(
            415,
            "Send the request body as JSON, with Content-Type: application/json.",
            "unsupported_media_type",
        )
    body = bytearray()
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                body += chunk
                if len(body) > max_bytes:
                    raise _too_large(max_bytes)
    except TimeoutError:
        raise Refused(
            408,
            f"The request body did not arrive within {seconds:g} seconds; send it whole "
            "(the limit is app(..., body_timeout=)).",
            "request_timeout",
        ) from None
    try:
        return json.loads(body, parse_constant=_not_json)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(400, f"The request body is not valid JSON ({exc}).", "invalid_json") from None
    except ValueError:  # a number of more digits than Python converts
        raise Refused(
            400, "The request body holds a number too long to read.", "invalid_json"
        ) from None
    except RecursionError:
        raise Refused(400, "The request body nests too deeply.", "invalid_json") from None


def _not_json(constant: str) -> Any:
    """NaN and the infinities are not JSON (Python's reader takes them, and they would come
    back out changed, as null); refused like any other bad body."""
    raise Refused(
        400,
        f"The request body is not valid JSON: {constant} is not a JSON number.",
        "invalid_json",
    )


def _too_large(max_bytes: int) -> Refused:
    return Refused(
        413,
        f"The request body is larger than this server's limit of {max_bytes} bytes; send a "
        "shorter request (the limit is app(..., max_body_bytes=)).",
        "request_too_large",
    )
