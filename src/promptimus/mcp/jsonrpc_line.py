"""One line of the stdio wire `serve` reads: the JSON-RPC message it holds, or the error reply
it gets.

Every line is answered or dispatched, never dropped, so a client never waits for a reply that
will not come. A line is decoded by pydantic-core's JSON parser, the one the `mcp` SDK uses,
which stops at 200 levels of nesting and at numbers of more than 4300 digits with an error
instead of recursing or converting without end.

- A parse error (-32700): a line that is not UTF-8, not JSON, past those limits, or longer than
  the wire's line limit.
- An invalid request (-32600): valid JSON that is not one JSON-RPC 2.0 message (an array, as
  MCP has no batches; a number; a request whose id is not a string or an integer; a wrong
  `jsonrpc` or `method`).
- Invalid params (-32602): a request whose `params` is not an object.

The reply carries the request's id whenever it can be found, even in a line that could not be
decoded as a whole (the id is read from the line's start, its first `SALVAGE_CHARS`
characters, where clients write it), and `null` otherwise, as JSON-RPC 2.0 says. What is left
(an unknown method, params that do not fit the method) is answered by the SDK's server.
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import mcp_types as types
import pydantic_core
from pydantic import ValidationError

__all__ = ["SALVAGE_CHARS", "Refusal", "read_line", "refuse_long_line"]

SALVAGE_CHARS = 64 * 1024
"""How far into a line that cannot be decoded its id is looked for."""

_MAX_ID_DIGITS = 4300

# json's own string scanner (its C one where built): the stubs do not declare it
_Scan = Callable[[str, int], tuple[str, int]]
scanstring: _Scan = json.decoder.scanstring  # type: ignore[attr-defined]


class Refusal(NamedTuple):
    """A line that is not a message the server can take, and the error reply it gets."""

    reply: types.JSONRPCError


def read_line(line: bytes) -> types.JSONRPCMessage | Refusal | None:
    """The message a line holds, the `Refusal` it gets, or None for a blank line."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refuse(
            types.PARSE_ERROR,
            f"Parse error: the line is not UTF-8 ({exc.reason} at byte {exc.start})",
            _salvage_id(line[: SALVAGE_CHARS * 4].decode("utf-8", "replace")),
        )
    if not text.strip():
        return None
    try:
        data = pydantic_core.from_json(line)
    except ValueError as exc:
        return _refuse(
            types.PARSE_ERROR,
            f"Parse error: the line is not JSON the server reads ({exc})",
            _salvage_id(text),
        )
    return _message(data)


def refuse_long_line(start: bytes, limit: int) -> Refusal:
    """The reply to a line longer than `limit` bytes, of which `start` was read."""
    return _refuse(
        types.PARSE_ERROR,
        f"Parse error: the line is longer than the server's limit of {limit} bytes",
        _salvage_id(start[: SALVAGE_CHARS * 4].decode("utf-8", "replace")),
    )


def _message(data: Any) -> types.JSONRPCMessage | Refusal:
    if isinstance(data, list):
        return _refuse(
            types.INVALID_REQUEST,
            "Invalid request: a JSON array (a batch); MCP takes one message per line",
            None,
        )
    if not isinstance(data, dict):
        return _refuse(
            types.INVALID_REQUEST,
            f"Invalid request: {_json_kind(data)}, not a JSON-RPC 2.0 message object",
            None,
        )
    if "method" in data and "id" in data and not _is_id(data["id"]):
        # the SDK would read it as a notification and never answer
        return _refuse(
            types.INVALID_REQUEST,
            f"Invalid request: the id {json.dumps(data['id'])[:40]} is not a string or an integer",
            None,
        )
    try:
        return types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        pass
    request_id = data.get("id") if "method" in data else None
    if data.get("jsonrpc") != "2.0":
        problem = 'Invalid request: "jsonrpc" must be "2.0"'
    elif "method" not in data:
        problem = "Invalid request: neither a request, a notification nor a response"
    elif not isinstance(data["method"], str):
        problem = 'Invalid request: "method" must be a string'
    elif data.get("params") is not None and not isinstance(data["params"], dict):
        return _refuse(
            types.INVALID_PARAMS,
            f'Invalid params: "params" must be an object, got {_json_kind(data["params"])}',
            request_id,
        )
    else:
        problem = "Invalid request: not a JSON-RPC 2.0 message"
    return _refuse(types.INVALID_REQUEST, problem, request_id)


def _refuse(code: int, message: str, request_id: Any) -> Refusal:
    error = types.ErrorData(code=code, message=message)
    return Refusal(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _json_kind(value: Any) -> str:
    kinds = {str: "a string", list: "an array", dict: "an object", bool: "a boolean"}
    return "null" if value is None else kinds.get(type(value), "a number")


# --- the id of a line that could not be decoded as a whole ------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
_BRACKET_OR_QUOTE = re.compile(r'[\[\]{}"]')


def _salvage_id(text: str) -> str | int | None:
    """The top-level "id" of the object `text` starts with, read member by member up to it
    (values before it are skipped, not decoded, so their depth does not matter); None when
    the line is not an object with an id within its first `SALVAGE_CHARS` characters, before
    the point where it breaks."""
    text = text[:SALVAGE_CHARS]
    try:
        position = _skip_space(text, 0)
        if text[position : position + 1] != "{":
            return None
        position += 1
        while True:
            position = _skip_space(text, position)
            if text[position : position + 1] != '"':
                return None
            key, position = scanstring(text, position + 1)
            position = _skip_space(text, position)
            if text[position : position + 1] != ":":
                return None
            position = _skip_space(text, position + 1)
            if key == "id":
                return _id_at(text, position)
            position = _skip_space(text, _skip_value(text, position))
            if text[position : position + 1] != ",":
                return None
            position += 1
    except ValueError:  # a broken string (json.JSONDecodeError) or value
        return None


def _skip_space(text: str, position: int) -> int:
    return _WHITESPACE.match(text, position).end()  # type: ignore[union-attr]


def _id_at(text: str, position: int) -> str | int | None:
    if text[position : position + 1] == '"':
        return scanstring(text, position + 1)[0]
    scalar = _SCALAR.match(text, position)
    if scalar is None:
        return None
    digits = scalar.group()
    if not re.fullmatch(r"-?\d+", digits) or len(digits) > _MAX_ID_DIGITS:
        return None
    return int(digits)


def _skip_value(text: str, position: int) -> int:
    """Where the JSON value starting at `position` ends; ValueError if it is broken."""
    first = text[position : position + 1]
    if first == '"':
        return scanstring(text, position + 1)[1]
    if first not in ("[", "{"):
        scalar = _SCALAR.match(text, position)
        if scalar is None:
            raise ValueError("not a JSON value")
        return scalar.end()
    depth = 0
    while True:
        found = _BRACKET_OR_QUOTE.search(text, position)
        if found is None:
            raise ValueError("unclosed array or object")
        if found.group() == '"':
            position = scanstring(text, found.end())[1]
            continue
        depth += 1 if found.group() in "[{" else -1
        position = found.end()
        if depth == 0:
            return position
