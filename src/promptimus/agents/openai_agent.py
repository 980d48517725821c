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
- With `structural_output` (a pydantic model class or a `StructuralOutput`), every request carries
  its `response_format` (or, in prompted mode, its schema instructions) and the final reply is
  validated: the output is the model instance; an invalid reply is sent back with the errors, at
  most `n_retries` times (these retries do not use steps), then `FailedToParseOutput`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from ..core import Module
from ..dto import Message, MessageRole
from ..dto.run_record import ToolCallRecord
from ..errors import FailedToParseOutput, RequestRejected
from ..guardrails.guardrail import Guardrail
from ..modules.compaction import Compactor
from ..modules.memory import Memory
from ..modules.partial_output import PartialReader
from ..modules.structural import StructuralOutput
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

    def __init__(
        self,
        prompt: str | Callable[..., Any] | None,
        tools: Iterable[Tool | Module | Callable[..., Any]] = (),
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
        compactor: Compactor | None = None,
    ) -> None:
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

    @property
    def structural_output_model(self) -> type[BaseModel] | None:
        """The pydantic model of the final answer, or None (the original's attribute)."""
        return None if self._output is None else self._output.output_model

    def _partial_reader(self) -> PartialReader | None:
        return None if self._output is None else PartialReader(self._output.output_model)

    def _provider_kwargs(self, state: LoopState | None = None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if len(self.tools):
            kwargs["tools"] = [tool.to_openai() for tool in self._all_tools()]
        if self._output is not None:
            kwargs.update(self._output.provider_kwargs(state.response_format if state else None))
        return kwargs

    def _step_provider_kwargs(self, kwargs: dict[str, Any], tools: list[Tool]) -> dict[str, Any]:
        narrowed = {key: value for key, value in kwargs.items() if key != "tools"}
        if tools:
            narrowed["tools"] = [tool.to_openai() for tool in tools]
        return narrowed

    def _preamble(self, variables: dict[str, Any], state: LoopState | None = None) -> list[Message]:
        output = self._output
        if output is None:
            return []
        if not output.native:
            return [output.system_message(**variables)]
        extra = output.schema_instructions(state.response_format) if state else None
        return [extra] if extra is not None else []

    # structured output degrades like StructuralOutput.forward on servers that reject its format
    def _begin_run(self, llm: Any, state: LoopState) -> None:
        if self._output is not None:
            state.response_format = self._output.mode_for(llm)

    def _on_rejected(self, llm: Any, error: RequestRejected, state: LoopState) -> bool:
        if self._output is None or state.response_format is None:
            return False
        weaker = self._output.fall_back(state.response_format, error)
        if weaker is None:
            return False
        state.response_format = weaker
        return True

    def _on_accepted(self, llm: Any, state: LoopState) -> None:
        if self._output is not None and state.response_format is not None:
            self._output.accepted(llm, state.response_format)

    def _interpret(self, reply: Message, state: LoopState) -> Decision:
        if reply.tool_calls:
            calls = [
                ToolInvocation(call.id, call.function.name, call.function.arguments)
                for call in reply.tool_calls
            ]
            return Act(calls, reply)
        output = self._output
        if output is None:
            return Final(reply, reply)
        value, error = output.check(reply)  # raises OutputTruncated on finish_reason "length"
        if error is None:
            return Final(value, reply)
        state.rejected.append(reply.content)
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
        return Retry(output.retry_message(error), counts_as_step=False)

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
