"""`ToolCallingAgent`: an agent on the ReACT text protocol, for models without native tool calls.

The model writes `Thought:` / `Action:` / `Action Input: {json}` to use a tool, or `Thought:` /
`Answer:` to finish (see `react_parser` for what the parser forgives). Tool results come back as
`Observation: ...` messages in `observation_role`. Replies that cannot be parsed, unknown tools,
bad arguments and tool exceptions are all sent back for the model to correct; every LLM call
counts against `max_steps`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._compat_seam import compat_calls
from ..core import Module
from ..dto import Message, MessageRole
from ..dto.run_record import ToolCallRecord
from ..errors import InvalidArgument, ReactParseError
from ..guardrails.guardrail import Guardrail
from ..modules.compaction import Compactor
from ..modules.memory import Memory
from ..prompts.prompt import Prompt
from ..prompts.template import template_fields
from ..tools.run_context import HandoffView
from ..tools.tool import DEFAULT_TOOL_TIMEOUT, Tool, handoff_messages
from .base_agent import Act, BaseAgent, Decision, Final, LoopState, Retry, ToolInvocation
from .nesting import DEFAULT_MAX_NESTING
from .react_parser import ReactAction, ReactAnswer, parse_react
from .tool_limits import DEFAULT_MAX_TOOL_CONCURRENCY

__all__ = ["DEFAULT_PROMPT", "REACT_PROTOCOL", "ToolCallingAgent"]

REACT_PROTOCOL = """\
## Tools
You can use these tools:
{tool_desc}

## How to reply
Work one step at a time. To use a tool, reply with exactly:
Thought: <why you need the tool>
Action: <one tool name from {tool_names}>
Action Input: <the arguments as one JSON object, e.g. {{"city": "Paris"}}; {{}} if there are none>

Then stop: the tool's result arrives in the next message as `Observation: ...`. Never write an
Observation yourself.

