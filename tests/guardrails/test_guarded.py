"""`Guarded` around a module: the request reaches the input guardrails however it is passed,
and a request they cannot read is refused rather than let through unchecked."""

from __future__ import annotations

from typing import Any

import pytest

import promptimus as pm
from promptimus.errors import GuardrailTripped, InvalidArgument
from promptimus.guardrails import Guarded, InputGuardrail, Verdict


class Echo(pm.Module):
    """Answers with what it was given, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Any] = []

    async def forward(self, text: Any, suffix: str = "") -> str:
        self.calls.append(text)
        return f"echo {text}{suffix}"


def no_passwords(text: str) -> Verdict:
    return Verdict.block("no passwords") if "password" in text else Verdict.allow()


async def test_a_request_given_by_keyword_is_checked_like_one_given_by_position() -> None:
    echo = Echo()
    guarded = Guarded(echo, [InputGuardrail(no_passwords)])
    with pytest.raises(GuardrailTripped, match="no passwords"):
        await guarded(text="my password", suffix="!")
    assert echo.calls == []


async def test_a_replacement_given_by_keyword_reaches_the_module() -> None:
    echo = Echo()
    mask = InputGuardrail(lambda text: Verdict.replace(text.replace("4111", "[card]")))
    assert await Guarded(echo, [mask])(text="card 4111", suffix="!") == "echo card [card]!"


async def test_a_call_without_a_request_is_refused_not_let_through() -> None:
    class Tally(pm.Module):
        async def forward(self, **counts: int) -> int:
            return sum(counts.values())

    guarded = Guarded(Tally(), [InputGuardrail(no_passwords)])
    with pytest.raises(InvalidArgument, match="without a request"):
        await guarded(password=1)


async def test_a_request_the_input_guardrails_cannot_read_is_refused() -> None:
    echo = Echo()
    guarded = Guarded(echo, [InputGuardrail(no_passwords)])
    with pytest.raises(InvalidArgument, match="got dict"):
        await guarded({"question": "my password"})
    assert echo.calls == []
