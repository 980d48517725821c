"""``timeout`` bounds a whole request, however slowly the server sends.

The fake server drips its reply one byte at a time (`Fault.drip`), each byte well inside the HTTP
client's read timeout, so only a total deadline ends the call. The tests assert that the call
fails with `ProviderTimeout` and count the bytes the server got out, never how long it took.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import ProviderTimeout, RetryBudgetExhausted
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy

DRIP = Fault.drip(every=0.05)  # a reply of a few hundred bytes would take many seconds
WAYS = ["sdk typed method", "sdk client.post", "reused request"]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hello there")]


async def provider(srv: FakeOpenAIServer, way: str, **options: Any) -> OpenAILike:
    options.setdefault("timeout", 0.5)
    options.setdefault("retry", RetryPolicy(max_retries=0))
    llm = OpenAILike(
        "m",
        api_key=srv.api_key,
        base_url=srv.base_url,
        sdk_requests=way == "sdk typed method",
        **options,
    )
    if way == "reused request":
        await llm.achat(ask())
        assert llm._factory.connection().direct_paths
    return llm


@pytest.mark.parametrize("way", WAYS)
async def test_a_dripped_reply_fails_with_a_timeout(srv: FakeOpenAIServer, way: str) -> None:
    llm = await provider(srv, way)
    srv.chat.script(DRIP)
    with pytest.raises(ProviderTimeout, match="timed out") as raised:
        await llm.achat(ask())
    assert "timeout=" in str(raised.value)
    assert len(srv.dripped) == 1 and srv.dripped[0] < 200  # far from the whole reply


@pytest.mark.parametrize("way", ["sdk client.post", "reused request"])
async def test_a_dripped_stream_fails_with_a_timeout(srv: FakeOpenAIServer, way: str) -> None:
    llm = await provider(srv, way)
    srv.chat.script(DRIP)
    with pytest.raises(ProviderTimeout):
        await aaccumulate(llm.astream(ask()))
    assert len(srv.dripped) == 1 and srv.dripped[0] < 200


async def test_a_calls_own_timeout_bounds_it(srv: FakeOpenAIServer) -> None:
    llm = await provider(srv, "reused request", timeout=60.0)
    srv.chat.script(DRIP)
    with pytest.raises(ProviderTimeout):
        await llm.achat(ask(), timeout=0.5)


async def test_a_timeout_is_retried_then_the_budget_says_so(srv: FakeOpenAIServer) -> None:
    retry = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)
    llm = await provider(srv, "sdk client.post", retry=retry)
    srv.chat.script(DRIP, DRIP)
    with pytest.raises(RetryBudgetExhausted, match="timeout"):
        await llm.achat(ask())
    assert len(srv.dripped) == 2


async def test_a_reply_that_arrives_in_time_is_untouched(srv: FakeOpenAIServer) -> None:
    llm = await provider(srv, "reused request", timeout=30.0)
    assert (await llm.achat(ask())).content
    assert (await aaccumulate(llm.astream(ask()))).content
