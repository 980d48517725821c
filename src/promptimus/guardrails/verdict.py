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

    def __post_init__(self) -> None:
        # a verdict no guardrail can apply is refused here, so a check that builds one fails
        # (closed) instead of being read as allow
        problem = _problem(self)
        if problem is not None:
            raise InvalidVerdict(
                f"{problem}; build a verdict with Verdict.allow(), Verdict.block(reason) or "
                "Verdict.replace(text)."
            )

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


_ACTIONS = frozenset({"allow", "block", "replace"})


def _problem(verdict: Verdict) -> str | None:
    """What makes `verdict` one no guardrail can apply, None when it is sound."""
    action, text = verdict.action, verdict.text
    if not isinstance(action, str) or action not in _ACTIONS:
        return f"A verdict's action is 'allow', 'block' or 'replace', got {action!r:.60}"
    if action == "replace" and not isinstance(text, str):
        got = "no text" if text is None else f"a {type(text).__name__}"
        return f"A 'replace' verdict carries the text to use instead, got {got}"
    if action != "replace" and text is not None:
        return f"Only a 'replace' verdict carries a text, not a {action!r} one"
    if verdict.reason is not None and not isinstance(verdict.reason, str):
        return f"A verdict's reason is a text, got {type(verdict.reason).__name__}"
    if not isinstance(verdict.stop, bool):
        return f"A verdict's stop is True or False, got {verdict.stop!r:.60}"
    return None


_ALLOW = Verdict("allow")


def as_verdict(value: Any, where: str) -> Verdict:
    """What a check returned, as a `Verdict` (True/None allow, False blocks)."""
    if isinstance(value, Verdict):
        problem = _problem(value)  # one changed after it was built (object.__setattr__)
        if problem is not None:
            raise InvalidVerdict(f"{where} returned a verdict it cannot apply: {problem}.")
        return value
    if value is None or value is True:
        return _ALLOW
    if value is False:
        return Verdict("block")
    raise InvalidVerdict(
        f"{where} returned {type(value).__name__} {value!r:.60}; a check returns "
        "Verdict.allow(), Verdict.block(reason), Verdict.replace(text), True, False or None."
    )
