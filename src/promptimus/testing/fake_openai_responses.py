"""``POST /v1/responses`` of `FakeOpenAIServer`: OpenAI's Responses API, JSON and SSE.

Written from OpenAI's public API reference. Besides answering (reasoning items with encrypted
content, messages, function calls, the items of hosted tools, usage with its details; ``store``d
responses to continue from with ``previous_response_id``), it refuses what the real API
refuses, with the real API's status and wording:

- a ``function_call_output`` whose ``call_id`` is no ``function_call`` of the input (or of the
  stored conversation it continues) -- 400;
- a reasoning item not followed by the item it led to -- 400;
- a reasoning item sent without its encrypted content, or any item sent by an id, that the
  server did not store (``store=false``) -- 404 "Item with id ... not found";
- encrypted content the server did not issue for that item -- 400;
- a ``previous_response_id`` it never issued (or was told to forget: `ResponsesRoute.forget`)
  -- 404 ``previous_response_not_found``;
- a function tool or a ``json_schema`` format that is strict (the default) with a schema that
  breaks strict mode's rules, an unknown tool type or ``include`` value -- 400;
- with ``context_window`` set on the server, an input longer than it (one token per word) --
  400 ``context_length_exceeded``;
- a ``compaction`` item whose encrypted content the server did not issue, or a
  ``context_management`` entry that is not ``{"type": "compaction", "compact_threshold": N}``
  -- 400.

Server-side compaction (``context_management=[{"type": "compaction", "compact_threshold":
N}]``): when the input the server reads is over N tokens, everything in it but the system and
developer messages is replaced by one ``compaction`` item (`COMPACTION_TOKENS` in size) before
the window is checked; that item comes first in the output, and the usage counts the input as
compacted. An input holding a compaction item is read from its latest one on (with the system
and developer messages before it): that item stands for what came before.

Faults are scripted as on the chat route: a status fault (429 with Retry-After...) answers
instead; in a stream, ``Fault.cut`` ends it before its final event, ``Fault.drop`` closes the
connection after ``after_chunks`` events, ``Fault.stream_error(body)`` sends an ``error`` event
(``body`` holds its ``code`` and ``message``) and ``Fault.stall`` hangs.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from promptimus.testing import payloads
from promptimus.testing.fake_openai_responses_script import (
    ResponsesReply,
    coerce_responses_reply,
)
from promptimus.testing.script import Fault, Route

if TYPE_CHECKING:
    from promptimus.testing.http import HttpConnection

__all__ = ["ResponsesRoute"]

HOSTED_TOOL_TYPES = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_2025_08_26",
        "web_search_preview_2025_03_11",
        "file_search",
        "code_interpreter",
        "image_generation",
        "computer_use_preview",
        "mcp",
        "local_shell",
        "shell",
        "apply_patch",
        "custom",
    }
)
INCLUDABLE = frozenset(
    {
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "web_search_call.results",
        "file_search_call.results",
        "code_interpreter_call.outputs",
        "message.output_text.logprobs",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
    }
)
_OUTPUT_TYPES = ("function_call", "message")
COMPACTION_TOKENS = 40
"""What one compaction item counts for in the input, in place of what it replaced."""
_KEPT_ROLES = ("system", "developer")


class Rejected(Exception):
    """A request the real API refuses: the status and the error object to answer with."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": code,
            }
        }


def _strict_problem(schema: Any, where: str = "()") -> str | None:
    """What breaks strict mode's rules in ``schema`` (None: nothing)."""
    if isinstance(schema, list):
        for entry in schema:
            problem = _strict_problem(entry, where)
            if problem:
                return problem
        return None
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied and to "
                "be false."
            )
        missing = sorted(set(properties or {}) - set(schema.get("required") or ()))
        if missing:
            return (
                f"In context={where}, 'required' is required to be supplied and to be an array "
                f"including every key in properties. Missing '{missing[0]}'."
            )
    for key, value in schema.items():
        problem = _strict_problem(value, f"('{key}',)" if where == "()" else where)
        if problem:
            return problem
    return None


def _words(text: Any) -> int:
    return len(text.split()) if isinstance(text, str) else 0