When you can answer, reply with exactly:
Thought: <your reasoning>
Answer: <your answer to the user>"""

DEFAULT_PROMPT = (
    "You are a helpful assistant who answers questions, using tools when they help.\n\n"
    + REACT_PROTOCOL
)

OBSERVATION_TEMPLATE = "Observation: {output}"


class ToolCallingAgent(BaseAgent[Message]):
    """A ReACT agent. `forward` returns the answer as an assistant `Message`.

    Its arguments come in `OpenaiToolCallingAgent`'s order, `(prompt, tools, max_steps, ...)`,
    so the two swap freely; the tools-first order `(tools, max_steps, memory_size, prompt, ...)`
    of earlier versions is taken too.

    `prompt` (default `DEFAULT_PROMPT`) is a template with `{tool_desc}` and `{tool_names}`; a
    template without `{tool_desc}` gets the ReACT instructions appended. A callable
    `(ctx: RunContext) -> str` is computed before every LLM call and followed by the
    instructions. Checkpointed: `predictor.prompt.prompt` (or `predictor.prompt.suffix`) and
    each tool's description.

    `observation_role`: the role of `Observation:` messages. `user` (the default) is accepted by
    every server; `system` suits some local models; `tool` only servers that take a tool message
    without a `tool_call_id` (the OpenAI API rejects that).
    """

    @compat_calls("agents:react_agent_arguments")
    def __init__(
        self,
        prompt: str | Prompt | Callable[..., Any] | None = None,
        tools: Iterable[Tool | Module | Callable[..., Any]] = (),
        max_steps: int = 5,
        memory_size: int = 20,
        observation_role: MessageRole | str = MessageRole.USER,
        shared_memory: Memory | None = None,
        *,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_nesting: int = DEFAULT_MAX_NESTING,
        max_tool_concurrency: int | None = DEFAULT_MAX_TOOL_CONCURRENCY,
        max_tool_calls_per_step: int | None = None,
        guardrails: Iterable[Guardrail] | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        if prompt is None:
            prompt = DEFAULT_PROMPT
        elif isinstance(prompt, str) and "tool_desc" not in template_fields(prompt):
            prompt = f"{prompt}\n\n{REACT_PROTOCOL}"
        elif isinstance(prompt, Prompt) and isinstance(prompt.prompt.value, str):
            text = prompt.prompt.value  # a prompt module given whole gets the protocol too
            if "tool_desc" not in template_fields(text):
                prompt.prompt.value = f"{text}\n\n{REACT_PROTOCOL}"
        super().__init__(
            tools,
            prompt,
            max_steps=max_steps,
            memory_size=memory_size,
            shared_memory=shared_memory,
            dynamic_suffix=REACT_PROTOCOL,
            tool_timeout=tool_timeout,
            max_nesting=max_nesting,
            max_tool_concurrency=max_tool_concurrency,
            max_tool_calls_per_step=max_tool_calls_per_step,
            guardrails=guardrails,
            compactor=compactor,
        )
        self.observation_role = _observation_role(observation_role)

    def _variables(
        self, prompt_vars: dict[str, Any], tools: list[Tool] | None = None
    ) -> dict[str, Any]:
        if tools is None:
            tools = self._all_tools()
        return {
            "tool_desc": "\n".join(t.describe_for_prompt() for t in tools) or "(no tools)",
            "tool_names": ", ".join(t.name for t in tools) or "(none)",
            **prompt_vars,
        }

    def _handoff_view(self) -> HandoffView:
        return self._handoff_messages

    def _handoff_messages(self, messages: list[Message], include_tool_loop: bool) -> list[Message]:
        """The conversation for a handed-off sub-agent: the ReACT tool loop (an `Action:` reply
        and the `Observation:` that answers it) is kept only with `include_tool_loop`; the
        action being executed right now (no observation yet) is always left out."""
        out: list[Message] = []
        pending: Message | None = None  # an Action reply waiting for its observation
        for message in messages:
            if pending is not None:
                if message.role == self.observation_role and message.content.startswith(
                    OBSERVATION_TEMPLATE.format(output="")
                ):
                    if include_tool_loop:
                        out.extend((pending, message))
                    pending = None
                    continue
                out.append(pending)  # not answered by an observation: ordinary text
                pending = None
            if message.role == MessageRole.ASSISTANT and _is_action(message.content):
                pending = message
                continue
            out.append(message)
        return handoff_messages(out, include_tool_loop)

    def _interpret(self, reply: Message, state: LoopState) -> Decision:
        try:
            parsed = parse_react(reply.content)
        except ReactParseError as exc:
            return Retry(Message(role=self.observation_role, content=str(exc)))
        if isinstance(parsed, ReactAnswer):
            return Final(Message(role=MessageRole.ASSISTANT, content=parsed.answer), reply)
        call = ToolInvocation(None, parsed.tool, parsed.arguments_text, parsed.arguments)
        # the reasoning that led to the action goes back with it (a Responses reasoning item
        # must precede what it led to; a signed thinking block stays valid)
        cleaned = Message(role=MessageRole.ASSISTANT, content=parsed.text, thinking=reply.thinking)
        return Act([call], cleaned)

    def _observations(
        self, calls: list[ToolInvocation], records: list[ToolCallRecord]
    ) -> list[Message]:
        """The `Observation:` message; images the result carried go in it when it is a user
        message, else in a user message right after it (chat APIs take images only there)."""
        messages: list[Message] = []
        for entry in records:
            text = OBSERVATION_TEMPLATE.format(output=self._result_text(entry))
            if entry.images and self.observation_role is MessageRole.USER:
                messages.append(
                    Message(role=MessageRole.USER, content=text, images=list(entry.images))
                )
                continue
            messages.append(Message(role=self.observation_role, content=text))
            if entry.images:
                messages.append(self._images_message(entry))
        return messages


def _observation_role(value: MessageRole | str) -> MessageRole:
    try:
        role = MessageRole(value)
    except ValueError:
        role = None
    if role is None or role is MessageRole.ASSISTANT:
        raise InvalidArgument(
            f"observation_role must be 'user', 'system' or 'tool', got {value!r}: observations "
            "come from outside the model ('user' works with every server)."
        )
    return role


def _is_action(text: str) -> bool:
    try:
        return isinstance(parse_react(text), ReactAction)
    except ReactParseError:
        return False
