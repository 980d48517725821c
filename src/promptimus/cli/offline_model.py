"""`--model fake`: an offline stand-in for a language model, so every command runs without a key.

It runs in-process (no server, no port, no network) and says plainly that it is not a model:
each reply starts with `[OFFLINE fake model]`, repeats the last user message and counts the
messages it was sent, so a chat shows that its memory works.

When the request offers tools, it shows the tool loop too: its first reply calls the first tool
offered, once, with arguments made from the tool's schema (the request's text for a string, 1 for
a number, a default or the first allowed value where the schema gives one); once the result is
back, it answers with what the tool returned. It speaks both ways agents offer tools: native tool
calls (`tools=[...]` in the request) and the ReACT text protocol (`Action:` / `Action Input:`,
the tools found by name among the module's).

When the request asks for structured output (a `response_format` with a JSON schema, as
`StructuralOutput` sends it), its answer is a JSON object made from that schema the same way,
its text fields starting with the marker, so `structural_output=` agents run offline too.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from ..dto import Message, MessageDelta, MessageRole, ToolFunction, ToolRequest, Usage
from ..llms.scripted import split_message
from ..modules.answer_tool import ANSWER_TOOL_NAME

__all__ = ["MARKER", "OfflineModel"]

MARKER = "[OFFLINE fake model]"

_REACT_TOOLS = re.compile(r"Action: <one tool name from (?P<names>[^>\n]*)>")
_OBSERVATION = "Observation:"


def _sample(schema: Mapping[str, Any], said: str, defs: Mapping[str, Any]) -> Any:
    """A value that fits `schema`, made up (the model is fake) but of the right kind; `defs`
    are the schemas a `$ref` may name (`#/$defs/Name`)."""
    reference = schema.get("$ref")
    if isinstance(reference, str):
        target = defs.get(reference.rpartition("/")[2])
        return _sample(target, said, defs) if isinstance(target, Mapping) else None
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            usable = [o for o in options if isinstance(o, Mapping) and o.get("type") != "null"]
            if usable:
                return _sample(usable[0], said, defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        return _arguments(schema, said, defs)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        number = low + 1 if isinstance(low, int | float) and not isinstance(low, bool) else 1
        return int(number) if kind == "integer" else number
    samples: dict[str, Any] = {"boolean": True, "array": [], "null": None}
    return samples.get(kind, said[:200]) if isinstance(kind, str) else said[:200]


def _arguments(
    schema: Mapping[str, Any], said: str, defs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Arguments for the required parameters of a tool's JSON schema."""
    if defs is None:
        found = schema.get("$defs")
        defs = found if isinstance(found, Mapping) else {}
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = schema.get("required")
    names = required if isinstance(required, list) else []
    return {
        name: _sample(properties[name], said, defs)
        for name in names
        if isinstance(name, str) and isinstance(properties.get(name), Mapping)
    }