def _item_words(item: Any) -> int:
    if isinstance(item, str):
        return _words(item)
    if not isinstance(item, dict):
        return 0
    if item.get("type") == "compaction":
        return COMPACTION_TOKENS
    content = item.get("content")
    if isinstance(content, str):
        return _words(content)
    total = _words(item.get("output")) + _words(item.get("arguments"))
    if isinstance(content, list):
        total += sum(_words(p.get("text")) for p in content if isinstance(p, dict))
    return total


def _kept(item: Any) -> bool:
    """Whether compaction leaves `item` in place: the system and developer messages."""
    return isinstance(item, dict) and item.get("role") in _KEPT_ROLES


def _rendered(items: list[Any]) -> list[Any]:
    """What the server reads of `items`: from the latest compaction item on, after the system
    and developer messages before it."""
    last = max(
        (
            i
            for i, item in enumerate(items)
            if isinstance(item, dict) and item.get("type") == "compaction"
        ),
        default=None,
    )
    if last is None:
        return items
    return [*(item for item in items[:last] if _kept(item)), *items[last:]]


def _compact_threshold(body: dict[str, Any]) -> int | None:
    """The ``compact_threshold`` of the request's ``context_management`` (None: none); a
    `Rejected` for an entry the API does not take."""
    entries = body.get("context_management")
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise Rejected(
            400,
            "Invalid type for 'context_management': expected an array of objects.",
            param="context_management",
        )
    threshold: int | None = None
    for index, entry in enumerate(entries):
        where = f"context_management[{index}]"
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            kind = entry.get("type") if isinstance(entry, dict) else entry
            raise Rejected(
                400,
                f"Invalid value: '{kind}' for '{where}.type'. Supported values are: 'compaction'.",
                param=f"{where}.type",
            )
        value = entry.get("compact_threshold")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Rejected(
                400,
                f"Invalid '{where}.compact_threshold': expected a positive integer, got {value!r}.",
                param=f"{where}.compact_threshold",
            )
        threshold = value
    return threshold


def _user_text(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, str):
            return item
        if isinstance(item, dict) and item.get("role") == "user":
            return payloads.message_text(item.get("content"))
    return ""


