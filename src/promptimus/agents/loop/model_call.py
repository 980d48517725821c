"""Calling the model: one path for every step, whether the run streams or not.

A step's request is a `ModelRequest` (the messages as sent and the request options). It is sent
as a call of the agent's prompt module, so the prompt's hooks and its trace span see every LLM
call of a run, and the provider call is observed (usage, budgets, tracing) like any other.
Streaming only changes how the reply arrives: with an `on_delta` sink the reply is read from
`llm.astream` and each piece handed to the sink as it comes; without one, from `llm.achat`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...core.module import wrap_as_call
from ...dto import Message, MessageDelta
from ...prompts.base_prompt import BasePrompt, ask_llm

__all__ = ["DeltaSink", "ModelRequest", "request_reply"]

DeltaSink = Callable[[MessageDelta], object]
"""Receives each piece of a streamed reply as it arrives."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to the model: `messages` exactly as sent and `params` (tools,
    response_format...), with the `template` and `variables` the system prompt was filled from,
    for traces (`template` None: the text was computed or replaced by a step hook)."""

    messages: list[Message]
    params: dict[str, Any]
    template: str | None = None
    variables: Mapping[str, Any] | None = None


async def _reply(
    prompt: BasePrompt, request: ModelRequest, on_delta: DeltaSink | None = None
) -> Message:
    return await ask_llm(
        prompt,
        request.messages,
        request.params,
        template=request.template,
        variables=request.variables,
        on_delta=on_delta,
    )


_reply_as_call = wrap_as_call(_reply)  # the prompt's hooks and span, wrapped once


async def request_reply(
    prompt: BasePrompt, request: ModelRequest, on_delta: DeltaSink | None = None
) -> Message:
    """The model's reply to `request`, as a call of `prompt` (see the module docstring)."""
    if on_delta is None:
        reply: Message = await _reply_as_call(prompt, request)
        return reply

    async def streamed(module: BasePrompt, request: ModelRequest) -> Message:
        return await _reply(module, request, on_delta)

    # the prompt's hooks see the request alone, streamed or not
    streamed_reply: Message = await prompt._call(streamed, (request,), {})
    return streamed_reply
