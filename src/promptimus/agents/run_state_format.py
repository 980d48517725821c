"""The JSON document `RunState.to_json()` writes, read back within limits and checked field by
field before anything is built from it.

A state comes back from wherever it was kept (a browser, a queue, a database column), so it is
untrusted text: it is decoded with the bounded decoder of `promptimus.model_json` (no raw
`RecursionError` for deep nesting, no endless conversion of a huge integer; the document nests
at most `MAX_JSON_DEPTH` levels, room for agents nested far deeper than `DEFAULT_MAX_NESTING`),
then validated strictly against the shape below: text where text belongs, whole numbers never
below 0, finite durations, lists that are lists. Nothing is coerced: `"step": "3"`, `-5`,
`1e400` or `"rejected": "abc"` are refused, never read as something else.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..model_json import decode_json

__all__ = ["FORMAT", "StateFormatError", "read_state_document"]

FORMAT = 1

Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
MessageData = dict[str, Any]  # validated as a `Message` by the reader


class UsageData(TypedDict):
    prompt_tokens: NotRequired[Count]
    completion_tokens: NotRequired[Count]
    total_tokens: NotRequired[Count]
    cached_tokens: NotRequired[Count]
    reasoning_tokens: NotRequired[Count]
    cache_hit: NotRequired[bool]


class ToolCallData(TypedDict):
    id: str | None
    name: str
    arguments: str
    result: NotRequired[str | None]
    error: NotRequired[str | None]
    duration_s: NotRequired[Seconds]
    images: NotRequired[list[dict[str, Any]]]
    children: NotRequired[list[RecordData]]
    approval: NotRequired[Literal["pending", "approved", "denied"] | None]
    server: NotRequired[str | None]


class StepData(TypedDict):
    index: Count
    request: list[MessageData]
    reply: MessageData
    tool_calls: NotRequired[list[ToolCallData]]
    usage: NotRequired[UsageData]
    tools: NotRequired[list[str] | None]


class GuardrailData(TypedDict):
    guard: str
    kind: Literal["input", "output", "tool"]
    action: Literal["allow", "block", "replace"]
    reason: NotRequired[str | None]
    step: NotRequired[Count]
    tool_call_id: NotRequired[str | None]


class CompactionData(TypedDict):
    step: Count
    tokens_before: Count
    tokens_after: Count
    steps: list[str]
    usage: UsageData


class RecordData(TypedDict):
    output: NotRequired[Any]
    usage: NotRequired[UsageData]
    steps: NotRequired[list[StepData]]
    guardrails: NotRequired[list[GuardrailData]]  # the verdicts before the pause
    compactions: NotRequired[list[CompactionData]]  # those before the pause


class PausedCallData(TypedDict):
    approval_id: str
    position: Count
    call_id: str | None
    name: str
    arguments: str
    parsed: NotRequired[dict[str, Any] | None]
    reason: NotRequired[str | None]


class StateData(TypedDict):
    format: Literal[1]
    id: str
    agent: str
    fingerprint: str
    step: Count
    steps: Count
    retries: NotRequired[Count]
    rejected: NotRequired[list[str]]
    errors: NotRequired[list[str]]
    conversation: list[MessageData]
    keep: list[MessageData]
    record: RecordData
    paused: list[PausedCallData]
    history: NotRequired[Count]
    compacted_from: NotRequired[list[MessageData]]


class StateFormatError(ValueError):
    """Internal: the text is not a state document; the message says where and why."""


@functools.cache
def _adapter() -> TypeAdapter[StateData]:
    return TypeAdapter(StateData)


def read_state_document(text: str | bytes) -> StateData:
    """The document in `text`, decoded within limits and checked against `StateData` (unknown
    keys dropped). Raises `StateFormatError`."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateFormatError(f"the text is not UTF-8 ({exc.reason})") from None
    if not isinstance(text, str):
        raise StateFormatError(f"expected JSON text, got {type(text).__name__}")
    try:
        data = decode_json(text)
    except json.JSONDecodeError as exc:
        raise StateFormatError(f"not JSON within limits ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StateFormatError(f"not a promptimus run state (format {FORMAT})")
    try:
        return _adapter().validate_python(data, strict=True)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(map(str, error['loc'])) or 'the document'}: {error['msg']}"
            for error in exc.errors(include_url=False)[:3]
        ]
        more = exc.error_count() - len(problems)
        raise StateFormatError(
            "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
        ) from None