class ResponsesRoute(Route):
    """The fake ``/v1/responses``: its script (``script(...)``, ``respond_with``), the
    requests it received (``requests``), and the responses it stored (``stored``)."""

    def __init__(self) -> None:
        super().__init__("responses")
        self.stored: dict[str, list[dict[str, Any]]] = {}
        """Per stored response id, the whole conversation it ends (its input and output)."""
        self._stored_items: set[str] = set()
        self._encrypted: dict[str, str] = {}
        self._compactions: set[str] = set()
        self.outputs: list[list[dict[str, Any]]] = []
        """The output items of each response sent, in order."""
        self._ids = itertools.count(1)

    def clear(self) -> None:
        """Forget the script, the recorded requests and every stored response."""
        super().clear()
        self.stored.clear()
        self._stored_items.clear()
        self._encrypted.clear()
        self._compactions.clear()
        self.outputs.clear()

    def forget(self, response_id: str | None = None) -> None:
        """Forget one stored response (every one: None), as the API does once it expires."""
        gone = [response_id] if response_id is not None else list(self.stored)
        for key in gone:
            self.stored.pop(key, None)
        if response_id is None:
            self._stored_items.clear()

    def rotate_keys(self) -> None:
        """Forget the keys the reasoning it sent was encrypted with, as an organisation or
        project change does: encrypted content sent back from before is refused (400
        ``invalid_encrypted_content``)."""
        self._encrypted.clear()
        self._compactions.clear()

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_fake{next(self._ids):04d}"

    # --- checking a request ------------------------------------------------------------------

    def _check(
        self, body: dict[str, Any], window: int | None
    ) -> tuple[list[Any], dict[str, Any] | None]:
        """What the server reads of the conversation the request continues plus its input,
        and the compaction item it made of it (None: not compacted); `Rejected` if the API
        would refuse it."""
        if not isinstance(body.get("model"), str):
            raise Rejected(400, "Missing required parameter: 'model'.", param="model")
        raw = body.get("input")
        if raw is None:
            raw = []
        if isinstance(raw, str):
            raw = [{"role": "user", "content": raw}]
        if not isinstance(raw, list):
            raise Rejected(400, "Invalid type for 'input': expected a string or an array.")
        earlier: list[Any] = []
        previous = body.get("previous_response_id")
        if previous is not None:
            if previous not in self.stored:
                raise Rejected(
                    404,
                    f"Previous response with id '{previous}' not found.",
                    param="previous_response_id",
                    code="previous_response_not_found",
                )
            earlier = self.stored[previous]
        for include in body.get("include") or ():
            if include not in INCLUDABLE:
                raise Rejected(
                    400,
                    f"Invalid value: '{include}'. Supported values are: "
                    + ", ".join(f"'{value}'" for value in sorted(INCLUDABLE)),
                    param="include",
                )
        self._check_tools(body)
        self._check_format(body)
        threshold = _compact_threshold(body)
        calls = {
            item.get("call_id")
            for item in earlier
            if isinstance(item, dict) and item.get("type") == "function_call"
        }
        for index, item in enumerate(raw):
            self._check_item(item, index, raw, calls)
        conversation = _rendered([*earlier, *raw])
        compaction: dict[str, Any] | None = None
        if threshold is not None and sum(map(_item_words, conversation)) > threshold:
            token = "gAAAA" + secrets.token_urlsafe(32)
            self._compactions.add(token)
            compaction = {
                "id": self._new_id("cmp"),
                "type": "compaction",
                "encrypted_content": token,
            }
            conversation = [item for item in conversation if _kept(item)]
        if window is not None:
            needed = sum(_item_words(item) for item in conversation)
            needed += _item_words(compaction) + int(body.get("max_output_tokens") or 0)
            if needed > window:
                raise Rejected(
                    400,
                    f"Your input exceeds the context window of this model ({needed} tokens "
                    f"requested, {window} allowed). Please adjust your input and try again.",
                    param="input",
                    code="context_length_exceeded",
                )
        return conversation, compaction

    def _check_tools(self, body: dict[str, Any]) -> None:
        for index, tool in enumerate(body.get("tools") or ()):
            kind = tool.get("type") if isinstance(tool, dict) else None
            if kind == "function":
                name = tool.get("name")
                if not isinstance(name, str) or not name:
                    raise Rejected(
                        400,
                        f"Missing required parameter: 'tools[{index}].name'.",
                        param=f"tools[{index}].name",
                        code="missing_required_parameter",
                    )
                problem = None
                if tool.get("strict", True):
                    problem = _strict_problem(tool.get("parameters") or {})
                if problem:
                    raise Rejected(
                        400,
                        f"Invalid schema for function '{name}': {problem}",
                        param=f"tools[{index}].parameters",
                        code="invalid_function_parameters",
                    )
            elif kind == "file_search" and not tool.get("vector_store_ids"):
                raise Rejected(
                    400,
                    f"Missing required parameter: 'tools[{index}].vector_store_ids'.",
                    param=f"tools[{index}].vector_store_ids",
                    code="missing_required_parameter",
                )
            elif kind == "code_interpreter" and "container" not in tool:
                raise Rejected(
                    400,
                    f"Missing required parameter: 'tools[{index}].container'.",
                    param=f"tools[{index}].container",
                    code="missing_required_parameter",
                )
            elif kind not in HOSTED_TOOL_TYPES and kind != "function":
                raise Rejected(
                    400,
                    f"Invalid value: '{kind}'. Supported values are: 'function', "
                    + ", ".join(f"'{value}'" for value in sorted(HOSTED_TOOL_TYPES)),
                    param=f"tools[{index}].type",
                    code="invalid_value",
                )

    def _check_format(self, body: dict[str, Any]) -> None:
        text = body.get("text")
        form = text.get("format") if isinstance(text, dict) else None
        if not isinstance(form, dict) or form.get("type") != "json_schema":
            return
        if not form.get("name") or not isinstance(form.get("schema"), dict):
            raise Rejected(
                400,
                "Missing required parameter: 'text.format.name' / 'text.format.schema'.",
                param="text.format",
            )
        if form.get("strict"):
            problem = _strict_problem(form["schema"])
            if problem:
                raise Rejected(
                    400,
                    f"Invalid schema for response_format '{form['name']}': {problem}",
                    param="text.format.schema",
                )

    def _check_item(self, item: Any, index: int, items: list[Any], calls: set[Any]) -> None:
        if isinstance(item, str):
            return
        if not isinstance(item, dict):
            raise Rejected(400, f"Invalid type for 'input[{index}]': expected an object.")
        kind = item.get("type") or ("message" if "role" in item else None)
        item_id = item.get("id")
        if kind == "reasoning":
            self._check_reasoning(item, index, items)
        elif kind == "compaction":
            if item.get("encrypted_content") not in self._compactions:
                raise Rejected(
                    400,
                    f"The encrypted content of compaction item input[{index}] could not be "
                    "verified: send back a compaction item as this server returned it.",
                    param=f"input[{index}].encrypted_content",
                    code="invalid_encrypted_content",
                )
            return
        elif kind == "function_call":
            if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
                raise Rejected(
                    400,
                    f"Missing required parameter: 'input[{index}].call_id' / 'name' / 'arguments'.",
                    param=f"input[{index}]",
                )
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                raise Rejected(
                    400,
                    "No tool call found for function call output with call_id "
                    f"{item.get('call_id')}.",
                    param="input",
                )
        elif kind == "message":
            self._check_message(item, index)
        elif kind == "item_reference":
            if item_id not in self._stored_items:
                raise self._not_found(item_id)
            return
        if isinstance(item_id, str) and kind not in ("reasoning",):
            # an item sent by its id must be one the server kept, even when sent whole
            hosted = isinstance(kind, str) and kind.endswith("_call") and kind != "function_call"
            if item_id not in self._stored_items and not hosted:
                raise self._not_found(item_id)

    def _not_found(self, item_id: Any) -> Rejected:
        return Rejected(
            404,
            f"Item with id '{item_id}' not found. Items are not persisted when `store` is set "
            "to false. Try again with `store` set to true, or remove this item from your "
            "input.",
            param="input",
        )

    def _check_reasoning(self, item: dict[str, Any], index: int, items: list[Any]) -> None:
        item_id = item.get("id")
        if not isinstance(item_id, str) or not isinstance(item.get("summary"), list):
            raise Rejected(
                400,
                f"Missing required parameter: 'input[{index}].id' / 'input[{index}].summary'.",
                param=f"input[{index}]",
            )
        encrypted = item.get("encrypted_content")
        if encrypted is not None:
            if self._encrypted.get(item_id) != encrypted:
                raise Rejected(
                    400,
                    f"The encrypted content for item {item_id} could not be verified.",
                    param=f"input[{index}].encrypted_content",
                    code="invalid_encrypted_content",
                )
        elif item_id not in self._stored_items:
            raise self._not_found(item_id)
        for later in items[index + 1 :]:
            kind = later.get("type") if isinstance(later, dict) else None
            if kind == "reasoning":
                continue
            role = later.get("role") if isinstance(later, dict) else None
            led_to = kind in _OUTPUT_TYPES and (kind != "message" or role == "assistant")
            led_to = led_to or role == "assistant"
            led_to = led_to or (isinstance(kind, str) and kind.endswith("_call"))
            if led_to:
                return
            break
        raise Rejected(
            400,
            f"Item '{item_id}' of type 'reasoning' was provided without its required following "
            "item.",
            param="input",
        )

    def _check_message(self, item: dict[str, Any], index: int) -> None:
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise Rejected(
                400,
                f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                "'developer', and 'user'.",
                param=f"input[{index}].role",
            )
        content = item.get("content")
        if isinstance(content, str):
            return
        if not isinstance(content, list):
            raise Rejected(400, f"Invalid type for 'input[{index}].content'.")
        for number, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"input[{index}].content[{number}]"
            if kind == "input_image" and not (part.get("image_url") or part.get("file_id")):
                raise Rejected(400, f"Missing required parameter: '{where}.image_url'.")
            if kind == "input_file":
                data = part.get("file_data")
                if data is None and not (part.get("file_id") or part.get("file_url")):
                    raise Rejected(400, f"Missing required parameter: '{where}.file_data'.")
                if data is not None and not str(data).startswith("data:"):
                    raise Rejected(400, f"Invalid '{where}.file_data': expected a base64 data URL.")
                if data is not None and not part.get("filename"):
                    raise Rejected(400, f"Missing required parameter: '{where}.filename'.")
            allowed = ("input_text", "input_image", "input_file", "output_text", "refusal")
            if kind not in allowed:
                raise Rejected(400, f"Invalid value: '{kind}' for '{where}.type'.")

    # --- building a response -----------------------------------------------------------------

    def _output(
        self, reply: ResponsesReply, body: dict[str, Any], compaction: dict[str, Any] | None
    ) -> list[dict[str, Any]]:
        settings = body.get("reasoning")
        reasoning: dict[str, Any] = settings if isinstance(settings, dict) else {}
        summarized = bool(reasoning.get("summary"))
        encrypted = "reasoning.encrypted_content" in (body.get("include") or ())
        output: list[dict[str, Any]] = [] if compaction is None else [compaction]
        for summary in reply.summaries:
            item_id = self._new_id("rs")
            token = "gAAAA" + secrets.token_urlsafe(24)
            self._encrypted[item_id] = token
            output.append(
                {
                    "id": item_id,
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}] if summarized else [],
                    "encrypted_content": token if encrypted else None,
                }
            )
        for hosted in reply.hosted_calls or ():
            kind = str(hosted.get("type", "web_search_call"))
            prefix = {"web_search_call": "ws", "file_search_call": "fs"}.get(kind, "ci")
            output.append({"id": self._new_id(prefix), "status": "completed", **hosted})
        if reply.content is not None or reply.refusal is not None:
            part: dict[str, Any]
            if reply.refusal is not None:
                part = {"type": "refusal", "refusal": reply.refusal}
            else:
                part = {"type": "output_text", "text": reply.content, "annotations": []}
            output.append(
                {
                    "id": self._new_id("msg"),
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [part],
                }
            )
        for call in reply.tool_calls or ():
            arguments = call.arguments
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            output.append(
                {
                    "id": self._new_id("fc"),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call.id or self._new_id("call"),
                    "name": call.name,
                    "arguments": arguments,
                }
            )
        return output

    def _response(
        self,
        reply: ResponsesReply,
        body: dict[str, Any],
        conversation: list[Any],
        compaction: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        output = self._output(reply, body, compaction)
        self.outputs.append(output)
        response_id = self._new_id("resp")
        given = reply.usage or {}
        read = [*conversation, *([] if compaction is None else [compaction])]
        input_tokens = given.get("input_tokens", sum(_item_words(i) for i in read))
        reasoning_tokens = given.get(
            "reasoning_tokens", sum(_words(s) for s in reply.summaries) * 3
        )
        output_tokens = given.get(
            "output_tokens", sum(_item_words(i) for i in output) + reasoning_tokens
        )
        status = "completed"
        if reply.failed is not None:
            status = "failed"
        elif reply.incomplete is not None:
            status = "incomplete"
        store = body.get("store", True)
        data = {
            "id": response_id,
            "object": "response",
            "created_at": payloads.CREATED,
            "status": status,
            "error": reply.failed,
            "incomplete_details": (
                {"reason": reply.incomplete} if reply.incomplete is not None else None
            ),
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": reply.model or body.get("model"),
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "store": store,
            "text": body.get("text") or {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": given.get("cached_tokens", 0)},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
                "total_tokens": input_tokens + output_tokens,
            },
            "metadata": body.get("metadata") or {},
        }
        if store and status == "completed":
            self.stored[response_id] = [*conversation, *output]
            self._stored_items.update(item["id"] for item in output)
        return data

    # --- answering ---------------------------------------------------------------------------

    async def handle(self, server: Any, body: dict[str, Any], conn: HttpConnection) -> None:
        """Answer one request to `server` (the `FakeOpenAIServer` this route belongs to, whose
        script queue, faults and settings it shares)."""
        try:
            conversation, compaction = self._check(body, server.context_window)
        except Rejected as exc:
            if server.record:
                self._record(body)
            await _send_json(conn, exc.body, exc.status)
            return
        item = await server._next(self, body)
        streaming = bool(body.get("stream"))
        answered, item = await server._apply_fault(item, conn, streaming)
        if answered:
            return
        fault = item if isinstance(item, Fault) else None
        if fault is not None or item is None:
            item = server.default_reply
            if item is None:
                item = "echo: " + _user_text(conversation)
        if isinstance(item, dict):
            await _send_json(conn, item)
            return
        try:
            reply = coerce_responses_reply(item)
        except TypeError as exc:
            await _send_json(conn, payloads.error_body(500, f"fake server: {exc}"), 500)
            return
        data = self._response(reply, body, conversation, compaction)
        if not streaming:
            await _send_json(conn, data)
            return
        await self._stream(conn, _events(data), fault)

    async def _stream(
        self, conn: HttpConnection, events: Iterator[dict[str, Any]], fault: Fault | None
    ) -> None:
        await conn.start_stream(headers={"x-request-id": self._new_id("req")})
        limit = fault.after_chunks if fault is not None else None
        for sent, event in enumerate(events):
            final = event["type"] in _FINAL_EVENTS
            if sent == limit or (final and fault is not None and fault.kind == "cut"):
                break
            await conn.send_chunk(_sse(event))
        if fault is None:
            await conn.end_stream()
        elif fault.kind == "drop":
            conn.drop()
        elif fault.kind == "cut":
            if fault.clean:
                conn.closing = True
                await conn.end_stream()
            else:
                conn.close()
        elif fault.kind == "stream_error":
            error = fault.body if isinstance(fault.body, dict) else {"message": str(fault.body)}
            event = {
                "type": "error",
                "code": error.get("code") or error.get("type"),
                "message": error.get("message", "fake server: error while generating"),
                "param": error.get("param"),
                "sequence_number": 0,
            }
            await conn.send_chunk(_sse(event))
            conn.closing = True
            await conn.end_stream()
        else:  # stall
            conn.closing = True
            await conn.wait_peer_closed()


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


async def _send_json(conn: HttpConnection, data: Any, status: int = 200) -> None:
    await conn.send(status, json.dumps(data).encode())


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def _pieces(text: str) -> list[str]:
    """``text`` in word-sized deltas (the spaces kept)."""
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]] if text else []