def _output_schema(kwargs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema a request's `response_format` asks the answer to fit, if any: native
    (`json_schema.schema`) or a JSON object with a schema beside it."""
    response_format = kwargs.get("response_format")
    if not isinstance(response_format, Mapping):
        return None
    inner = response_format.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, Mapping) else response_format.get("schema")
    return schema if isinstance(schema, Mapping) else None


_ANSWER_TOOL = re.compile(rf"{ANSWER_TOOL_NAME}(_\d+)?")


def _native_tools(kwargs: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    offered = []
    for entry in kwargs.get("tools") or ():
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            offered.append(
                (function["name"], parameters if isinstance(parameters, Mapping) else {})
            )
    return offered


class OfflineModel:
    """`tools` maps the module's tool names to their parameter schemas, for the ReACT protocol
    (whose requests name the tools in text only)."""

    model_name = "fake"

    def __init__(self, tools: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._tools = dict(tools or {})
        self._calls = 0

    def __repr__(self) -> str:
        return "OfflineModel()"

    def _react_tools(self, history: list[Message]) -> list[tuple[str, Mapping[str, Any]]]:
        system = next((m.content for m in history if m.role == MessageRole.SYSTEM), "")
        found = _REACT_TOOLS.search(system)
        if found is None:
            return []
        names = [name.strip() for name in found["names"].split(",")]
        return [(name, self._tools.get(name, {})) for name in names if name in self._tools]

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        offered = _native_tools(kwargs)
        # an agent with tools asks for its structured answer as one more tool (`final_result`)
        answer = [(name, schema) for name, schema in offered if _ANSWER_TOOL.fullmatch(name)]
        native = [entry for entry in offered if entry not in answer]
        react = [] if offered else self._react_tools(history)
        asked = [m for m in history if m.role == MessageRole.USER]
        said = next((m.content for m in reversed(asked) if not _is_observation(m)), "")
        since_request = _since_last_request(history)
        text = (
            f"{MARKER} You said: {said!r}. I saw {len(history)} messages; no language model "
            "was called (pass --model provider:name for real answers)."
        )
        tool_calls: list[ToolRequest] = []
        if native and not any(m.role == MessageRole.TOOL for m in since_request):
            name, schema = native[0]
            self._calls += 1
            arguments = json.dumps(_arguments(schema, said))
            tool_calls = [
                ToolRequest(
                    id=f"offline-{self._calls}",
                    function=ToolFunction(name=name, arguments=arguments),
                )
            ]
            text = f"{MARKER} Calling the tool {name!r} with made-up arguments {arguments}."
        elif native:
            results = [m.content for m in since_request if m.role == MessageRole.TOOL]
            text = f"{text} The tool returned: {results[-1]}"
        elif react and not any(_is_observation(m) for m in since_request):
            name, schema = react[0]
            arguments = json.dumps(_arguments(schema, said))
            text = (
                f"Thought: {MARKER} calling the tool {name!r} with made-up arguments.\n"
                f"Action: {name}\nAction Input: {arguments}"
            )
        elif react:
            observed = [m.content for m in since_request if _is_observation(m)][-1]
            returned = observed.removeprefix(_OBSERVATION).strip()
            text = f"Thought: the tool answered.\nAnswer: {text} The tool returned: {returned}"
        if answer and not tool_calls:
            name, schema = answer[0]
            self._calls += 1
            arguments = json.dumps(_arguments(schema, f"{MARKER} {said}"), ensure_ascii=False)
            tool_calls = [
                ToolRequest(
                    id=f"offline-{self._calls}",
                    function=ToolFunction(name=name, arguments=arguments),
                )
            ]
            text = ""
        output_schema = _output_schema(kwargs)
        if output_schema is not None and not tool_calls:
            text = json.dumps(_arguments(output_schema, f"{MARKER} {said}"), ensure_ascii=False)
        return self._reply(history, text, tool_calls)

    def _reply(self, history: list[Message], text: str, tool_calls: list[ToolRequest]) -> Message:
        words_in = sum(len(m.content.split()) for m in history)
        words_out = len(text.split())
        usage = Usage(
            prompt_tokens=words_in, completion_tokens=words_out, total_tokens=words_in + words_out
        )
        return Message(
            role=MessageRole.ASSISTANT,
            content=text,
            tool_calls=tool_calls or None,
            finish_reason="tool_calls" if tool_calls else "stop",
            usage=usage,
            model_name=self.model_name,
        )

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        for delta in split_message(await self.achat(history, **kwargs)):
            yield delta


def _is_observation(message: Message) -> bool:
    return message.role == MessageRole.USER and message.content.startswith(_OBSERVATION)


def _since_last_request(history: Iterable[Message]) -> list[Message]:
    """The messages after the user's last request (tool results, observations, replies)."""
    messages = list(history)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == MessageRole.USER and not _is_observation(messages[index]):
            return messages[index + 1 :]
    return messages
