"""How a Responses API reply ends, plain or streamed, in promptimus's terms.

A response is ``completed``, ``incomplete`` or ``failed``. ``incomplete`` for
``max_output_tokens`` is `OutputTruncated`, for ``content_filter`` `ContentFiltered`;
``failed`` (and a stream's ``error`` event) is a `ResponseFailure` carrying the HTTP status its
code stands for, so the retry layer treats it as it would that status: ``rate_limit_exceeded``
and ``server_error`` are retried, ``context_length_exceeded`` is `ContextWindowExceeded`,
anything the request caused is `RequestRejected`, each quoting the server.

`StreamReader` turns the stream's events into `MessageDelta` s: text and refusal deltas,
reasoning summary deltas (the reply's ``reasoning``), function-call items and their argument
deltas, and each finished reasoning item or hosted call whole (``output_item.done``, where a
reasoning item's encrypted content is complete). ``response.completed`` is the finish delta,
with the usage and the response id.
"""

from __future__ import annotations

from typing import Any

from promptimus.dto import Message, MessageDelta, ToolCallDelta
from promptimus.errors import ContentFiltered, EmptyReply, MalformedReply, OutputTruncated
from promptimus.llms.openai_responses_format import (
    compaction_item,
    function_call,
    hosted_call,
    read_output,
    reasoning_block,
    usage_from_responses,
)

__all__ = ["ResponseFailure", "StreamReader", "reply_to_message"]

_STATUS = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "vector_store_timeout": 504,
    "context_length_exceeded": 400,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
    "invalid_image": 400,
    "invalid_image_format": 400,
    "invalid_base64_image": 400,
    "invalid_image_url": 400,
    "image_too_large": 400,
    "image_too_small": 400,
    "image_parse_error": 400,
    "image_content_policy_violation": 400,
    "invalid_image_mode": 400,
    "image_file_too_large": 400,
    "unsupported_image_media_type": 400,
    "empty_image_file": 400,
    "failed_to_download_image": 400,
    "image_file_not_found": 400,
}


class ResponseFailure(Exception):
    """A response the server reported ``failed``, or an ``error`` event in its stream: the
    server's ``message`` and ``code``, and the HTTP status the code stands for (unknown codes:
    500, a server failure)."""

    def __init__(self, error: Any, response: Any = None) -> None:
        fields = error if isinstance(error, dict) else {}
        message = fields.get("message")
        code = fields.get("code")
        self.message = message if isinstance(message, str) and message else "the response failed"
        self.code = code if isinstance(code, str) else None
        text = f"{self.message} (code {self.code!r})" if self.code else self.message
        super().__init__(text)
        self.status_code = _STATUS.get(self.code or "", 500)
        self.body = {
            "error": {
                "message": self.message,
                "code": self.code,
                "type": "invalid_request_error" if self.status_code == 400 else self.code,
                "param": fields.get("param"),
            }
        }
        self.response = response if response is not None else _NoResponse()


