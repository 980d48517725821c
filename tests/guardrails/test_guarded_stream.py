"""`StructuralOutput.stream` inside a `Guarded` module with output guardrails: no partial object
reaches the caller before the guardrails judged the answer; the final value arrives as they left
it (through the real SDK against the fake server)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.errors import GuardrailTripped
from promptimus.guardrails import Guarded, OutputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.modules.structural import StructuralOutput
from promptimus.testing import FakeOpenAIServer


class Account(BaseModel):
    user: str
    password: str
    note: str


SECRET = Account(user="ann", password="hunter2", note="the admin account of the billing system")
TEXT = json.dumps(SECRET.model_dump(), indent=2)  # word-sized pieces on the wire


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


class Lookup(pm.Module):
    """Streams a structured answer, showing each value to the caller as it arrives."""

    def __init__(self, srv: FakeOpenAIServer) -> None:
        super().__init__()
        llm = OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)
        self.extract = StructuralOutput(Account).with_llm(llm)
        self.shown: list[BaseModel] = []

    async def forward(self, request: str) -> Account:
        last: BaseModel | None = None
        async for value in self.extract.stream(request):
            self.shown.append(value)
            last = value
        assert isinstance(last, Account)
        return last


def shown_passwords(lookup: Lookup) -> list[object]:
    return [getattr(value, "password", None) for value in lookup.shown]


async def test_a_blocked_answer_shows_no_partial_and_trips(srv: FakeOpenAIServer) -> None:
    srv.chat.script(TEXT)
    lookup = Lookup(srv)

    def no_passwords(text: str) -> Verdict:
        return Verdict.block("it holds a password") if "hunter2" in text else Verdict.allow()

    guarded = Guarded(lookup, [OutputGuardrail(no_passwords)])
    with pytest.raises(GuardrailTripped, match="it holds a password"):
        await guarded("Who is the admin?")
    assert lookup.shown == []


async def test_a_replaced_answer_shows_only_the_replacement(srv: FakeOpenAIServer) -> None:
    srv.chat.script(TEXT)
    lookup = Lookup(srv)
    calls: list[str] = []

    def redact(text: str) -> Verdict:
        calls.append(text)
        return Verdict.replace(text.replace("hunter2", "[redacted]"))

    guarded = Guarded(lookup, [OutputGuardrail(redact)])
    result = await guarded("Who is the admin?")
    assert result.password == "[redacted]"
    assert lookup.shown == [result]
    assert len(calls) == 1  # the answer is judged once, not again on its way out


async def test_an_allowed_answer_shows_its_partials_then_the_answer(srv: FakeOpenAIServer) -> None:
    srv.chat.script(TEXT)
    lookup = Lookup(srv)
    guarded = Guarded(lookup, [OutputGuardrail(lambda text: Verdict.allow())])
    assert await guarded("Who is the admin?") == SECRET
    assert len(lookup.shown) >= 3 and lookup.shown[-1] == SECRET
    assert "hunter2" in shown_passwords(lookup)


async def test_without_output_guardrails_partials_stream_live(srv: FakeOpenAIServer) -> None:
    srv.chat.script(TEXT)
    lookup = Lookup(srv)
    guarded = Guarded(lookup, [])
    assert await guarded("Who is the admin?") == SECRET
    assert len(lookup.shown) >= 3
