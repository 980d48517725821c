"""`Verdict`: what a guardrail's check decides about a text or a tool call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InvalidVerdict

__all__ = ["Verdict", "VerdictAction", "as_verdict"]

VerdictAction = Literal["allow", "block", "replace"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's decision. Build one with `Verdict.allow()`, `Verdict.block(reason)` or
    `Verdict.replace(text)`; a check may also return True or None (allow) or False (block).

    - `block`: an input or output guardrail raises `GuardrailTripped` (an output guardrail with
      `retry=` first sends the model back with `reason`); a tool guardrail does not run the
      call and tells the model why, or ends the run with `GuardrailTripped` when `stop=True`.
    - `replace`: the text goes on in place of the original (redaction): the model sees it (an
      input), the caller gets it (an output), the memory and session store keep it; for a tool
      call the call does not run and the model reads `text` as its result.
    """

    action: VerdictAction
    reason: str | None = None
    text: str | None = None
    stop: bool = False

    @classmethod
    def allow(cls) -> Verdict:
        return _ALLOW

    @classmethod
    def block(cls, reason: str = "", *, stop: bool = False) -> Verdict:
        if not isinstance(reason, str):
            raise InvalidVerdict(f"Verdict.block takes a reason text, got {type(reason).__name__}.")
        return cls("block", reason or None, stop=stop)

    @classmethod
    def replace(cls, text: str, reason: str | None = None) -> Verdict:
        if not isinstance(text, str):
            raise InvalidVerdict(
                f"Verdict.replace takes the text to use instead, got {type(text).__name__}."
            )
        return cls("replace", reason, text)

    @property
    def allowed(self) -> bool:
        return self.action == "allow"


_ALLOW = Verdict("allow")


def as_verdict(value: Any, where: str) -> Verdict:
    """What a check returned, as a `Verdict` (True/None allow, False blocks)."""
    if isinstance(value, Verdict):
        return value
    if value is None or value is True:
        return _ALLOW
    if value is False:
        return Verdict("block")
    raise InvalidVerdict(
        f"{where} returned {type(value).__name__} {value!r:.60}; a check returns "
        "Verdict.allow(), Verdict.block(reason), Verdict.replace(text), True, False or None."
    )
