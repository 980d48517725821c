"""CachedLLM with MemoryCache and SQLiteCache, through the fake OpenAI server: what is cached
(deterministic requests, finished replies and streams), what never is (errors, cut streams,
temperature 1 unless opted in), hits across processes, ttl, size eviction, LRU, single flight."""

from __future__ import annotations

import asyncio
import json
import pickle
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import ImageContent, Message, MessageDelta, MessageRole
from promptimus.errors import (
    BudgetExceeded,
    RequestRejected,
    ResponseCacheError,
    RetryBudgetExhausted,
    StreamInterrupted,
)
from promptimus.llms import (
    CachedLLM,
    FallbackLLM,
    MemoryCache,
    ScriptedLLM,
    SQLiteCache,
    aaccumulate,
)
from promptimus.llms.cache_key import request_key, request_options
from promptimus.llms.openai import OpenAILike
from promptimus.modules.prompt import Prompt
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall
from promptimus.transport.retry import RetryPolicy

QUESTION = [Message(role=MessageRole.USER, content="What is 2+2?")]
COLD = {"temperature": 0}
WAIT = 60  # generous bound on anything a test awaits


def provider(srv: FakeOpenAIServer, *, key: str | None = None, **call_kwargs: Any) -> OpenAILike:
    return OpenAILike(
        "fake-model",
        api_key=key or srv.api_key,
        base_url=srv.base_url,
        retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01),
        timeout=10,
        call_kwargs=call_kwargs,
    )


def cached(srv: FakeOpenAIServer, cache: Any = None, **options: Any) -> CachedLLM:
    nondeterministic = options.pop("cache_nondeterministic", False)
    return CachedLLM(
        provider(srv, **options),
        cache if cache is not None else MemoryCache(),
        cache_nondeterministic=nondeterministic,
    )


# --- hits and misses ----------------------------------------------------------------------------


async def test_a_repeated_request_is_answered_from_the_cache(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Reply("Four.", usage={"prompt_tokens": 12, "completion_tokens": 2}))
    llm = cached(fake_openai, **COLD)

    first = await llm.achat(QUESTION)
    second = await llm.achat(QUESTION)

    assert len(fake_openai.chat.requests) == 1
    assert second.content == first.content == "Four."
    assert second.model_name == first.model_name == "fake-model"
    assert first.usage is not None and first.usage.prompt_tokens == 12
    assert not first.usage.cache_hit
    assert second.usage is not None and second.usage.cache_hit
    assert second.usage.total_tokens == second.usage.prompt_tokens == 0
    assert (llm.hits, llm.misses) == (1, 1)


async def test_anything_that_changes_the_reply_changes_the_key(
    fake_openai: FakeOpenAIServer,
) -> None:
    llm = cached(fake_openai, **COLD)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    image = ImageContent(url="https://example.com/a.png")
    variants: list[tuple[list[Message], dict[str, Any]]] = [
        (QUESTION, {}),
        ([Message(role=MessageRole.USER, content="What is 2+3?")], {}),
        (QUESTION, {"tools": [tool]}),
        (QUESTION, {"max_tokens": 5}),
        ([Message(role=MessageRole.USER, content=QUESTION[0].content, images=[image])], {}),
    ]
    for history, kwargs in variants:
        await llm.achat(history, **kwargs)
    for history, kwargs in variants:
        await llm.achat(history, **kwargs)

    assert len(fake_openai.chat.requests) == len(variants)
    assert llm.hits == len(variants)


def test_the_key_ignores_the_api_key_and_transport_options_but_not_the_server() -> None:
    one = OpenAILike("m", api_key="sk-one-1234", base_url="http://a/v1")
    other_key = OpenAILike("m", api_key="sk-two-5678", base_url="http://a/v1")
    other_host = OpenAILike("m", api_key="sk-one-1234", base_url="http://b/v1")

    def key(llm: Any, **kwargs: Any) -> str:
        return request_key(llm, QUESTION, request_options(llm, {"temperature": 0, **kwargs}))

    assert key(one) == key(other_key) == key(one, stream=True, timeout=3, extra_headers={"x": "1"})
    assert key(one) != key(other_host)
    assert key(one) != key(OpenAILike("m2", api_key="k", base_url="http://a/v1"))
    # reply metadata in the history does not count, what is sent does
    said = Message(role=MessageRole.ASSISTANT, content="4", model_name="x", finish_reason="stop")
    plain = Message(role=MessageRole.ASSISTANT, content="4")
    assert request_key(one, [*QUESTION, said], {}) == request_key(one, [*QUESTION, plain], {})


