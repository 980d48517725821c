"""`OpenaiToolCallingAgent`: an agent on native (OpenAI-style) tool calling.

    @Tool.decorate
    def weather(city: str) -> str:
        '''Current weather in a city.'''
        return f"Sunny in {city}"

    agent = OpenaiToolCallingAgent("You are a travel assistant.", [weather]).with_llm(llm)
    reply = await agent("Should I pack an umbrella for Paris?")   # a Message

- Several tool calls in one reply run concurrently; their results go back in request order, each
  with its `tool_call_id`.
- Invalid JSON arguments, arguments that fail validation, unknown tool names and exceptions raised
  inside a tool go back to the model as the tool's result (`Error: ...`), so it can correct itself.
- `max_steps` bounds the LLM calls of one run; past it, `MaxIterExceeded` carries the messages.
- With `structural_output` (a pydantic model class or a `StructuralOutput`), the output is a
  validated instance of the model. `output_mode` says how the model is asked for it (see
  `promptimus.modules.answer_tool`): "tool" (the default with tools) offers one more tool,
  `final_result`, whose arguments are the answer; "native" (the default without tools) sends
  `response_format`; "prompted" puts the schema in a system message. In every mode a reply of
  valid JSON text is taken as the answer; an invalid answer is sent back with the errors, at
  most `n_retries` times (these retries do not use steps), then `FailedToParseOutput`.
- The answer tool is not a tool of the agent: it runs nothing, shows no `ToolCallEvent`, has
  no `ToolCallRecord`; the step's reply (`StepRecord.reply`, `StepEnd.message`) holds the call
  as the model made it, and the memory keeps the answer as the assistant's JSON text. A call of
  it made while other calls of the same reply are pending is not taken: those calls run, and
  the model reads that its answer was not taken (it answers again with their results in).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from ..core import Module
from ..dto import Message, MessageRole
from ..dto.run_record import ToolCallRecord
from ..dto.tool import ToolRequest
from ..errors import FailedToParseOutput, InvalidArgument, RequestRejected
from ..guardrails.guardrail import Guardrail
from ..modules.answer_tool import (
    OutputMode,
    answer_tool,
    answer_tool_name,
    check_output_mode,
    not_taken_text,
)
from ..modules.compaction import Compactor
from ..modules.memory import Memory
from ..modules.partial_output_stream import StreamedAnswer
from ..modules.structural import StructuralOutput
from ..tools.hosted import HostedTool
from ..tools.tool import DEFAULT_TOOL_TIMEOUT, Tool
from .base_agent import Act, BaseAgent, Decision, Final, LoopState, Retry, ToolInvocation
from .nesting import DEFAULT_MAX_NESTING
from .tool_limits import DEFAULT_MAX_TOOL_CONCURRENCY

__all__ = ["OpenaiToolCallingAgent"]

DEFAULT_PROMPT = "You are a helpful assistant. Use the tools when they help you answer."


class OpenaiToolCallingAgent(BaseAgent[Any]):
    """An agent that uses the model's native tool calls.

    `prompt` is a system prompt template (filled from `forward`'s keyword arguments) or a
    callable `(ctx: RunContext) -> str` computed before every LLM call. `forward` returns the final
    assistant `Message`, or the validated model instance with `structural_output`.

    Checkpointed parameters: `predictor.prompt.prompt` (the system prompt), each tool's
    `tools.<name>.description`, and `structural_output.*` when `structural_output` is a
    `StructuralOutput` (a model class alone adds no keys, as in the original).
    """

    _sends_hosted_tools = True

    def __init__(
        self,
        prompt: str | Callable[..., Any] | None,
        tools: Iterable[Tool | Module | Callable[..., Any] | HostedTool] = (),
        max_steps: int = 5,
        memory_size: int = 50,
        structural_output: type[BaseModel] | StructuralOutput[Any] | None = None,
        shared_memory: Memory | None = None,
        *,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_nesting: int = DEFAULT_MAX_NESTING,
        max_tool_concurrency: int | None = DEFAULT_MAX_TOOL_CONCURRENCY,
        max_tool_calls_per_step: int | None = None,
        guardrails: Iterable[Guardrail] | None = None,
        output_mode: OutputMode | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        mode = check_output_mode(output_mode)
        if mode is not None and structural_output is None:
            raise InvalidArgument(
                f"output_mode={mode!r} chooses how a structured answer is asked for; give "
                "structural_output= (a pydantic model class) too, or leave output_mode out."
            )
        super().__init__(
            tools,
            prompt if prompt is not None else DEFAULT_PROMPT,
            max_steps=max_steps,
            memory_size=memory_size,
            shared_memory=shared_memory,
            tool_timeout=tool_timeout,
            max_nesting=max_nesting,
            max_tool_concurrency=max_tool_concurrency,
            max_tool_calls_per_step=max_tool_calls_per_step,
            guardrails=guardrails,
            compactor=compactor,
        )
        # A model class (the original's form) keeps its StructuralOutput private, so the tree has
        # the original's checkpoint keys; a StructuralOutput instance is registered (and tuned).
        if structural_output is not None and not isinstance(structural_output, StructuralOutput):
            self._output: StructuralOutput[Any] | None = StructuralOutput(structural_output)
        else:
            self._output = structural_output
            if structural_output is not None:
                self.structural_output = structural_output
        self.output_mode: OutputMode | None = mode
        """How the structured answer is asked for; None: "tool" when the agent has tools at
        the time of a request, else "native" (or "prompted" for a prompted StructuralOutput)."""

    @property
    def structural_output_model(self) -> type[BaseModel] | None:
        """The pydantic model of the final answer, or None (the original's attribute)."""
        return None if self._output is None else self._output.output_model

    def _mode(self, has_tools: bool) -> OutputMode | None:
        """How this request asks for the structured answer (None: the output is a message)."""
        output = self._output
        if output is None:
            return None
        if self.output_mode is not None:
            return self.output_mode
        if has_tools:
            return "tool"
        return "native" if output.native else "prompted"

    def _partial_reader(self, state: LoopState | None = None) -> StreamedAnswer | None:
        if self._output is None:
            return None
        tool = state.answer_tool if state is not None else None
        return StreamedAnswer(self._output.output_model, tool)

    def _provider_kwargs(self, state: LoopState | None = None) -> dict[str, Any]:
        """The tools (with the answer tool in "tool" mode, its name kept in `state`) and the
        `response_format` in "native" mode."""
        kwargs: dict[str, Any] = {}
        tools = self._all_tools()
        entries = [tool.to_openai() for tool in tools]
        entries += [tool.to_openai() for tool in self._hosted_tools]  # the server runs these
        mode = self._mode(bool(tools))
        if state is not None:
            state.answer_tool = None
        if mode == "tool":
            assert self._output is not None
            name = answer_tool_name([tool.name for tool in tools])
            entries.append(answer_tool(self._output.output_model, name))
            if state is not None:
                state.answer_tool = name
        if entries:
            kwargs["tools"] = entries
        if mode == "native":
            assert self._output is not None
            kwargs.update(self._output.provider_kwargs(state.response_format if state else None))
        return kwargs

    def _step_provider_kwargs(self, kwargs: dict[str, Any], tools: list[Tool]) -> dict[str, Any]:
        """`kwargs` offering only `tools` of the agent's, and still the answer tool."""
        narrowed = {key: value for key, value in kwargs.items() if key != "tools"}
        entries = [tool.to_openai() for tool in tools]
        entries += [
            entry
            for entry in kwargs.get("tools", ())
            if self._tool(entry.get("function", {}).get("name", "")) is None
        ]
        if entries:
            narrowed["tools"] = entries
        return narrowed

    def _preamble(self, variables: dict[str, Any], state: LoopState | None = None) -> list[Message]:
        output = self._output
        mode = self._mode(bool(self._all_tools()))
        if output is None or mode == "tool":
            return []
        if not output.native:
            return [output.system_message(**variables)]
        if mode == "prompted":
            extra = output.schema_instructions("prompted")
        else:
            extra = output.schema_instructions(state.response_format) if state else None
        return [extra] if extra is not None else []

    # structured output degrades like StructuralOutput.forward on servers that reject its format
    def _begin_run(self, llm: Any, state: LoopState) -> None:
        if self._output is not None:
            state.response_format = self._output.mode_for(llm)

    def _on_rejected(self, llm: Any, error: RequestRejected, state: LoopState) -> bool:
        if self._output is None or state.response_format is None or state.answer_tool:
            return False
        if self._mode(bool(self._all_tools())) != "native":
            return False
        weaker = self._output.fall_back(state.response_format, error)
        if weaker is None:
            return False
        state.response_format = weaker
        return True

    def _on_accepted(self, llm: Any, state: LoopState) -> None:
        if self._output is None or state.response_format is None or state.answer_tool:
            return
        if self._mode(bool(self._all_tools())) == "native":
            self._output.accepted(llm, state.response_format)

    def _interpret(self, reply: Message, state: LoopState) -> Decision:
        name = state.answer_tool
        if reply.tool_calls:
            answers = [call for call in reply.tool_calls if call.function.name == name]
            others = [call for call in reply.tool_calls if call.function.name != name]
            if not answers:
                return Act([_invocation(call) for call in others], reply)
            assert name is not None
            if others:
                reason = "an answer is taken only when no other tool call of its reply is pending."
                return Act(
                    [_invocation(call) for call in others],
                    reply,
                    [_tool_result(call, not_taken_text(name, reason)) for call in answers],
                )
            return self._answer_call(reply, answers, name, state)
        output = self._output
        if output is None:
            return Final(reply, reply)
        value, error = output.check(reply)  # raises OutputTruncated on finish_reason "length"
        if error is None:
            return Final(value, reply)
        if name is not None:
            error = f"{error}\nGive the answer by calling the {name} tool."
        return self._rejected(reply.content, error, state, output.retry_message(error))

    def _answer_call(
        self, reply: Message, answers: list[ToolRequest], name: str, state: LoopState
    ) -> Decision:
        """A reply that calls only the answer tool: its first call's arguments are the answer
        (the others are answered, not read)."""
        output = self._output
        assert output is not None
        first, *rest = answers
        arguments = first.function.arguments
        # raises OutputTruncated for arguments cut off at the token limit
        answer = Message(
            role=MessageRole.ASSISTANT, content=arguments, finish_reason=reply.finish_reason
        )
        value, error = output.check(answer)
        if error is None:
            return Final(value, reply.model_copy(update={"content": arguments, "tool_calls": None}))
        error = f"{error}\nCall {name} again with the corrected arguments."
        feedback = _tool_result(first, output.retry_message(error).content)
        reason = "only the first call of it in a reply is read."
        extra = [_tool_result(call, not_taken_text(name, reason)) for call in rest]
        return self._rejected(arguments, error, state, feedback, extra)

    def _rejected(
        self,
        raw: str,
        error: str,
        state: LoopState,
        feedback: Message,
        answers: list[Message] | None = None,
    ) -> Retry:
        """Send an invalid answer back with its errors, or end the run past `n_retries`."""
        output = self._output
        assert output is not None
        state.rejected.append(raw)
        state.errors.append(error)
        if state.retries >= output.n_retries:
            raise FailedToParseOutput(
                f"{self._where()}: no valid {output.output_model.__name__} after "
                f"{len(state.rejected)} attempt(s); the last reply's problems:\n{error}\n"
                "Raise the StructuralOutput's n_retries, simplify the schema or use a stronger "
                "model. Every rejected reply is in `.raw` and every error in `.errors`.",
                raw=state.rejected,
                errors=state.errors,
            )
        return Retry(feedback, counts_as_step=False, answers=answers or [])

    def _observations(
        self, calls: list[ToolInvocation], records: list[ToolCallRecord]
    ) -> list[Message]:
        """One `tool` message per call, in request order; then, for each call whose result
        carried images, a user message with them (a `tool` message takes text only, and every
        `tool` message must come right after the reply that asked for it)."""
        messages = [
            Message(
                role=MessageRole.TOOL,
                content=self._result_text(entry),
                tool_call_id=call.id,
            )
            for call, entry in zip(calls, records, strict=True)
        ]
        messages.extend(self._images_message(entry) for entry in records if entry.images)
        return messages


def _invocation(call: ToolRequest) -> ToolInvocation:
    return ToolInvocation(call.id, call.function.name, call.function.arguments)


def _tool_result(call: ToolRequest, text: str) -> Message:
    """The `tool` message answering `call` with `text` (a call the agent answered itself)."""
    return Message(role=MessageRole.TOOL, content=text, tool_call_id=call.id)
