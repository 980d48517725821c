"""Decoding JSON that a model wrote, within limits.

The standard `json` module recurses once per nesting level, so a reply nested a few thousand
levels deep raises a raw `RecursionError`, and an integer longer than Python's
`sys.get_int_max_str_digits()` raises a raw `ValueError`. Model output is untrusted text, so the
parsers of model output (ReACT actions, structured output, rerank scores) decode through here:
anything nested deeper than `MAX_JSON_DEPTH` or with an integer of more than `MAX_INT_DIGITS`
digits raises `ModelJSONTooComplex` — a `json.JSONDecodeError` whose message tells the model
what to change — before the decoder recurses or converts.

The depth limit matches pydantic-core's JSON parser, which decodes native tool-call arguments,
so both tool-calling protocols accept the same arguments.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ModelJSONTooComplex

__all__ = ["MAX_INT_DIGITS", "MAX_JSON_DEPTH", "decode_json", "decode_json_prefix"]

MAX_JSON_DEPTH = 200
"""Deepest nesting of arrays and objects accepted (pydantic-core's JSON parser allows 200)."""

MAX_INT_DIGITS = 4300
"""Longest integer accepted, in digits (CPython's default `int_max_str_digits`), whatever the
process-wide setting is: a model has no reason to write a longer one."""

_BRACKET_OR_QUOTE = re.compile(r'[\[\]{}"]')
_STRING_TAIL = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class _LongInteger(Exception):
    pass


def _parse_int(digits: str) -> int:
    if len(digits) - digits.startswith("-") > MAX_INT_DIGITS:
        raise _LongInteger
    try:
        return int(digits)
    except ValueError:  # the process set a lower int_max_str_digits
        raise _LongInteger from None


_decoder = json.JSONDecoder(parse_int=_parse_int)


def _check_depth(text: str, start: int) -> None:
    """Raise if the array/object starting at `text[start]` nests deeper than allowed. Scans
    only as far as that value goes (strings are skipped, so brackets inside them do not count)."""
    depth = 0
    position = start
    while True:
        match = _BRACKET_OR_QUOTE.search(text, position)
        if match is None:
            return
        char = match.group()
        if char == '"':
            tail = _STRING_TAIL.match(text, match.end())
            if tail is None:  # an unterminated string: the decoder reports it
                return
            position = tail.end()
            continue
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ModelJSONTooComplex(
                    f"JSON nested deeper than {MAX_JSON_DEPTH} levels; flatten the structure",
                    text,
                    match.start(),
                )
        else:
            depth -= 1
            if depth <= 0:
                return
        position = match.end()


def decode_json_prefix(text: str, start: int = 0) -> tuple[Any, int]:
    """Decode the JSON value that starts at `text[start]` (like `JSONDecoder.raw_decode`) and
    return it with the index where it ends. Raises `json.JSONDecodeError` for malformed JSON
    and its subclass `ModelJSONTooComplex` past the limits."""
    if text[start : start + 1] in ("[", "{"):
        _check_depth(text, start)
    try:
        return _decoder.raw_decode(text, start)
    except _LongInteger:
        raise ModelJSONTooComplex(
            f"JSON holds an integer longer than {MAX_INT_DIGITS} digits; write it as a string",
            text,
            start,
        ) from None
    except RecursionError:  # only when the call stack was already nearly full
        raise ModelJSONTooComplex(
            "JSON nested too deeply to decode here; flatten the structure", text, start
        ) from None


def decode_json(text: str) -> Any:
    """Decode `text` as one JSON value (surrounding whitespace allowed), like `json.loads`,
    within the same limits as `decode_json_prefix`."""
    start = _WHITESPACE.match(text).end()  # type: ignore[union-attr]
    value, end = decode_json_prefix(text, start)
    end = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value