@pytest.mark.parametrize("options", [{"temperature": 1}, {}, {"temperature": 0.2}])
async def test_nondeterministic_requests_are_not_cached_unless_opted_in(
    fake_openai: FakeOpenAIServer, options: dict[str, Any]
) -> None:
    llm = cached(fake_openai, **options)
    await llm.achat(QUESTION)
    await llm.achat(QUESTION)
    assert len(fake_openai.chat.requests) == 2
    assert llm.uncacheable == 2

    opted = cached(fake_openai, cache_nondeterministic=True, **options)
    await opted.achat(QUESTION)
    await opted.achat(QUESTION)
    assert len(fake_openai.chat.requests) == 3


async def test_temperature_per_call_overrides_the_providers_default(
    fake_openai: FakeOpenAIServer,
) -> None:
    llm = cached(fake_openai, temperature=1)
    for _ in range(2):
        await llm.achat(QUESTION, temperature=0)
    assert len(fake_openai.chat.requests) == 1


# --- never cached -------------------------------------------------------------------------------


async def test_errors_are_never_cached(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Fault.status(400), Fault.status(503), Fault.status(503), "Four.")
    llm = cached(fake_openai, **COLD)

    with pytest.raises(RequestRejected):
        await llm.achat(QUESTION)
    with pytest.raises(RetryBudgetExhausted):
        await llm.achat(QUESTION)
    assert (await llm.achat(QUESTION)).content == "Four."
    assert (await llm.achat(QUESTION)).usage.cache_hit  # type: ignore[union-attr]

    assert len(fake_openai.chat.requests) == 4


async def test_a_cut_stream_is_never_cached(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Fault.cut(), Reply("one two three"))
    llm = cached(fake_openai, **COLD)

    with pytest.raises(StreamInterrupted):
        await aaccumulate(llm.astream(QUESTION))
    whole = await aaccumulate(llm.astream(QUESTION))
    replayed = await aaccumulate(llm.astream(QUESTION))

    assert len(fake_openai.chat.requests) == 2
    assert whole.content == replayed.content == "one two three"
    assert replayed.usage is not None and replayed.usage.cache_hit
    assert replayed.model_name == "fake-model"


async def read_first_chunk(llm: Any) -> Any:
    """A stream of QUESTION's answer, read up to its first text and left open."""
    stream = llm.astream(QUESTION)
    async for delta in stream:
        if delta.content:
            break
    return stream


async def test_a_stream_left_before_its_end_is_not_cached(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Reply("one two three four"), Reply("one two three four"))
    llm = cached(fake_openai, **COLD)

    stream = await read_first_chunk(llm)
    await stream.aclose()  # type: ignore[attr-defined]
    await aaccumulate(llm.astream(QUESTION))

    assert len(fake_openai.chat.requests) == 2


class Unfinished:
    """A custom LLM whose stream ends without a finish_reason (cut off, but raising nothing)."""

    model_name = "unfinished"
    calls = 0

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        raise NotImplementedError

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        self.calls += 1
        yield MessageDelta(content="half an ans")


async def test_a_stream_without_finish_reason_is_not_cached() -> None:
    inner = Unfinished()
    llm = CachedLLM(inner, MemoryCache(), cache_nondeterministic=True)

    for _ in range(2):
        assert [d.content async for d in llm.astream(QUESTION)] == ["half an ans"]

    assert inner.calls == 2 and llm.hits == 0


async def test_stream_and_plain_requests_share_entries(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Reply("shared", tool_calls=[ToolCall("f", {"x": 1}, id="c1")]))
    llm = cached(fake_openai, **COLD)

    plain = await llm.achat(QUESTION)
    streamed = await aaccumulate(llm.astream(QUESTION))

    assert len(fake_openai.chat.requests) == 1
    assert streamed.model_dump(exclude={"usage"}) == plain.model_dump(exclude={"usage"})


# --- usage, budgets, concurrency ----------------------------------------------------------------


