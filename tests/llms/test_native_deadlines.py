"""``timeout`` on the native providers bounds a whole request and each event of a stream, however
slowly the server sends, as on `OpenAILike`.

The fake servers drip a reply one byte at a time (`Fault.drip`), each byte well inside the HTTP
client's read timeout, or keep a stalled stream alive with pings: only a total deadline ends
the call. The tests count what the server got out, never how long the call took.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import EventLineTooLong, ProviderTimeout, StreamInterrupted
from promptimus.llms import Anthropic, Gemini, aaccumulate
from promptimus.testing import FakeAnthropicServer, FakeGeminiServer, Fault, GeminiFault
from promptimus.transport import RetryPolicy

DRIP = Fault.drip(every=0.05)  # a reply of a few hundred bytes would take many seconds


@pytest.fixture
def claude() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(ping_every=0.02, max_pings=400) as server:
        yield server


@pytest.fixture
def gemini_srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as server:
        yield server


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hello there")]


async def anthropic(srv: FakeAnthropicServer, *, reused: bool, **options: Any) -> Anthropic:
    options.setdefault("timeout", 0.5)
    options.setdefault("retry", RetryPolicy(max_retries=0))
    llm = Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url, **options)
    if reused:  # the SDK built one request: later ones reuse it
        await llm.achat(ask())
    return llm


@pytest.mark.parametrize("reused", [False, True], ids=["sdk client.post", "reused request"])
async def test_a_dripped_claude_reply_fails_with_a_timeout(
    claude: FakeAnthropicServer, reused: bool
) -> None:
    llm = await anthropic(claude, reused=reused)
    claude.messages.script(DRIP)
    with pytest.raises(ProviderTimeout, match="timed out"):
        await llm.achat(ask())
    assert len(claude.dripped) == 1 and claude.dripped[0] < 200  # far from the whole reply


@pytest.mark.parametrize("reused", [False, True], ids=["sdk client.post", "reused request"])
async def test_a_dripped_claude_stream_fails_with_a_timeout(
    claude: FakeAnthropicServer, reused: bool
) -> None:
    llm = await anthropic(claude, reused=reused)
    claude.messages.script(DRIP)
    with pytest.raises(ProviderTimeout):
        await aaccumulate(llm.astream(ask()))
    assert len(claude.dripped) == 1 and claude.dripped[0] < 200


async def test_a_claude_calls_own_timeout_bounds_it(claude: FakeAnthropicServer) -> None:
    llm = await anthropic(claude, reused=True, timeout=60.0)
    claude.messages.script(DRIP)
    with pytest.raises(ProviderTimeout):
        await llm.achat(ask(), timeout=0.5)


async def test_pings_before_message_stop_do_not_hold_a_stream_open(
    claude: FakeAnthropicServer,
) -> None:
    """The stream has delivered text, then only pings come: each event's deadline ends it (as
    a stream cut off by a timeout, since output was already delivered)."""
    llm = await anthropic(claude, reused=False)
    claude.messages.script(Fault.stall(after_chunks=4))  # start, ping, block start, text
    chunks = []
    with pytest.raises(StreamInterrupted, match="APITimeoutError"):
        async for delta in llm.astream(ask()):
            chunks.append(delta)
    assert any(delta.content for delta in chunks)  # the text came before the pings
    assert claude.pings > 1  # pings came, each well inside a read timeout
    assert claude.pings < claude.max_pings  # the client gave up; the server did not drop it


async def test_pings_before_any_text_fail_with_a_timeout(claude: FakeAnthropicServer) -> None:
    llm = await anthropic(claude, reused=False)
    claude.messages.script(Fault.stall(after_chunks=1))  # message_start, then pings
    with pytest.raises(ProviderTimeout):
        await aaccumulate(llm.astream(ask()))
    assert 1 < claude.pings < claude.max_pings


async def test_a_claude_reply_in_time_is_untouched(claude: FakeAnthropicServer) -> None:
    llm = await anthropic(claude, reused=True, timeout=30.0)
    assert (await llm.achat(ask())).content
    assert (await aaccumulate(llm.astream(ask()))).content


def gemini(srv: FakeGeminiServer, **options: Any) -> Gemini:
    options.setdefault("timeout", 0.5)
    options.setdefault("retry", RetryPolicy(max_retries=0))
    return Gemini("gemini-test", api_key=srv.api_key, base_url=srv.base_url, **options)


async def test_a_dripped_gemini_reply_fails_with_a_timeout(gemini_srv: FakeGeminiServer) -> None:
    gemini_srv.generate.script(GeminiFault.drip(every=0.05))
    with pytest.raises(ProviderTimeout, match="timed out"):
        await gemini(gemini_srv).achat(ask())
    assert len(gemini_srv.dripped) == 1 and gemini_srv.dripped[0] < 200


async def test_a_dripped_gemini_stream_fails_with_a_timeout(gemini_srv: FakeGeminiServer) -> None:
    gemini_srv.generate.script(GeminiFault.drip(every=0.05))
    with pytest.raises(ProviderTimeout, match="timed out"):
        await aaccumulate(gemini(gemini_srv).astream(ask()))
    assert len(gemini_srv.dripped) == 1 and gemini_srv.dripped[0] < 200


async def test_a_gemini_reply_in_time_is_untouched(gemini_srv: FakeGeminiServer) -> None:
    llm = gemini(gemini_srv, timeout=30.0)
    assert (await llm.achat(ask())).content
    assert (await aaccumulate(llm.astream(ask()))).content


async def test_a_gemini_stream_line_is_bounded_however_well_it_compresses(
    gemini_srv: FakeGeminiServer,
) -> None:
    """One 200 MB line sent as a few hundred KB of gzip: the decoder gives up once the line is
    longer than any event may be, instead of gathering it whole."""
    gemini_srv.generate.script(GeminiFault.long_line(200 * 1024 * 1024))
    llm = gemini(gemini_srv, timeout=600.0)
    with pytest.raises(EventLineTooLong, match="longer than"):
        await aaccumulate(llm.astream(ask()))
