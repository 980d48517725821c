"""`Compactor`: keeps a conversation under its trigger by running compaction steps, cheapest
first, each only while the conversation is still over."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...argument_checks import positive_int
from ...core import Module
from ...dto import Message, Usage
from ...errors import InvalidArgument, UnknownContextWindow
from ...observe.provider_calls import report_event
from .clear_thinking import ClearThinking
from .clear_tool_results import ClearToolResults
from .context_windows import known_context_window
from .conversation import protected_start
from .step import CompactionStep
from .summarize import Summarize
from .token_count import conversation_tokens, estimate_tokens

__all__ = ["Compaction", "Compactor"]


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction: the conversation it made (`messages`), whose first `written` messages
    replace the first `replaced` of the one it was given (the rest is the same); its size in
    tokens before and after, the steps that ran, and what they cost (`usage`)."""

    messages: list[Message]
    replaced: int
    written: int
    tokens_before: int
    tokens_after: int
    steps: tuple[str, ...]
    usage: Usage


class Compactor(Module):
    """Keeps a conversation under a trigger: before a request, when the conversation is over
    it, `steps` run in order (the cheapest first: `ClearToolResults()`, `ClearThinking()`, then
    `Summarize()`, the default) and the next one runs only while the conversation is still over.

    The trigger is any of: `trigger_tokens` (a size in tokens), `trigger_fraction` (a share of
    the model's context window, known for the common models, or `context_window=`) and
    `trigger_messages` (a number of messages). The size is the provider's own count of the last
    request (`Message.usage`) plus an estimate of the messages added since.

    Nothing changes in the last `keep_last` turns (a turn starts at a user message) nor in the
    current agent run, nor the system prompt (never part of the conversation given); a tool
    call and its results, and thinking and the tool use it led to, are kept or removed
    together. Give it to an agent or a `MemoryModule` as ``compactor=``.

    `native=True`: where the provider clears context on its own server (`Anthropic`: context
    editing), the steps it has (`ClearToolResults`, `ClearThinking`) are sent with each request
    as its edits, applied by the server above the token trigger, and reported back on the reply
    (`Message.context_edits`); the other steps (`Summarize`) still run here, after the server's
    edits, when the conversation is still over. Where the provider compacts the whole
    conversation on its server (`OpenAIResponses`: ``context_management``), each request asks it
    to above the token trigger and no step runs here; the compaction item it returns goes back
    in place of what it replaced. On a provider without either, every step runs here.
    """

    def __init__(
        self,
        *steps: CompactionStep,
        trigger_tokens: int | None = None,
        trigger_fraction: float | None = None,
        trigger_messages: int | None = None,
        keep_last: int = 2,
        native: bool = False,
        context_window: int | None = None,
    ) -> None:
        super().__init__()
        if trigger_tokens is None and trigger_fraction is None and trigger_messages is None:
            raise InvalidArgument(
                "Compactor needs a trigger: trigger_tokens=..., trigger_fraction=... (a share "
                "of the model's context window) or trigger_messages=..."
            )
        self.trigger_tokens = (
            None if trigger_tokens is None else positive_int(trigger_tokens, "trigger_tokens")
        )
        self.trigger_fraction = None if trigger_fraction is None else _fraction(trigger_fraction)
        self.trigger_messages = (
            None if trigger_messages is None else positive_int(trigger_messages, "trigger_messages")
        )
        self.keep_last = positive_int(keep_last, "keep_last")
        if not isinstance(native, bool):
            raise InvalidArgument(f"Compactor native must be True or False, got {native!r}.")
        self.native = native
        self.context_window = (
            None if context_window is None else positive_int(context_window, "context_window")
        )
        if not steps:
            steps = (ClearToolResults(), ClearThinking(), Summarize())
        names: set[str] = set()
        for step in steps:
            if not isinstance(step, CompactionStep):
                raise InvalidArgument(
                    f"Compactor steps must be compaction steps (ClearToolResults(), "
                    f"ClearThinking(), Summarize(), ...), got {step!r:.80}."
                )
            name, n = step.name, 2
            while name in names:
                name, n = f"{step.name}_{n}", n + 1
            names.add(name)
            setattr(self, name, step)  # registered: a Summarize prompt is in the state_dict
        self._steps: tuple[CompactionStep, ...] = tuple(steps)

    @property
    def steps(self) -> tuple[CompactionStep, ...]:
        return self._steps

    def native_for(self, llm: Any) -> bool:
        """Whether `llm`'s server does this compactor's clearing steps itself (`native` on a
        provider with context editing)."""
        return self.native and getattr(llm, "context_editing", False) is True

    def native_threshold(self, llm: Any = None) -> int | None:
        """The token size above which `llm`'s server compacts the whole conversation itself
        (``native`` on a provider with server-side compaction and a token trigger), or None
        when the steps run here."""
        if not self.native or getattr(llm, "server_compaction", False) is not True:
            return None
        return self.token_limit(llm)

    def native_edits(self, llm: Any = None) -> list[dict[str, Any]]:
        """The context edits the server applies for this compactor's steps (empty unless
        `native_for` `llm`), in the order of the steps."""
        if not self.native_for(llm):
            return []
        limit = self.token_limit(llm)
        return [e for step in self._steps if (e := step.native_edit(limit)) is not None]

    def token_limit(self, llm: Any = None) -> int | None:
        """The size in tokens over which a conversation is compacted (None: no token trigger);
        `llm` is the model the conversation goes to, whose context window `trigger_fraction`
        takes its share of."""
        limits = [] if self.trigger_tokens is None else [self.trigger_tokens]
        if self.trigger_fraction is not None:
            model = getattr(llm, "model_name", None)
            window = self.context_window or known_context_window(model)
            if window is None:
                raise UnknownContextWindow(
                    f"Compactor({self.path}) has trigger_fraction={self.trigger_fraction} but "
                    f"the context window of model {model!r} is not known: give it as "
                    "Compactor(context_window=...), or use trigger_tokens=..."
                )
            limits.append(int(window * self.trigger_fraction))
        return min(limits) if limits else None

    def is_over(self, messages: Sequence[Message], tokens: int, llm: Any = None) -> bool:
        """Whether a conversation of `messages` (`tokens` in size) is over the trigger."""
        limit = self.token_limit(llm)
        if limit is not None and tokens > limit:
            return True
        return self.trigger_messages is not None and len(messages) > self.trigger_messages

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        llm: Any = None,
        frozen_from: int | None = None,
    ) -> Compaction | None:
        """`messages` compacted if they are over the trigger, or None when they are not or no
        step could make them smaller. Nothing from `frozen_from` on changes (besides the last
        `keep_last` turns), nor is `messages` changed in place."""
        current = list(messages)
        tokens_before = conversation_tokens(current)
        if not self.is_over(current, tokens_before, llm):
            return None
        boundary = protected_start(current, self.keep_last)
        if frozen_from is not None:
            boundary = min(boundary, frozen_from)
        replaced, tokens, ran, usage = boundary, tokens_before, [], Usage()
        native = self.native_for(llm)
        for step in self._steps:
            if boundary == 0:
                break
            if native and step.native_edit(None) is not None:
                continue  # the server applies it, on every request
            result = await step(current, boundary)
            if result is None:
                continue
            saved = estimate_tokens(current[:boundary]) - estimate_tokens(result.head)
            current = [*result.head, *current[boundary:]]
            boundary = len(result.head)
            tokens -= saved
            ran.append(step.name)
            usage = usage + result.usage
            if not self.is_over(current, tokens, llm):
                break
        if not ran:
            return None
        return Compaction(current, replaced, boundary, tokens_before, tokens, tuple(ran), usage)

    def needed(self, messages: Sequence[Message], llm: Any = None) -> bool:
        """Whether `messages` are over the trigger (a cheap check, no model call) with a step
        left to run here (not one the provider's server applies under `native`)."""
        if self.native_for(llm) and all(s.native_edit(None) is not None for s in self._steps):
            return False
        if self.native_threshold(llm) is not None:
            return False  # the server compacts it, on every request
        return self.is_over(messages, conversation_tokens(messages), llm)

    async def forward(
        self, messages: Sequence[Message], llm: Any = None, frozen_from: int | None = None
    ) -> Compaction | None:
        """`compact`, as a call of this module: ``await compactor(messages)`` is a span in
        traces (the summary's model call inside it), and a compaction that ran is reported to
        the observers as a "compaction" event on it (tokens before and after, the steps, the
        summary's tokens)."""
        done = await self.compact(messages, llm=llm, frozen_from=frozen_from)
        if done is not None:
            report_event(
                self,
                "compaction",
                {
                    "tokens_before": done.tokens_before,
                    "tokens_after": done.tokens_after,
                    "steps": ",".join(done.steps),
                    "summary_tokens": done.usage.total_tokens,
                },
            )
        return done

    def extra_repr(self) -> str:
        parts = [
            f"{name}={value!r}"
            for name, value in (
                ("trigger_tokens", self.trigger_tokens),
                ("trigger_fraction", self.trigger_fraction),
                ("trigger_messages", self.trigger_messages),
                ("context_window", self.context_window),
            )
            if value is not None
        ]
        parts.append(f"keep_last={self.keep_last}")
        if self.native:
            parts.append("native=True")
        return ", ".join(parts)


def _fraction(value: Any) -> float:
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and 0 < number <= 1:
            return number
    raise InvalidArgument(
        f"trigger_fraction must be a number above 0 and at most 1 (a share of the context "
        f"window), got {value!r}."
    )
