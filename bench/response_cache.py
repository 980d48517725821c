"""What a response-cache hit costs next to a real call, and what SQLite work costs per entry.

    uv run python bench/response_cache.py [--calls 500] [--rounds 5]

The fake OpenAI server runs in its own process. Variants are interleaved in short rounds so
machine noise hits them alike; each prints the median wall time per call and this process's CPU
time per call, with their ratio to a real (uncached) call through `OpenAILike`:
- real call: `OpenAILike.achat` to the fake server (no cache);
- memory hit / sqlite hit: `CachedLLM` answering the same request from `MemoryCache` /
  `SQLiteCache`;
- memory miss / sqlite miss: `CachedLLM` with a new request each time (key, real call, store);
then the raw SQLite operations: a read on the caller's thread, the same read through
`asyncio.to_thread`, and a write (one transaction) inline and through `asyncio.to_thread`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from promptimus.dto import Message, MessageRole
from promptimus.llms import CachedLLM, MemoryCache, SQLiteCache
from promptimus.llms.openai import OpenAILike
from promptimus.testing import FakeOpenAIServer

Call = Callable[[], Awaitable[object]]
QUESTION = [
    Message(role=MessageRole.SYSTEM, content="You are a benchmark."),
    Message(role=MessageRole.USER, content="ping"),
]


def variants(base_url: str, api_key: str, folder: Path) -> tuple[dict[str, Call], SQLiteCache]:
    llm = OpenAILike(
        "fake-model", api_key=api_key, base_url=base_url, call_kwargs={"temperature": 0}
    )
    sqlite = SQLiteCache(folder / "bench.sqlite")
    memory_llm = CachedLLM(llm, MemoryCache(max_entries=100_000))
    sqlite_llm = CachedLLM(llm, sqlite)
    fresh = itertools.count()

    def new_question() -> list[Message]:
        return [QUESTION[0], Message(role=MessageRole.USER, content=f"ping {next(fresh)}")]

    async def real_call() -> object:
        return await llm.achat(QUESTION)

    async def memory_hit() -> object:
        return await memory_llm.achat(QUESTION)

    async def sqlite_hit() -> object:
        return await sqlite_llm.achat(QUESTION)

    async def memory_miss() -> object:
        return await memory_llm.achat(new_question())

    async def sqlite_miss() -> object:
        return await sqlite_llm.achat(new_question())

    calls = {
        "real call": real_call,
        "memory hit": memory_hit,
        "sqlite hit": sqlite_hit,
        "memory miss": memory_miss,
        "sqlite miss": sqlite_miss,
    }
    return calls, sqlite


async def measure(call: Call, n: int) -> tuple[float, float]:
    """Median wall seconds per call, and CPU seconds per call, over ``n`` sequential calls."""
    walls = []
    cpu = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        await call()
        walls.append(time.perf_counter() - start)
    return statistics.median(walls), (time.process_time() - cpu) / n


async def sqlite_ops(cache: SQLiteCache, n: int) -> dict[str, float]:
    value = Message(role=MessageRole.ASSISTANT, content="pong " * 40).model_dump_json()
    keys = [f"bench-{i}" for i in range(n)]
    results: dict[str, float] = {}

    start = time.perf_counter()
    for key in keys:
        cache.put_sync(key, value)
    results["write, inline"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for key in keys:
        await asyncio.to_thread(cache.put_sync, key + "t", value)
    results["write, to_thread"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for key in keys:
        cache.get_sync(key)
    results["read, inline"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for key in keys:
        await asyncio.to_thread(cache.get_sync, key)
    results["read, to_thread"] = (time.perf_counter() - start) / n
    return results


async def main(calls: int, rounds: int) -> None:
    with FakeOpenAIServer.spawn() as server, tempfile.TemporaryDirectory() as folder:
        table, sqlite = variants(server.base_url, server.api_key, Path(folder))
        for call in table.values():  # warm up: connections, first entries
            await call()
        per_round = max(calls // rounds, 1)
        walls: dict[str, list[float]] = {name: [] for name in table}
        cpus: dict[str, list[float]] = {name: [] for name in table}
        for _ in range(rounds):
            for name, call in table.items():
                wall, cpu = await measure(call, per_round)
                walls[name].append(wall)
                cpus[name].append(cpu)
        base_wall = statistics.median(walls["real call"])
        base_cpu = statistics.median(cpus["real call"])
        print(f"{'variant':<14}{'wall/call':>12}{'ratio':>9}{'cpu/call':>12}{'ratio':>9}")
        for name in table:
            wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
            print(
                f"{name:<14}{wall * 1e6:>10.0f}us{wall / base_wall:>8.3f}x"
                f"{cpu * 1e6:>10.0f}us{cpu / base_cpu:>8.3f}x"
            )
        print()
        for name, seconds in (await sqlite_ops(sqlite, per_round)).items():
            print(f"sqlite {name:<18}{seconds * 1e6:>10.1f}us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