def _events(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The event stream of a response, numbered."""
    numbers = itertools.count()
    for event in _unnumbered(data):
        event["sequence_number"] = next(numbers)
        yield event


def _unnumbered(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    start = {**data, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "response": start}
    yield {"type": "response.in_progress", "response": start}
    for index, item in enumerate(data["output"]):
        yield from _item_events(index, item)
    final = {
        "completed": "response.completed",
        "incomplete": "response.incomplete",
        "failed": "response.failed",
    }[data["status"]]
    yield {"type": final, "response": data}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    where: dict[str, Any] = {"item_id": item["id"], "output_index": index}
    kind = item["type"]
    added: dict[str, Any] = {**item, "status": "in_progress"}
    if kind == "message":
        added["content"] = []
    elif kind == "function_call":
        added["arguments"] = ""
    elif kind == "reasoning":
        added["summary"] = []
    elif kind == "compaction":
        added = dict(item)
    yield {"type": "response.output_item.added", "output_index": index, "item": added}
    if kind == "compaction":
        yield {"type": "response.compaction.compacting", **where}
    if kind == "reasoning":
        for number, part in enumerate(item["summary"]):
            at = {**where, "summary_index": number}
            empty = {"type": "summary_text", "text": ""}
            yield {"type": "response.reasoning_summary_part.added", **at, "part": empty}
            for piece in _pieces(part["text"]):
                yield {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
            yield {"type": "response.reasoning_summary_text.done", **at, "text": part["text"]}
            yield {"type": "response.reasoning_summary_part.done", **at, "part": part}
    elif kind == "message":
        for number, part in enumerate(item["content"]):
            at = {**where, "content_index": number}
            refusal = part["type"] == "refusal"
            text = part["refusal"] if refusal else part["text"]
            empty = {**part, ("refusal" if refusal else "text"): ""}
            yield {"type": "response.content_part.added", **at, "part": empty}
            name = "response.refusal" if refusal else "response.output_text"
            for piece in _pieces(text):
                extra: dict[str, Any] = {} if refusal else {"logprobs": []}
                yield {"type": f"{name}.delta", **at, "delta": piece, **extra}
            done: dict[str, Any] = {"refusal": text} if refusal else {"text": text, "logprobs": []}
            yield {"type": f"{name}.done", **at, **done}
            yield {"type": "response.content_part.done", **at, "part": part}
    elif kind == "function_call":
        for piece in _pieces(item["arguments"]):
            yield {"type": "response.function_call_arguments.delta", **where, "delta": piece}
        yield {
            "type": "response.function_call_arguments.done",
            **where,
            "arguments": item["arguments"],
        }
    elif kind.endswith("_call"):
        name = f"response.{kind}"
        yield {"type": f"{name}.in_progress", **where}
        yield {"type": f"{name}.completed", **where}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}
