"""Batch evaluation's seam: the model calls of running examples, gathered into batches.

Every example runs as it always does, in a task of its own; only its model calls are answered
differently. `BatchRounds` is a provider-call observer whose ``answer(call)`` takes each model
call made inside an example (a context it marked), holds it, and, once every example still
running is waiting on a held call, sends all held calls as one batch per provider
(`BatchAPI.run`) and hands each its reply. So every example's first call goes into the first
batch, the calls that needed those answers into the next, and so on: a module whose later calls
depend on earlier answers runs round by round, without knowing it. Calls of the metric (an
`LLMJudge`) are made outside that context and go directly.

A request that failed alone fails its example's row (`BatchRequestFailed`, by name); a batch
that failed as a whole (`BatchExpired`, `BatchFailed`, an unreachable server) fails every call
held for it and is raised by `evaluate` once the rows are in: an evaluation with no complete
result is no report."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ..core.hooks import RemovableHandle
from ..core.module import Module
from ..dto import Message
from ..errors import BatchUnsupported
from ..llms.batch_api import BatchAPI, BatchRequest, BatchStatus
from ..observe.provider_calls import ProviderCall, register_provider_call_observer
from .batch_options import BatchOptions
from .batch_summary import BatchSummary

__all__ = ["BatchRounds", "batch_api_of", "check_batchable"]

_STATE = "promptimus.evals.batch"  # a call answered here: its discount, in `call.state`
_CALLS_JOINING = 3  # event-loop turns a round waits for calls made at the same moment


class _Member:
    """One running example, as the rounds see it."""

    __slots__ = ("rounds",)

    def __init__(self, rounds: BatchRounds) -> None:
        self.rounds = rounds


_member: contextvars.ContextVar[_Member | None] = contextvars.ContextVar(
    "promptimus_batch_member", default=None
)


@dataclass
class _Held:
    api: BatchAPI
    request: BatchRequest
    member: _Member
    reply: asyncio.Future[Message]


def batch_api_of(provider: Any) -> BatchAPI:
    """``provider``'s batch API; `BatchUnsupported` when it has none."""
    make = getattr(provider, "batch_api", None)
    if not callable(make):
        raise BatchUnsupported(
            f"{provider!r} has no batch API: batch evaluation sends requests through OpenAI's "
            "Batch API (OpenAILike) or Anthropic's Message Batches API (Anthropic). Evaluate "
            "this module without batch=True, or give it one of those models."
        )
    api: BatchAPI = make()
    return api


def check_batchable(module: Any) -> None:
    """Every model a module tree uses has a batch API (`BatchUnsupported` otherwise), before
    anything is sent. A plain function is checked at its first call instead."""
    if not isinstance(module, Module):
        return
    seen: set[int] = set()
    for _, node in module.named_modules():
        if node.has_provider("llm"):
            llm = node.llm
            if id(llm) not in seen:
                seen.add(id(llm))
                batch_api_of(llm)


class BatchRounds:
    """Gathers the model calls of ``expected`` examples into batches (see the module)."""

    def __init__(
        self,
        options: BatchOptions,
        expected: int,
        on_status: Callable[[BatchStatus], Any] | None = None,
    ) -> None:
        self._options = options
        self._waiting = options.waiting(on_status)
        self._live = expected
        self._held: list[_Held] = []
        self._round: asyncio.Task[None] | None = None
        self._apis: dict[int, BatchAPI] = {}
        self._handle: RemovableHandle | None = None
        self.summary = BatchSummary(pricing=options.pricing)
        self.fatal: BaseException | None = None
        """The error that failed a whole batch, if one did: `evaluate` raises it."""

    # --- the examples -------------------------------------------------------------------------

    def member(self, module: Any) -> Callable[..., Any]:
        """``module`` as an example runs it: its model calls are held for the batches."""

        async def run(**inputs: Any) -> Any:
            token = _member.set(_Member(self))
            try:
                output = module(**inputs)
                if inspect.isawaitable(output):
                    output = await output
                return output
            finally:
                _member.reset(token)
                self._live -= 1
                self._next_round()

        return run

    @asynccontextmanager
    async def active(self) -> AsyncIterator[BatchRounds]:
        """Watch model calls inside the block; a round still running at its end is cancelled
        (and its batches with it)."""
        self._handle = register_provider_call_observer(self)
        try:
            yield self
        finally:
            self._handle.remove()
            self._handle = None
            task = self._round
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    # --- the provider-call observer -----------------------------------------------------------

    def on_start(self, call: ProviderCall) -> None:
        pass

    async def answer(self, call: ProviderCall) -> None:
        member = _member.get()
        if member is None or member.rounds is not self or call.kind != "llm":
            return
        if self.fatal is not None:
            raise self.fatal
        try:
            api = self._api(call.provider)
        except BatchUnsupported as exc:  # the evaluation cannot be batched: stop it
            self.fatal = exc
            self._fail_held(exc)
            raise
        held = _Held(
            api,
            BatchRequest(list(call.inputs), dict(call.params)),
            member,
            asyncio.get_running_loop().create_future(),
        )
        self._held.append(held)
        self._next_round()
        call.output = await held.reply
        call.state[_STATE] = api.discount

    def on_end(self, call: ProviderCall) -> None:
        discount = call.state.get(_STATE)
        if discount is not None and call.error is None:
            self.summary.add(call.model or "unknown", call.usage, discount)

    def _api(self, provider: Any) -> BatchAPI:
        api = self._apis.get(id(provider))
        if api is None:
            api = self._apis[id(provider)] = batch_api_of(provider)
        return api

    # --- the rounds ---------------------------------------------------------------------------

    def _next_round(self) -> None:
        """Start a round once every running example waits on a held call."""
        if self._round is not None and not self._round.done():
            return
        waiting = {id(held.member) for held in self._held}
        if self._held and len(waiting) >= self._live:
            self._round = asyncio.get_running_loop().create_task(self._send_round())

    async def _send_round(self) -> None:
        try:
            for _ in range(_CALLS_JOINING):  # calls an example makes at once join this round
                await asyncio.sleep(0)
            held, self._held = self._held, []
            self.summary.rounds += 1
            groups: dict[Hashable, list[_Held]] = {}
            for item in held:
                groups.setdefault(item.api.key, []).append(item)
            await asyncio.gather(*(self._send_batch(group) for group in groups.values()))
        finally:
            self._round = None
            self._next_round()

    def _fail_held(self, error: BaseException) -> None:
        held, self._held = self._held, []
        for item in held:
            if not item.reply.done():
                item.reply.set_exception(error)

    async def _send_batch(self, group: list[_Held]) -> None:
        try:
            replies = await group[0].api.run([item.request for item in group], self._waiting)
        except Exception as exc:
            if self.fatal is None:
                self.fatal = exc
            for item in group:
                if not item.reply.done():
                    item.reply.set_exception(exc)
            return
        except BaseException as exc:  # cancelled: the calls held for it end with it
            for item in group:
                if not item.reply.done():
                    item.reply.cancel()
            raise exc
        self.summary.batches += 1
        for item, reply in zip(group, replies, strict=True):
            if item.reply.done():
                continue
            if isinstance(reply, BaseException):
                item.reply.set_exception(reply)
            else:
                item.reply.set_result(reply)
