"""`DynamicPrompt`: a system prompt computed for every LLM call from the run context.

An agent given `prompt=callable` uses one in place of its `Prompt`:

    def instructions(ctx: RunContext[User]) -> str:
        return f"You help {ctx.deps.name}. Today is {date.today()}."

    agent = OpenaiToolCallingAgent(instructions, tools=[...])
    await agent("What's on my calendar?", deps=User(name="Ann"))

The callable (sync or async) receives the `RunContext` (deps, messages so far, step). Its text is
code, not a checkpointed value; only the optional `suffix` template (e.g. the ReACT format
instructions) is a `Parameter`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from ..core import Parameter
from ..dto import Message, MessageRole
from ..errors import InvalidArgument
from ..tools.run_context import RunContext
from .base_prompt import BasePrompt, PreparedPrompt, ask_llm
from .template import format_template

__all__ = ["DynamicPrompt", "PromptFn"]

PromptFn: TypeAlias = Callable[[RunContext[Any]], str | Awaitable[str]]


class DynamicPrompt(BasePrompt):
    """`fn(ctx) -> str` (sync or async), optionally followed by a `suffix` template; rendered
    through the interface every prompt shares (`prepare`, `arender`: see `BasePrompt`)."""

    def __init__(
        self,
        fn: PromptFn,
        suffix: str | None = None,
        role: MessageRole | str = MessageRole.SYSTEM,
    ) -> None:
        super().__init__()
        if not callable(fn):
            raise InvalidArgument(f"DynamicPrompt needs a callable, got {type(fn).__name__}.")
        if suffix is not None and not isinstance(suffix, str):
            raise InvalidArgument(
                f"DynamicPrompt suffix must be a str (a template) or None, got "
                f"{type(suffix).__name__} {suffix!r:.60}."
            )
        try:
            self._role = MessageRole(role)
        except ValueError:
            roles = ", ".join(repr(r.value) for r in MessageRole)
            raise InvalidArgument(
                f"DynamicPrompt role must be one of {roles}, got {role!r}."
            ) from None
        self._fn = fn
        if suffix is not None:
            self.suffix = Parameter(suffix)

    async def prepare(self, ctx: RunContext[Any] | None = None) -> PreparedPrompt:
        """Run the callable for `ctx` (an empty `RunContext` when None): the prepared prompt
        renders its text and the suffix, filled with any variables, without running it again."""
        text = await self.instructions(ctx if ctx is not None else RunContext())
        return PreparedPrompt(functools.partial(self._render, text))

    def check_variables(self, variables: Mapping[str, Any]) -> None:
        self.compose("", variables)

    def _render(
        self, text: str, history: list[Message] | None = None, **variables: Any
    ) -> list[Message]:
        head = self.compose(text, variables)
        return [head, *history] if history else [head]

    async def system_message(self, ctx: RunContext[Any], **variables: Any) -> Message:
        return self.compose(await self.instructions(ctx), variables)

    async def instructions(self, ctx: RunContext[Any]) -> str:
        """The callable's text for `ctx` (without the suffix)."""
        text = self._fn(ctx)
        if inspect.isawaitable(text):
            text = await text
        if not isinstance(text, str):
            raise InvalidArgument(
                f"The dynamic prompt {getattr(self._fn, '__name__', self._fn)!r} returned "
                f"{type(text).__name__}; it must return the prompt text (str)."
            )
        return text

    def compose(self, text: str, variables: Mapping[str, Any]) -> Message:
        """The system message: `text` and then the suffix filled with `variables`."""
        suffix = self._parameters.get("suffix")
        if suffix is not None and suffix.is_set:
            where = f"DynamicPrompt {self.path!r} suffix"
            text = f"{text}\n\n{format_template(suffix.value, variables, where=where)}"
        return Message(role=self._role, content=text)

    async def render(
        self,
        history: list[Message] | None = None,
        ctx: RunContext[Any] | None = None,
        **variables: Any,
    ) -> list[Message]:
        """Exactly the messages `forward` sends (the same as `arender`)."""
        return await self.arender(history, ctx, **variables)

    async def forward(
        self,
        history: list[Message] | None = None,
        provider_kwargs: dict[str, Any] | None = None,
        ctx: RunContext[Any] | None = None,
        system: Message | None = None,
        **variables: Any,
    ) -> Message:
        """Call the LLM with the computed system prompt before `history`. Given `system`, the
        callable is not run: that message is sent in its place."""
        if system is None:
            messages = await self.arender(history, ctx, **variables)
        else:
            messages = [system, *history] if history else [system]
        return await ask_llm(self, messages, provider_kwargs or {}, variables=variables)

    def extra_repr(self) -> str:
        return f"fn={getattr(self._fn, '__qualname__', type(self._fn).__name__)}"
