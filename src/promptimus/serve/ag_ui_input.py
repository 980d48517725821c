"""Reading an AG-UI `RunAgentInput`: validated with the `ag-ui-protocol` models, then reduced to
what the run needs (the new user messages, the tool results the client sends back, its tools,
its state and context). Anything that does not validate is `Refused` 400, naming the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    RunAgentInput,
    StateSnapshotEvent,
    TextPart,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import Tool as ClientTool
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from ..dto import Message, MessageRole
from .refusal import Refused

__all__ = ["ClientTool", "RunInput", "read_run_input"]


@dataclass
class RunInput:
    """A checked request: `new` the user messages after the conversation's last reply (with the
    context first, as a message of its own), `results` the client's tool results after it
    (call id to content, in order), `resume` its answers to interrupts (interrupt id to
    (status, payload))."""

    given: RunAgentInput
    new: list[Message]
    results: dict[str, str] = field(default_factory=dict)
    tools: list[ClientTool] = field(default_factory=list)
    resume: dict[str, tuple[str, Any]] = field(default_factory=dict)

    @property
    def thread_id(self) -> str:
        return self.given.thread_id

    @property
    def run_id(self) -> str:
        return self.given.run_id


def _where(error: Any) -> str:
    return ".".join(str(part) for part in error.get("loc", ())) or "the body"


def _validated(body: Any) -> RunAgentInput:
    if not isinstance(body, dict):
        raise Refused(400, "The body must be a JSON object (a RunAgentInput).", "invalid_request")
    try:
        return RunAgentInput.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        raise Refused(
            400,
            f"The body is not a valid RunAgentInput: {_where(first)}: {first.get('msg')} "
            f"({exc.error_count()} problem(s)).",
            "invalid_input",
        ) from None
    except RecursionError:
        raise Refused(400, "The request body nests too deeply.", "invalid_input") from None


def _text(message: UserMessage, index: int) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = []
    for part in message.content:
        if not isinstance(part, TextPart):
            raise Refused(
                400,
                f"messages[{index}]: only text parts are supported here, got "
                f"{getattr(part, 'type', type(part).__name__)!r}.",
                "invalid_content",
            )
        parts.append(part.text)
    return "".join(parts)


def _tool_content(message: ToolMessage, index: int) -> str:
    if isinstance(message.content, str):
        return message.content
    if all(isinstance(part, TextPart) for part in message.content):
        return "".join(part.text for part in message.content if isinstance(part, TextPart))
    raise Refused(400, f"messages[{index}]: a tool result must be text here.", "invalid_content")


def _check_state(state: Any) -> None:
    """The state must come back out as JSON (a STATE_SNAPSHOT): refuse now what cannot."""
    try:
        StateSnapshotEvent(snapshot=state).model_dump_json()
    except (ValueError, RecursionError, PydanticSerializationError):
        raise Refused(
            400, "state nests too deeply to be sent back; send a flatter state.", "invalid_state"
        ) from None


def read_run_input(body: Any) -> RunInput:
    """`body` (parsed JSON) as a `RunInput`, or `Refused` 400."""
    given = _validated(body)
    if not given.thread_id.strip():
        raise Refused(400, "threadId must name the conversation.", "invalid_input")
    if given.state is not None:
        _check_state(given.state)
    messages = given.messages
    start = len(messages)
    while start > 0 and not isinstance(messages[start - 1], AssistantMessage):
        start -= 1
    new: list[Message] = []
    results: dict[str, str] = {}
    for index in range(start, len(messages)):
        message = messages[index]
        if isinstance(message, UserMessage):
            new.append(Message(role=MessageRole.USER, content=_text(message, index)))
        elif isinstance(message, ToolMessage):
            if message.tool_call_id in results:
                raise Refused(
                    400,
                    f"messages[{index}] answers the tool call {message.tool_call_id!r} twice.",
                    "invalid_tool_result",
                )
            results[message.tool_call_id] = _tool_content(message, index)
        # system and developer messages: the module has its own instructions; activity and
        # reasoning messages are the client's record of what it was shown
    if new and given.context:
        lines = "\n".join(f"- {item.description}: {item.value}" for item in given.context)
        new.insert(0, Message(role=MessageRole.USER, content=f"Context:\n{lines}"))
    names = [tool.name for tool in given.tools or []]
    if len(set(names)) != len(names):
        raise Refused(400, "tools: each tool needs a name of its own.", "invalid_tools")
    resume: dict[str, tuple[str, Any]] = {
        entry.interrupt_id: (str(entry.status), entry.payload) for entry in given.resume or []
    }
    return RunInput(given, new, results, list(given.tools or []), resume)