async def test_hits_count_no_token_and_no_request(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Reply("ok", usage={"prompt_tokens": 40, "completion_tokens": 10}))
    prompt = Prompt("Answer.").with_llm(cached(fake_openai, **COLD))

    with pm.track_usage() as usage:
        await prompt.forward(QUESTION)
        await prompt.forward(QUESTION)
        await prompt.forward(QUESTION)
    assert (usage.total.requests, usage.total.total_tokens, usage.total.cache_hits) == (1, 50, 2)

    with pm.budget(max_tokens=1):  # spent nothing: hits are free, so the budget never trips
        for _ in range(3):
            await prompt.forward(QUESTION)
    with pm.budget(max_tokens=1), pytest.raises(BudgetExceeded):
        for text in ("a", "b"):  # real requests do spend it
            await prompt.forward([Message(role=MessageRole.USER, content=text)])


async def test_identical_concurrent_requests_are_sent_once(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.chat.script(Fault.delay(0.2, then="slow answer"))
    llm = cached(fake_openai, **COLD)

    replies = await asyncio.wait_for(asyncio.gather(*(llm.achat(QUESTION) for _ in range(5))), WAIT)

    assert len(fake_openai.chat.requests) == 1
    assert fake_openai.max_in_flight == 1
    assert {reply.content for reply in replies} == {"slow answer"}
    assert (llm.misses, llm.hits) == (1, 4)


async def test_when_the_leader_fails_a_waiting_request_is_sent_itself(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.chat.script(Fault.delay(0.2, then=Fault.status(400)), "second try")
    llm = cached(fake_openai, **COLD)

    results = await asyncio.wait_for(
        asyncio.gather(llm.achat(QUESTION), llm.achat(QUESTION), return_exceptions=True), WAIT
    )

    assert isinstance(results[0], RequestRejected)
    assert isinstance(results[1], Message) and results[1].content == "second try"
    assert len(fake_openai.chat.requests) == 2


# --- the caches ---------------------------------------------------------------------------------


async def test_memory_cache_drops_the_least_recently_used() -> None:
    cache = MemoryCache(max_entries=2)
    await cache.put("a", "A")
    await cache.put("b", "B")
    assert await cache.get("a") == "A"  # a is now the most recently used
    await cache.put("c", "C")

    assert await cache.get("b") is None
    assert (await cache.get("a"), await cache.get("c")) == ("A", "C")
    assert len(cache) == 2
    with pytest.raises(ResponseCacheError):
        MemoryCache(max_entries=0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_sqlite_entries_expire_after_ttl(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    clock = Clock()
    llm = cached(fake_openai, SQLiteCache(tmp_path / "c.sqlite", ttl=60, clock=clock), **COLD)

    await llm.achat(QUESTION)
    clock.now += 59
    assert (await llm.achat(QUESTION)).usage.cache_hit  # type: ignore[union-attr]
    clock.now += 1
    assert not (await llm.achat(QUESTION)).usage.cache_hit  # type: ignore[union-attr]

    assert len(fake_openai.chat.requests) == 2


async def test_sqlite_evicts_the_oldest_entries_past_max_bytes(tmp_path: Path) -> None:
    clock = Clock()
    cache = SQLiteCache(tmp_path / "c.sqlite", max_bytes=1000, clock=clock)
    for i in range(5):  # 5 entries of 2 + 298 = 300 bytes, stored one second apart
        clock.now += 1
        await cache.put(f"k{i}", "x" * 298)

    assert [await cache.get(f"k{i}") is not None for i in range(5)] == [False] * 2 + [True] * 3
    assert cache.total_bytes == 900 and len(cache) == 3
    await cache.put("huge", "y" * 2000)  # larger than the whole cache: not stored, nothing lost
    assert await cache.get("huge") is None and len(cache) == 3


async def test_sqlite_rewriting_a_key_keeps_the_byte_count(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "c.sqlite", max_bytes=10_000)
    for value in ("a" * 100, "b" * 50, "c" * 70):
        await cache.put("same", value)
    assert cache.total_bytes == len("same") + 70 and await cache.get("same") == "c" * 70


async def test_a_write_waiting_for_another_writer_does_not_block_the_event_loop(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "c.sqlite"
    cache = SQLiteCache(path, busy_timeout=5)
    other = sqlite3.connect(path, isolation_level=None)  # another process's writer, say
    other.execute("BEGIN IMMEDIATE")
    ticks = 0
    five_ticks = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            if ticks >= 5:
                five_ticks.set()
            await asyncio.sleep(0.001)

    ticker = asyncio.create_task(tick())
    put = asyncio.create_task(cache.put("k", "v"))
    # the loop ran on while the write waited: a write holding the loop for the busy timeout
    # would have ended (given up) before five ticks could happen
    await asyncio.wait_for(five_ticks.wait(), WAIT)
    assert not put.done()
    other.execute("COMMIT")
    await asyncio.wait_for(put, WAIT)
    ticker.cancel()
    other.close()

    assert await cache.get("k") == "v"


async def test_a_pickled_sqlite_cache_opens_the_same_file(tmp_path: Path) -> None:
    cache = SQLiteCache(tmp_path / "c.sqlite", max_bytes=5000, ttl=60)
    await cache.put("k", "stored before pickling")

    copy = pickle.loads(pickle.dumps(cache))

    assert (copy.max_bytes, copy.ttl) == (5000, 60)
    assert await copy.get("k") == "stored before pickling"
    await copy.put("k2", "and after")
    assert await cache.get("k2") == "and after"


def test_sqlite_cache_refuses_a_file_it_cannot_use(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("just some text, certainly not an SQLite database " * 20)
    with pytest.raises(ResponseCacheError, match="SQLite"):
        SQLiteCache(not_a_db)
    with pytest.raises(ResponseCacheError):
        SQLiteCache(tmp_path / "missing-folder" / "c.sqlite")
    with pytest.raises(ResponseCacheError):
        SQLiteCache(tmp_path / "c.sqlite", max_bytes=0)


async def test_no_api_key_in_the_cache_file(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    key = "sk-very-secret-cache-key-0042"
    path = tmp_path / "c.sqlite"
    cache = SQLiteCache(path)
    llm = CachedLLM(provider(fake_openai, key=key, temperature=0), cache)
    await llm.achat(QUESTION)
    await aaccumulate(llm.astream([Message(role=MessageRole.USER, content="another")]))
    cache.close()

    stored = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("c.sqlite*")))  # noqa: ASYNC240
    assert b"fake-model" in stored  # the entries are there...
    assert key.encode() not in stored  # ...without the key


CHILD = """
import asyncio, json, sys
from promptimus.dto import Message
from promptimus.llms import CachedLLM, SQLiteCache
from promptimus.llms.openai import OpenAILike

base_url, path = sys.argv[1], sys.argv[2]
llm = CachedLLM(
    OpenAILike("fake-model", api_key="sk-fake", base_url=base_url, call_kwargs={"temperature": 0}),
    SQLiteCache(path),
)
reply = asyncio.run(llm.achat([Message(role="user", content="What is 2+2?")]))
print(json.dumps({"content": reply.content, "cache_hit": reply.usage.cache_hit}))
"""


def run_child(code: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_sqlite_cache_hits_across_processes(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.chat.script("Four, from the first process.")
    path = tmp_path / "shared.sqlite"
    first = await cached(fake_openai, SQLiteCache(path), **COLD).achat(QUESTION)

    out = await asyncio.to_thread(run_child, CHILD, fake_openai.base_url, str(path))

    assert json.loads(out) == {"content": first.content, "cache_hit": True}
    assert len(fake_openai.chat.requests) == 1  # the second process sent nothing


WRITER = """
import sys
from promptimus.llms import SQLiteCache

path, name = sys.argv[1], sys.argv[2]
cache = SQLiteCache(path, busy_timeout=60)
for i in range(100):
    cache.put_sync(f"{name}-{i}", name * (10 + i))
print("done")
"""


def test_several_processes_write_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    names = ["a", "b", "c"]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    for child in children:
        out, err = child.communicate(timeout=WAIT)
        assert child.returncode == 0 and out.strip() == "done", err
        assert "write failed" not in err

    cache = SQLiteCache(path)
    assert len(cache) == 300
    expected = sum(len(f"{n}-{i}") + 10 + i for n in names for i in range(100))
    assert cache.total_bytes == expected
    assert cache.get_sync("b-99") == "b" * 109


# --- wrappers together, agents end to end -------------------------------------------------------


async def test_capabilities_stay_with_the_wrapped_provider(fake_openai: FakeOpenAIServer) -> None:
    inner = provider(fake_openai, temperature=0)
    llm = CachedLLM(inner, MemoryCache())
    llm.capabilities.learn_response_format("json_object")
    assert inner.capabilities.response_format == "json_object"


async def test_a_cached_fallback_chain_keys_on_every_provider(
    fake_openai: FakeOpenAIServer,
) -> None:
    spare = ScriptedLLM(["spare"] * 3, model_name="spare")
    cache = MemoryCache()
    one = CachedLLM(FallbackLLM(provider(fake_openai, temperature=0), spare), cache)
    other = CachedLLM(FallbackLLM(provider(fake_openai, temperature=0)), cache)

    # temperature per call: the scripted spare sets none, so the chain's shared options do not
    await one.achat(QUESTION, temperature=0)
    await other.achat(QUESTION, temperature=0)

    assert len(fake_openai.chat.requests) == 2  # a different chain is a different key
    assert (one.misses, other.misses, other.hits) == (1, 1, 0)  # both were cacheable


async def test_a_cached_fallback_chain_keys_on_each_providers_own_options(
    fake_openai: FakeOpenAIServer,
) -> None:
    # An option only the primary sets (max_tokens) is not one the chain's providers share, yet
    # it changes the reply: a chain with another max_tokens must not be served the short one.
    fake_openai.chat.script(Reply("cut"), Reply("the whole answer"))
    cache = MemoryCache()
    short = CachedLLM(
        FallbackLLM(provider(fake_openai, temperature=0, max_tokens=5), provider(fake_openai)),
        cache,
    )
    long = CachedLLM(
        FallbackLLM(provider(fake_openai, temperature=0, max_tokens=500), provider(fake_openai)),
        cache,
    )

    first = await asyncio.wait_for(short.achat(QUESTION, temperature=0), WAIT)
    second = await asyncio.wait_for(long.achat(QUESTION, temperature=0), WAIT)

    assert (first.content, second.content) == ("cut", "the whole answer")
    assert [r["max_tokens"] for r in fake_openai.chat.requests] == [5, 500]
    assert (short.misses, long.misses, long.hits) == (1, 1, 0)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_an_agent_answers_a_repeated_run_from_the_cache(
    fake_openai: FakeOpenAIServer, stream: bool
) -> None:
    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})], usage={"prompt_tokens": 30}),
        Reply("It is 5.", usage={"prompt_tokens": 50, "completion_tokens": 4}),
    )
    llm = cached(fake_openai, **COLD)

    async def run() -> Any:
        agent = OpenaiToolCallingAgent("Use tools.", [add]).with_llm(llm)
        if stream:
            events = [event async for event in agent.stream("2+3?")]
            return events[-1].output, events[-1].record  # type: ignore[attr-defined]
        return await agent.run("2+3?")

    first_output, first = await asyncio.wait_for(run(), WAIT)
    second_output, second = await asyncio.wait_for(run(), WAIT)

    assert len(fake_openai.chat.requests) == 2  # the second run sent nothing
    assert second_output.content == first_output.content == "It is 5."
    assert [s.reply.usage.cache_hit for s in second.steps] == [True, True]
    assert second.usage.total_tokens == 0 and first.usage.prompt_tokens == 80
    assert [s.reply.model_name for s in second.steps] == ["fake-model"] * 2
    assert [c.result for c in second.tool_calls] == [c.result for c in first.tool_calls]


async def test_a_cache_file_broken_after_opening_never_fails_the_call(
    fake_openai: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The file is overwritten (a bad copy, a full disk's leftovers) while the cache is in use:
    # the model's reply must still reach the caller, with a warning, as for a failed read.
    path = tmp_path / "replies.sqlite"
    cache = SQLiteCache(path)
    fake_openai.chat.script(Reply("Four."), Reply("Four."))
    llm = cached(fake_openai, cache, **COLD)
    cache.close()
    path.write_bytes(b"not an sqlite file " * 300)
    for leftover in (tmp_path / "replies.sqlite-wal", tmp_path / "replies.sqlite-shm"):
        leftover.unlink(missing_ok=True)

    first = await asyncio.wait_for(llm.achat(QUESTION), WAIT)
    second = await asyncio.wait_for(llm.achat(QUESTION), WAIT)

    assert first.content == second.content == "Four."
    assert len(fake_openai.chat.requests) == 2  # nothing stored, nothing served from the file
    assert any("write failed" in r.getMessage() for r in caplog.records)


async def test_a_request_never_waits_for_a_stream_its_own_caller_is_still_reading(
    fake_openai: FakeOpenAIServer,
) -> None:
    # A stream's pace is its reader's: a caller that reads the first chunk, then asks the same
    # question in full (a UI preview, a retry path) must get an answer, not wait for itself.
    fake_openai.chat.script(Reply("one two three four"), Reply("one two three four"))
    llm = cached(fake_openai, **COLD)

    stream = await read_first_chunk(llm)
    whole = await asyncio.wait_for(llm.achat(QUESTION), WAIT)
    await stream.aclose()  # type: ignore[attr-defined]

    assert whole.content == "one two three four"
    assert len(fake_openai.chat.requests) == 2
