"""`Prompt`: a templated message (system by default) sent ahead of the history to the LLM."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core import Parameter
from ..dto import Message, MessageRole
from ..errors import InvalidArgument
from .base_prompt import BasePrompt, PreparedPrompt, ask_llm
from .template import format_template

if TYPE_CHECKING:
    from ..protocols import LLMProtocol
    from ..tools.run_context import RunContext


class Prompt(BasePrompt):
    """Formats its `prompt` template with keyword arguments, puts it before `history` and calls
    the LLM. `render(...)` returns exactly the messages `forward(...)` would send (`await
    arender(...)` too, the interface a `DynamicPrompt` shares, see `BasePrompt`).

    `demos=[[user text, assistant text], ...]` adds example turns after the prompt (what
    `promptimus.optim.FewShot` trains); without it the Prompt has no `demos` parameter, so
    checkpoints written before demos existed load strictly. To load a checkpoint that holds
    demos into a fresh tree, construct the Prompt with `demos=[]`."""

    def __init__(
        self,
        prompt: str | None = None,
        role: MessageRole | str = MessageRole.SYSTEM,
        *,
        provider: LLMProtocol | None = None,
        demos: list[list[str]] | None = None,
    ):
        super().__init__()
        if prompt is not None and not isinstance(prompt, str):
            raise InvalidArgument(
                f"Prompt text must be a str (a template: {{name}} fills in a variable) or None "
                f"(set later, e.g. by loading a checkpoint), got {type(prompt).__name__} "
                f"{prompt!r:.60}."
            )
        self.prompt = Parameter(prompt)
        try:
            # the role is configuration, not text to train: optimizers leave it alone
            self.role = Parameter(MessageRole(role).value, frozen=True)
        except ValueError:
            roles = ", ".join(repr(r.value) for r in MessageRole)
            raise InvalidArgument(
                f"Prompt role must be one of {roles}, got {role!r} (promptimus 0.1 passed any "
                "string through; messages here carry one of these roles)."
            ) from None
        if provider is not None:  # promptimus 0.1's early tutorials: Prompt(text, provider=llm)
            warnings.warn(
                "Prompt(provider=...) is promptimus 0.1's spelling; use Prompt(...).with_llm(...).",
                DeprecationWarning,
                stacklevel=2,
            )
            self.with_llm(provider)
        if demos is not None:
            # registered only when asked for, so checkpoints without demos still load strictly
            self.demos = Parameter(demos)

    def _demo_turns(self) -> list[Message]:
        demos = self._parameters.get("demos")
        if demos is None or not demos.is_set:
            return []
        turns: list[Message] = []
        for demo in demos.value:
            if not (
                isinstance(demo, list) and len(demo) == 2 and all(isinstance(t, str) for t in demo)
            ):
                raise InvalidArgument(
                    f"Prompt {self.path!r}: each demo must be a [user text, assistant text] pair "
                    f"of strings, got {demo!r:.80}."
                )
            turns.append(Message(role=MessageRole.USER, content=demo[0]))
            turns.append(Message(role=MessageRole.ASSISTANT, content=demo[1]))
        return turns

    def render(self, history: list[Message] | None = None, **kwargs: Any) -> list[Message]:
        text = format_template(self.prompt.value, kwargs, where=f"Prompt {self.path!r}")
        head = Message(role=MessageRole(self.role.value), content=text)
        return [head, *self._demo_turns(), *(history or [])]

    async def prepare(self, ctx: RunContext[Any] | None = None) -> PreparedPrompt:
        """Nothing to compute: the template is filled as is (`ctx` is not needed)."""
        return PreparedPrompt(self.render, self.prompt.value)

    def check_variables(self, variables: Mapping[str, Any]) -> None:
        self.render(None, **variables)

    async def forward(
        self,
        history: list[Message] | None = None,
        provider_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Message:
        messages = self.render(history, **kwargs)
        return await ask_llm(
            self, messages, provider_kwargs or {}, template=self.prompt.value, variables=kwargs
        )