class _NoResponse:
    """What a failure without its own HTTP response answers for one (no headers)."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}


def _incomplete(data: dict[str, Any], partial: str, context: str) -> Exception:
    details = data.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    if reason == "content_filter":
        return ContentFiltered(
            f"The reply to the {context} was stopped by the content filter after "
            f"{len(partial)} characters of text (response incomplete: content_filter). "
            "Rephrase the request; sending it again would be stopped the same way.",
            partial=partial,
        )
    return OutputTruncated(
        f"The reply to the {context} was cut off (response incomplete: {reason or 'unknown'}) "
        f"after {len(partial)} characters of text: the model used its whole max_output_tokens "
        "budget, reasoning included. Raise max_output_tokens (max_tokens) or lower "
        "reasoning_effort."
    )


def reply_to_message(data: Any, context: str) -> Message:
    """The assistant `Message` of a (non-streamed) response object, or the error its status
    stands for; a completed response with no text and no tool call is `EmptyReply`."""
    if not isinstance(data, dict):
        raise MalformedReply(f"the body is {type(data).__name__}, not a response object")
    status = data.get("status")
    if status == "failed" or (status is None and data.get("error")):
        raise ResponseFailure(data.get("error"))
    message = read_output(data)
    if status == "incomplete":
        raise _incomplete(data, message.content, context)
    if not message.content.strip() and not message.tool_calls:
        raise EmptyReply("the response holds no text and no function call", finish_reason="stop")
    return message


class StreamReader:
    """Reads one Responses event stream: ``read(event)`` is the event's `MessageDelta` (None
    when it carries nothing to show). Function calls are numbered in the order they start."""

    __slots__ = ("_calls", "_context", "_reasoned", "_separate", "_text")

    def __init__(self, context: str) -> None:
        self._calls: dict[Any, int] = {}  # item id (or output index) -> tool-call index
        self._context = context
        self._text: list[str] = []
        self._reasoned = False  # some summary text arrived
        self._separate = False  # a new summary part began after some

    def _index(self, event: dict[str, Any]) -> int | None:
        key = event.get("item_id", event.get("output_index"))
        return self._calls.get(key)

    def read(self, event: Any) -> MessageDelta | None:
        if not isinstance(event, dict):
            raise MalformedReply(f"a stream event is {type(event).__name__}, not an object")
        kind = event.get("type")
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                self._text.append(delta)
                return MessageDelta(content=delta)
            return None
        if kind == "response.reasoning_summary_text.delta":
            delta = event.get("delta")
            if not isinstance(delta, str) or not delta:
                return None
            if self._separate:  # the parts are joined by blank lines, as in a plain reply
                delta = "\n\n" + delta
            self._separate = False
            self._reasoned = True
            return MessageDelta(reasoning=delta)
        if kind == "response.reasoning_summary_part.added":
            self._separate = self._reasoned
            return None
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.function_call_arguments.delta":
            index = self._index(event)
            delta = event.get("delta")
            if index is None or not isinstance(delta, str) or not delta:
                return None
            return MessageDelta(tool_calls=[ToolCallDelta(index=index, arguments=delta)])
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.completed":
            return self._completed(event.get("response"))
        if kind == "response.incomplete":
            response = event.get("response")
            data = response if isinstance(response, dict) else {}
            raise _incomplete(data, "".join(self._text), self._context)
        if kind == "response.failed":
            response = event.get("response")
            raise ResponseFailure(response.get("error") if isinstance(response, dict) else None)
        if kind == "error":
            raise ResponseFailure(event)
        return None

    def _item_added(self, event: dict[str, Any]) -> MessageDelta | None:
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return None
        index = len(self._calls)
        self._calls[item.get("id", event.get("output_index"))] = index
        self._calls.setdefault(event.get("output_index"), index)
        call = function_call({**item, "arguments": ""}, "a function_call item")
        return MessageDelta(
            tool_calls=[ToolCallDelta(index=index, id=call.id, name=call.function.name)]
        )

    def _item_done(self, event: dict[str, Any]) -> MessageDelta | None:
        item = event.get("item")
        if not isinstance(item, dict):
            return None
        kind = item.get("type")
        if kind == "reasoning":
            block = reasoning_block(item, "a reasoning item")
            return MessageDelta(thinking=[block])
        if kind == "function_call":
            index = self._calls.get(item.get("id", event.get("output_index")))
            if index is None:  # its start was never announced: the whole call at once
                index = len(self._calls)
                self._calls[item.get("id", event.get("output_index"))] = index
                call = function_call(item, "a function_call item")
                fragment = ToolCallDelta(
                    index=index,
                    id=call.id,
                    name=call.function.name,
                    arguments=call.function.arguments,
                )
                return MessageDelta(tool_calls=[fragment])
            return None
        if kind == "compaction":
            return MessageDelta(context_edits=[compaction_item(item, "a compaction item")])
        if isinstance(kind, str) and kind.endswith("_call"):
            return MessageDelta(hosted_calls=[hosted_call(item)])
        return None

    def _completed(self, response: Any) -> MessageDelta:
        data = response if isinstance(response, dict) else {}
        response_id = data.get("id")
        model = data.get("model")
        return MessageDelta(
            usage=usage_from_responses(data.get("usage")),
            finish_reason="tool_calls" if self._calls else "stop",
            model_name=model if isinstance(model, str) and model else None,
            response_id=response_id if isinstance(response_id, str) and response_id else None,
        )
