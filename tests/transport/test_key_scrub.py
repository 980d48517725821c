"""No API key in a traceback, a log line or an attribute of the errors we raise.

The fake server quotes the key back (`Fault.echo_key`), as servers that name the rejected key do;
the SDK error we chain as ``__cause__`` then carries it in its message, ``body`` and ``response``,
and every SDK error holds the request whose ``Authorization`` header is the key.
"""

from __future__ import annotations

import io
import logging
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.embedders.openai import OpenAILikeEmbedder
from promptimus.errors import ProviderError, RequestRejected, RetryBudgetExhausted
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.rerankers.openai import OpenAILikeReranker
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy
from promptimus.vector_stores.base import SearchHit

KEY = "sk-proj-LEAKME0123456789abcdefXYZ"
FAST = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.002)
ASK = [Message(role=MessageRole.USER, content="hello")]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if any(current is seen for seen in found):
            continue
        found.append(current)
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return found


def logged(error: BaseException) -> str:
    """What ``logging.exception`` writes for ``error``."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("test_key_scrub.app")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise error
        except ProviderError:
            logger.exception("the call failed")
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def attributes(exc: BaseException) -> str:
    """Everything an error tracker may read from one exception."""
    parts: list[Any] = [repr(exc), exc.args, vars(exc)]
    for name in ("message", "body", "doc"):
        parts.append(getattr(exc, name, None))
    for name in ("response", "request"):
        try:
            value = getattr(exc, name, None)
        except RuntimeError:
            continue
        if value is None:
            continue
        parts += [str(getattr(value, "url", "")), dict(getattr(value, "headers", {}))]
        content = getattr(value, "content", b"")
        parts.append(content.decode() if isinstance(content, bytes) else content)
        inner = getattr(value, "request", None) if name == "response" else None
        if inner is not None:
            parts += [str(inner.url), dict(inner.headers)]
    return repr(parts)


def assert_no_key(error: BaseException) -> None:
    assert len(chain(error)) >= 2  # the SDK's error is still chained, for debugging
    assert KEY not in "".join(traceback.format_exception(error))
    assert KEY not in logged(error)
    for exc in chain(error):
        assert KEY not in attributes(exc), type(exc).__name__


def chat_llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
    return OpenAILike("m", api_key=KEY, base_url=srv.base_url, retry=FAST, **kwargs)


async def test_a_401_that_quotes_the_key_leaves_no_trace_of_it(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.echo_key(401))
    with pytest.raises(RequestRejected) as info:
        await chat_llm(srv).achat(ASK)
    error = info.value
    assert error.status == 401
    cause = error.__cause__
    assert getattr(cause, "status_code", None) == 401  # status kept on the chained error
    assert "Incorrect API key provided: ***" in "".join(traceback.format_exception(error))
    assert_no_key(error)
    assert len(srv.chat.requests) == 1


async def test_the_server_did_see_the_key(srv: FakeOpenAIServer) -> None:
    """The fault really quotes what was sent (so the other tests can fail)."""
    srv.chat.script(Fault.echo_key(401))
    import openai

    client = openai.AsyncOpenAI(base_url=srv.base_url, api_key=KEY, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert KEY in "".join(traceback.format_exception(info.value))
    await client.close()


async def test_a_stream_rejected_with_the_key_leaves_no_trace_of_it(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.echo_key(403))
    with pytest.raises(RequestRejected) as info:
        await aaccumulate(chat_llm(srv).astream(ASK))
    assert_no_key(info.value)


async def test_an_error_inside_a_stream_that_quotes_the_key(srv: FakeOpenAIServer) -> None:
    body = {"message": f"upstream refused the key {KEY}", "type": "invalid_request_error"}
    srv.chat.script(Fault.stream_error(body, after_chunks=2))
    with pytest.raises(ProviderError) as info:
        async for _ in chat_llm(srv).astream([Message(role=MessageRole.USER, content="a b c d")]):
            pass
    assert_no_key(info.value)


async def test_exhausted_retries_leave_no_trace_of_the_key(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.echo_key(500), Fault.echo_key(503))
    with pytest.raises(RetryBudgetExhausted) as info:
        await chat_llm(srv).achat(ASK)
    assert info.value.__cause__ is not None
    assert getattr(info.value.__cause__, "status_code", None) == 503
    assert_no_key(info.value)
    assert len(srv.chat.requests) == 2


async def test_the_embedder_leaves_no_trace_of_the_key(srv: FakeOpenAIServer) -> None:
    srv.embeddings.script(Fault.echo_key(401))
    embedder = OpenAILikeEmbedder("e", api_key=KEY, base_url=srv.base_url, retry=FAST)
    with pytest.raises(RequestRejected) as info:
        await embedder.aembed("text")
    assert_no_key(info.value)


async def test_the_reranker_leaves_no_trace_of_the_key(srv: FakeOpenAIServer) -> None:
    srv.rerank.script(Fault.echo_key(401))
    reranker = OpenAILikeReranker("r", api_key=KEY, base_url=srv.base_url, retry=FAST)
    hits = [SearchHit(id="1", document="cats purr", score=0.0)]
    with pytest.raises(RequestRejected) as info:
        await reranker.rerank("cats", hits)
    assert info.value.status == 401
    assert_no_key(info.value)
    await reranker.aclose()


async def test_the_reranker_exhausting_its_retries_leaves_no_trace(srv: FakeOpenAIServer) -> None:
    srv.rerank.script(Fault.echo_key(502), Fault.echo_key(502))
    reranker = OpenAILikeReranker("r", api_key=KEY, base_url=srv.base_url, retry=FAST)
    hits = [SearchHit(id="1", document="cats purr", score=0.0)]
    with pytest.raises(RetryBudgetExhausted) as info:
        await reranker.rerank("cats", hits)
    assert_no_key(info.value)
    await reranker.aclose()


def test_scrubbing_keeps_status_and_request_id_and_handles_compressed_bodies() -> None:
    import gzip

    import httpx

    from promptimus.transport.secret_scrub import scrub_exception

    request = httpx.Request(
        "POST", f"http://proxy.local/v1?key={KEY}", headers={"Authorization": f"Bearer {KEY}"}
    )
    response = httpx.Response(
        401,
        headers={"content-encoding": "gzip", "x-request-id": "req_1"},
        content=gzip.compress(f'{{"error": "bad key {KEY}"}}'.encode()),
        request=request,
    )
    error = RuntimeError(f"rejected {KEY}")
    error.response = response  # type: ignore[attr-defined]
    error.body = {"error": [f"bad key {KEY}"]}  # type: ignore[attr-defined]
    outer = ValueError("wrapped")
    outer.__cause__ = error
    scrub_exception(outer, [KEY])
    assert KEY not in attributes(error)
    assert error.args == ("rejected ***",)
    assert error.response.status_code == 401  # type: ignore[attr-defined]
    assert error.response.headers["x-request-id"] == "req_1"  # type: ignore[attr-defined]
    assert error.response.json() == {"error": "bad key ***"}  # type: ignore[attr-defined]
    assert error.response.request.headers["authorization"] == "Bearer ***"  # type: ignore[attr-defined]
