"""`BasePrompt`: the one interface everything that renders a system prompt shares.

An agent renders its system prompt the same way whichever kind it holds:

    prepared = await prompt.prepare(ctx)                 # what must be computed for this call
    system, *demos = prepared.render(None, **variables)  # as often as the variables change

`Prompt` has nothing to compute (its template is filled as is); a `DynamicPrompt` runs its
callable once per `prepare`, so a step hook that changes the variables re-renders the suffix
without calling it again. `await prompt.arender(history, ctx=ctx, **variables)` does both at
once, and `check_variables(variables)` fails as rendering would, without computing anything
(a resumed run checks its variables before its approved tools run).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import Module
from ..dto import Message, MessageDelta
from ..llms.accumulator import aaccumulate_each
from ..llms.scripted import split_message
from ..observe.provider_calls import provider_call
from ..tools.run_context import RunContext

__all__ = ["BasePrompt", "PreparedPrompt", "ask_llm"]


@dataclass(frozen=True, slots=True)
class PreparedPrompt:
    """A prompt made ready for one LLM call. `render(history=None, **variables)` returns the
    messages the call starts with (the system message, a `Prompt`'s example turns) followed by
    `history`; `template` is the template they were filled from, for traces (None when the text
    was computed)."""

    render: Callable[..., list[Message]]
    template: str | None = None


class BasePrompt(Module):
    """A module that renders the messages an LLM call starts with (see the module docstring)."""

    @abstractmethod
    async def prepare(self, ctx: RunContext[Any] | None = None) -> PreparedPrompt:
        """Compute what this call needs (`ctx`: the run so far; None outside a run)."""

    @abstractmethod
    async def forward(
        self,
        history: list[Message] | None = None,
        provider_kwargs: dict[str, Any] | None = None,
        **variables: Any,
    ) -> Message:
        """Call the LLM with the rendered messages followed by `history`; returns its reply."""

    @abstractmethod
    def check_variables(self, variables: Mapping[str, Any]) -> None:
        """Raise `PromptFormatError` if rendering with `variables` would (naming what is
        missing), computing nothing else."""

    async def forward_streamed(
        self,
        history: list[Message] | None,
        on_delta: Callable[[MessageDelta], object],
        provider_kwargs: dict[str, Any] | None = None,
        **variables: Any,
    ) -> Message:
        """`forward`, with the reply read from the LLM's stream and each piece handed to
        `on_delta` as it arrives; a call of this prompt like `forward` (its hooks see the same
        arguments), and a stream cut off before the model finished is `StreamInterrupted`."""

        async def streamed(
            prompt: BasePrompt,
            history: list[Message] | None,
            provider_kwargs: dict[str, Any] | None = None,
            **variables: Any,
        ) -> Message:
            prepared = await prompt.prepare(None)
            messages = prepared.render(history, **variables)
            return await ask_llm(
                prompt,
                messages,
                provider_kwargs or {},
                template=prepared.template,
                variables=variables,
                on_delta=on_delta,
            )

        reply: Message = await self._call(
            streamed, (history,), {"provider_kwargs": provider_kwargs, **variables}
        )
        return reply

    async def arender(
        self,
        history: list[Message] | None = None,
        ctx: RunContext[Any] | None = None,
        **variables: Any,
    ) -> list[Message]:
        """The messages a call with `history` and `variables` would send."""
        return (await self.prepare(ctx)).render(history, **variables)


async def ask_llm(
    prompt: BasePrompt,
    messages: list[Message],
    params: dict[str, Any],
    *,
    template: str | None = None,
    variables: Mapping[str, Any] | None = None,
    on_delta: Callable[[MessageDelta], Any] | None = None,
) -> Message:
    """The reply of `prompt`'s LLM to `messages` (sent with `params`), made as one provider call
    of `prompt` (usage, cost and traces see it, with the `template` and `variables` the system
    prompt was filled from). With `on_delta`, the reply is streamed and each piece handed to it
    as it arrives; a stream that ended before the model finished is never an answer."""
    llm = prompt.llm
    async with provider_call(
        "llm",
        prompt,
        llm,
        messages,
        params,
        template=template,
        variables=variables,
        stream=on_delta is not None,
    ) as call:
        if call.output is not None:  # an observer answered it (a replay cassette): none sent
            if on_delta is not None:
                call.output = await aaccumulate_each(
                    _replayed(call.output), on_delta, f"a replayed call to {llm!r}"
                )
        elif on_delta is None:
            call.output = await llm.achat(messages, **params)
        else:
            call.output = await aaccumulate_each(
                llm.astream(messages, **params), on_delta, f"a call to {llm!r}"
            )
    reply: Message = call.output
    return reply


async def _replayed(reply: Message) -> AsyncIterator[MessageDelta]:
    """A reply given before the request was sent, as the deltas of a stream."""
    for delta in split_message(reply):
        yield delta
