"""Run records: what an agent run did, step by step — the request it sent, the reply, every tool
call with its result or error and duration, and the usage.

Plain data with a JSON form (`to_dict` / `from_dict`). An agent builds one per run and hands it
to its tools in their `RunContext`; how a sub-agent's record reaches the parent's tool call (the
context variables behind `capture_records`) is in `promptimus.agents.run_record`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python

from .display import clip, html_table, plural, short_text
from .hosted import HostedToolCall
from .image import ImageContent
from .message import Message
from .usage import Usage

__all__ = ["CompactionRecord", "GuardrailRecord", "RunRecord", "StepRecord", "ToolCallRecord"]


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call: `arguments` exactly as the model wrote them, then either `result` (the text
    the model saw) or `error`. `children` are the run records of the sub-agents the tool ran (an
    agent used as a tool, or agents a function tool called), in start order. `server` names the
    server a remote tool ran on (an MCP server), None for a local tool; `images` are the images
    the result carried (shown to the model beside `result`). `hosted`: the provider's server ran
    the call while it wrote the reply (a web search, a code interpreter run): nothing ran here,
    `arguments` and `result` are what its item says (see `ToolCallRecord.of_hosted`)."""

    id: str | None
    name: str
    arguments: str
    result: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    children: list[RunRecord] = field(default_factory=list)
    approval: str | None = None
    """For a tool that asks for approval: "pending" while the run waits, then "approved" or
    "denied"; None for calls that needed none."""
    server: str | None = None
    images: tuple[ImageContent, ...] = ()
    hosted: bool = False

    @classmethod
    def of_hosted(cls, call: HostedToolCall) -> ToolCallRecord:
        """The record of a call the server ran: `arguments` its item's input fields as JSON
        (a search's `action`, the interpreter's `code`), `result` its output fields as JSON
        (`results`, `outputs`...), or its status when the item has none; a call the server
        says failed has `error` instead."""
        item = call.item
        given = {k: v for k, v in item.items() if k not in _HOSTED_META and k not in _HOSTED_OUT}
        out = {k: item[k] for k in _HOSTED_OUT if item.get(k) is not None}
        name = call.name or call.type.removesuffix("_call")
        if call.status in _HOSTED_FAILED or item.get("error") is not None:
            error = f"{name} failed on the server (status {call.status!r})"
            if item.get("error") is not None:
                error += f": {_json(item['error'])}"
            return cls(call.id, name, _json(given), error=error, hosted=True)
        result = _json(out) if out else (call.status or "")
        return cls(call.id, name, _json(given), result, hosted=True)

    @property
    def child(self) -> RunRecord | None:
        """The first sub-agent run (the agent itself when an agent is the tool), or None."""
        return self.children[0] if self.children else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see `RunRecord.to_dict`)."""
        return {
            "id": self.id,
            "name": self.name,
            "server": self.server,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "duration_s": self.duration_s,
            "images": [image.model_dump(mode="json", exclude_none=True) for image in self.images],
            "children": [child.to_dict() for child in self.children],
            **({"approval": self.approval} if self.approval is not None else {}),
            **({"hosted": True} if self.hosted else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        """The inverse of `to_dict` (a sub-agent's output comes back in its JSON form)."""
        return cls(
            data["id"],
            data["name"],
            data["arguments"],
            data.get("result"),
            data.get("error"),
            data.get("duration_s", 0.0),
            [RunRecord.from_dict(child) for child in data.get("children", [])],
            data.get("approval"),
            data.get("server"),
            tuple(ImageContent.model_validate(image) for image in data.get("images", ())),
            bool(data.get("hosted", False)),
        )


@dataclass(slots=True)
class StepRecord:
    """One LLM call within a run (`index` is 0-based) and the tool calls its reply asked for
    (`tool_calls`, in the reply's order: what ran here). The calls the server ran while it wrote
    the reply are `hosted_calls`."""

    index: int
    request: list[Message]
    reply: Message
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tools: list[str] | None = None
    """The tool names offered at this step when a step hook narrowed them; None: all of the
    agent's tools."""

    @property
    def hosted_calls(self) -> list[ToolCallRecord]:
        """The calls of hosted tools the server ran while it wrote the reply, as records
        (`hosted` set), read from the reply itself."""
        return [ToolCallRecord.of_hosted(call) for call in self.reply.hosted_calls or ()]

    @property
    def all_calls(self) -> list[ToolCallRecord]:
        """The server's calls (they came first), then those that ran here."""
        hosted = self.hosted_calls
        return [*hosted, *self.tool_calls] if hosted else self.tool_calls

    def __repr__(self) -> str:
        every = self.all_calls
        names = ", ".join(call.name for call in every)
        calls = f"{plural(len(every), 'tool call')}" + (f" ({names})" if names else "")
        return (
            f"<StepRecord {self.index}: {plural(len(self.request), 'message')} sent, {calls}, "
            f"{self.usage.total_tokens} tokens; reply {clip(short_text(self.reply))!r}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (see `RunRecord.to_dict`)."""
        return {
            "index": self.index,
            "request": [_message_dict(message) for message in self.request],
            "reply": _message_dict(self.reply),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "usage": self.usage.model_dump(mode="json"),
            **({"tools": list(self.tools)} if self.tools is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepRecord:
        """The inverse of `to_dict`."""
        return cls(
            data["index"],
            [Message.model_validate(message) for message in data["request"]],
            Message.model_validate(data["reply"]),
            [ToolCallRecord.from_dict(call) for call in data.get("tool_calls", [])],
            Usage.model_validate(data.get("usage", {})),
            data.get("tools"),
        )


@dataclass(slots=True)
class GuardrailRecord:
    """What one guardrail decided in a run: `guard` (its module path), `kind` ("input",
    "output", "tool"), `action` ("allow", "block", "replace"), its `reason`, the `step` it
    decided at and, for a tool guardrail, the `tool_call_id` it checked."""

    guard: str
    kind: str
    action: str
    reason: str | None = None
    step: int = 0
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "guard": self.guard,
            "kind": self.kind,
            "action": self.action,
            "reason": self.reason,
            "step": self.step,
            **({"tool_call_id": self.tool_call_id} if self.tool_call_id is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuardrailRecord:
        return cls(
            data["guard"],
            data["kind"],
            data["action"],
            data.get("reason"),
            data.get("step", 0),
            data.get("tool_call_id"),
        )


@dataclass(slots=True)
class CompactionRecord:
    """One compaction of a run's conversation, before step `step`'s request: its estimated size
    in tokens before and after, the compaction `steps` that ran ("clear_tool_results",
    "clear_thinking", "summarize", "native") and what they cost (`usage`: a summary's call)."""

    step: int
    tokens_before: int
    tokens_after: int
    steps: tuple[str, ...]
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "steps": list(self.steps),
            "usage": self.usage.model_dump(mode="json"),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompactionRecord:
        return cls(
            data["step"],
            data["tokens_before"],
            data["tokens_after"],
            tuple(data.get("steps", ())),
            Usage.model_validate(data.get("usage", {})),
        )


@dataclass(slots=True)
class RunRecord:
    """A whole run: its steps in order, its final `output`, what its guardrails decided, and
    the compactions of its conversation (their cost is part of `usage`)."""

    steps: list[StepRecord] = field(default_factory=list)
    output: Any = None
    guardrails: list[GuardrailRecord] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)

    @property
    def usage(self) -> Usage:
        """Tokens used by this run's own LLM calls plus those of every sub-agent it called."""
        return Usage.total(self._usages())

    def _usages(self) -> Iterator[Usage]:
        for compaction in self.compactions:
            yield compaction.usage
        for step in self.steps:
            yield step.usage
            for call in step.tool_calls:
                for child in call.children:
                    yield from child._usages()

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        """Every tool call of this run (not of its children), in order; those the server ran
        have `hosted` set."""
        return [call for step in self.steps for call in step.all_calls]

    def to_dict(self) -> dict[str, Any]:
        """The whole run as plain dicts, lists and scalars, ready for `json.dumps` (to log or
        store it): `output` (pydantic models and dataclasses dumped, anything else unknown as
        its `str`), `usage` (this run plus its sub-agents), and every step with its request,
        reply, tool calls and their sub-agent runs."""
        return {
            "output": to_jsonable_python(self.output, fallback=str),
            "usage": self.usage.model_dump(mode="json"),
            "steps": [step.to_dict() for step in self.steps],
            **(
                {"guardrails": [entry.to_dict() for entry in self.guardrails]}
                if self.guardrails
                else {}
            ),
            **(
                {"compactions": [entry.to_dict() for entry in self.compactions]}
                if self.compactions
                else {}
            ),
        }

    # --- display: a short summary; `steps` and `to_dict()` hold everything ------------------

    def summary(self) -> str:
        """One line: steps, tool calls (failed ones counted), tokens."""
        calls = self.tool_calls
        failed = sum(call.error is not None for call in calls)
        hosted = sum(call.hosted for call in calls)
        text = f"{plural(len(self.steps), 'step')}, {plural(len(calls), 'tool call')}"
        notes = [f"{failed} failed"] * bool(failed) + [f"{hosted} ran on the server"] * bool(hosted)
        if notes:
            text += f" ({', '.join(notes)})"
        if self.compactions:
            text += f", {plural(len(self.compactions), 'compaction')}"
        return f"{text}, {self.usage}"

    def __repr__(self) -> str:
        return f"<RunRecord: {self.summary()}; output {clip(short_text(self.output))!r}>"

    def __str__(self) -> str:
        lines = [f"RunRecord: {self.summary()}"]
        for step in self.steps:
            for call in step.all_calls:
                outcome = f"failed: {call.error}" if call.error is not None else call.result
                where = " (ran on the server)" if call.hosted else ""
                lines.append(f"  step {step.index}: {call.name}({clip(call.arguments, 40)}){where}")
                lines.append(f"    -> {clip(str(outcome), 70)}")
        lines.append(f"  output: {clip(short_text(self.output), 100)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [
            (
                step.index,
                ", ".join(call.name for call in step.all_calls) or "(answer)",
                step.usage.total_tokens,
                clip(short_text(step.reply), 80),
            )
            for step in self.steps
        ]
        header = ["step", "tool calls", "tokens", "reply"]
        return html_table(f"RunRecord: {self.summary()}", header, rows)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """The inverse of `to_dict`: the steps come back whole; `output` in its JSON form
        (a model instance as a dict), since `to_dict` keeps no type."""
        return cls(
            [StepRecord.from_dict(step) for step in data.get("steps", [])],
            data.get("output"),
            [GuardrailRecord.from_dict(entry) for entry in data.get("guardrails", [])],
            [CompactionRecord.from_dict(entry) for entry in data.get("compactions", [])],
        )


_HOSTED_META = frozenset({"id", "type", "status"})
_HOSTED_OUT = ("results", "outputs", "output", "result", "error")
_HOSTED_FAILED = frozenset({"failed", "incomplete"})


def _json(value: Any) -> str:
    return json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)


def _message_dict(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_none=True)
