"""What serving costs: many streaming clients of a served agent against the same agent called in
process, in one run.

    uv run python bench/serve.py [--clients 200] [--turns 3] [--rounds 2] [--single 60]
                                 [--idle 2000]

Three processes: the fake OpenAI server answering every request 20 ms late (a fast hosted model
takes ten times that), the served agent (`promptimus.serve.app` under uvicorn, its conversations
in a SQLite store), and this one, which runs the clients. The agent is an
`OpenaiToolCallingAgent` on `OpenAILike` pointed at the fake server, whose answer repeats every
user message of the conversation it was sent, so a reply shows the whole history its
conversation had.

- served: `--clients` clients at once, each with its own `openai.AsyncOpenAI`, each holding a
  conversation of its own (the `user` field) for `--turns` streamed turns;
- in process: the same clients as tasks of this process, each turn `agent.stream(text)` inside
  `Session(conversation, store=store)` (a store of its own), as the server runs it.

The two alternate for `--rounds` rounds, each round with new conversations. A turn's latency is
from its request to the answer's last piece. Printed: requests per second, the latency of each
at p50 and p99, their ratios (served / in process) and the difference (what the server adds:
HTTP, JSON, SSE, the SDK), and the CPU time per request of the served process against that of
the runs in process (the figure a busy machine blurs least). Every answer is checked: one naming
another client's turn is a crossed conversation, any other wrong or failed answer a lost
request; both must be 0 (asserted).
Then `--idle` new conversations of one turn each are made, and the served process's resident
memory before and after, over their number, is the memory per idle stored conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from child_server import serve, spawned

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult
from promptimus.llms.openai import OpenAILike
from promptimus.sessions import SQLiteSessionStore

MODEL_LATENCY = 0.02


def echo(body: dict[str, Any]) -> str:
    """The fake model's answer: every user message it was sent, in order."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return "heard: " + " | ".join(said)


def make_agent(model_url: str) -> OpenaiToolCallingAgent:
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=model_url, max_retries=0)
    return OpenaiToolCallingAgent("You repeat what you hear.").with_llm(llm)


def run_server(model_url: str, store_path: str) -> None:
    """The served process: the agent under uvicorn on a free port of 127.0.0.1; prints
    ``READY <url>`` once it listens."""
    import uvicorn

    from promptimus.serve import app

    store = SQLiteSessionStore(store_path)
    asgi = app(make_agent(model_url), store=store, max_concurrent_runs=10_000)
    # IPPROTO_TCP named, as uvicorn's own sockets have it: asyncio sets TCP_NODELAY only on
    # those, and without it each answer waits out the client's delayed ACK (about 40 ms)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    port = sock.getsockname()[1]
    # Idle connections are kept 75 s, longer than any client keeps them (httpx: 5 s). With
    # uvicorn's default of 5 s a busy client reuses a connection the server is closing, and
    # that request fails (the SDK's retries, off here so that every failure counts, hide it).
    config = uvicorn.Config(
        asgi,
        log_level="warning",
        access_log=False,
        lifespan="off",
        backlog=2048,
        timeout_keep_alive=75,
    )
    print(f"READY http://127.0.0.1:{port}", flush=True)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


@contextmanager
def served_process(model_url: str, store_path: str) -> Iterator[tuple[str, int]]:
    command = [sys.executable, __file__, "--served", model_url, "--store", store_path]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the served agent did not start (printed {line!r})")
        yield line.split(" ", 1)[1].strip(), process.pid
    finally:
        process.terminate()
        process.wait(30)


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS line: this measure needs Linux's /proc")


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid` has used so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    lost: int = 0
    crossed: int = 0
    here_cpu: float = 0.0  # this process's CPU seconds (the clients, or the in-process runs)
    server_cpu: float = 0.0  # the served process's

    def judge(self, client: str, said: list[str], answer: str | None) -> None:
        if answer == "heard: " + " | ".join(said):
            return
        if answer is not None and any(
            part.split(" ")[0] != client for part in answer.removeprefix("heard: ").split(" | ")
        ):
            self.crossed += 1
        else:
            self.lost += 1


Turn = Callable[[str, str], Awaitable[str]]


async def clients(
    tally: Tally, prefix: str, count: int, turns: int, turn: Turn, server: int | None = None
) -> None:
    """`count` clients at once, each `turns` turns of its own conversation; the CPU time of
    this process and of the `server` process counted."""

    async def one(n: int) -> None:
        client = f"{prefix}c{n}"
        said: list[str] = []
        for t in range(turns):
            text = f"{client} turn {t}"
            said.append(text)
            start = time.perf_counter()
            try:
                answer: str | None = await turn(client, text)
            except Exception as exc:  # counted as lost, and shown
                cause = exc.__cause__ or exc.__context__
                print(f"  {client}: {type(exc).__name__}: {exc} ({cause!r})", file=sys.stderr)
                answer = None
            tally.latencies.append(time.perf_counter() - start)
            tally.judge(client, said, answer)

    served_before = cpu_seconds(server) if server else 0.0
    here_before = time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(count)))
    tally.seconds += time.perf_counter() - start
    tally.here_cpu += time.process_time() - here_before
    if server:
        tally.server_cpu += cpu_seconds(server) - served_before


def served_turn(url: str) -> tuple[Turn, Callable[[], Awaitable[None]]]:
    """A turn of a served conversation: each client its own `openai.AsyncOpenAI`, all on one
    HTTP connection pool (made once, as a client process would: the pool's setup, TLS
    certificates read included, is not what a request costs)."""
    import httpx
    import openai

    pool = openai.DefaultAsyncHttpxClient(
        limits=httpx.Limits(max_connections=2000, max_keepalive_connections=2000)
    )
    sdks: dict[str, openai.AsyncOpenAI] = {}

    async def turn(client: str, text: str) -> str:
        sdk = sdks.get(client)
        if sdk is None:
            sdk = sdks[client] = openai.AsyncOpenAI(
                base_url=f"{url}/v1",
                api_key="unused",
                max_retries=0,
                timeout=120,
                http_client=pool,
            )
        stream = await sdk.chat.completions.create(
            model="served",
            messages=[{"role": "user", "content": text}],
            user=client,
            stream=True,
        )
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        return "".join(pieces)

    async def close() -> None:
        sdks.clear()
        await pool.aclose()

    return turn, close


def in_process_turn(agent: OpenaiToolCallingAgent, store: SQLiteSessionStore) -> Turn:
    async def turn(client: str, text: str) -> str:
        with pm.Session(client, store=store):
            async for event in agent.stream(text):
                if isinstance(event, FinalResult):
                    return str(event.output)
        raise RuntimeError("the run ended without an answer")

    return turn


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        fake = [sys.executable, __file__, "--fake-model", "--latency", str(MODEL_LATENCY)]
        with (
            spawned(fake) as model_url,
            served_process(model_url, str(folder / "served.db")) as (url, pid),
        ):
            store = SQLiteSessionStore(folder / "in-process.db")
            agent = make_agent(model_url)
            local = in_process_turn(agent, store)
            remote, close = served_turn(url)
            served, in_process = Tally(), Tally()
            await clients(Tally(), "warm", 20, 2, local)
            await clients(Tally(), "warm", 20, 2, remote)
            for r in range(args.rounds):  # alternate which goes first
                order = [(in_process, local, None), (served, remote, pid)]
                for tally, turn, server in order if r % 2 == 0 else order[::-1]:
                    await clients(tally, f"r{r}", args.clients, args.turns, turn, server)
            await close()
            report(args, served, in_process)
            remote, close = served_turn(url)
            await one_at_a_time(args.single, local, remote, pid)
            await idle_memory(args.idle, pid, remote, close)
            await store.aclose()
        assert served.lost == 0 and in_process.lost == 0, "requests were lost"
        assert served.crossed == 0 and in_process.crossed == 0, "conversations crossed"


def report(args: argparse.Namespace, served: Tally, in_process: Tally) -> None:
    requests = len(served.latencies)
    print(
        f"{args.clients} streaming clients x {args.turns} turns x {args.rounds} rounds "
        f"({requests} requests each way), model latency {MODEL_LATENCY * 1e3:.0f} ms"
    )
    print(
        f"requests/s: served {requests / served.seconds:7.1f}, in process "
        f"{len(in_process.latencies) / in_process.seconds:7.1f}, ratio "
        f"{(requests / served.seconds) / (len(in_process.latencies) / in_process.seconds):.3f}"
    )
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        s, i = quantile(served.latencies, q), quantile(in_process.latencies, q)
        print(
            f"latency {name}: served {s * 1e3:8.2f} ms, in process {i * 1e3:8.2f} ms, "
            f"ratio {s / i:.3f}, added {(s - i) * 1e3:+.2f} ms"
        )
    server_ms = served.server_cpu / requests * 1e3
    in_process_ms = in_process.here_cpu / len(in_process.latencies) * 1e3
    print(
        f"CPU per request: the served process {server_ms:.2f} ms (its clients "
        f"{served.here_cpu / requests * 1e3:.2f} ms), in process {in_process_ms:.2f} ms, "
        f"ratio {server_ms / in_process_ms:.3f}, added {server_ms - in_process_ms:+.2f} ms"
    )
    print(
        f"lost: served {served.lost}, in process {in_process.lost}; "
        f"crossed: served {served.crossed}, in process {in_process.crossed}"
    )


async def one_at_a_time(count: int, local: Turn, remote: Turn, pid: int) -> None:
    """`count` requests each way, one at a time, alternating: what the server adds to one
    request when nothing queues behind others."""
    served, in_process = Tally(), Tally()
    for n in range(count):
        await clients(in_process, f"one{n}-", 1, 1, local)
        await clients(served, f"one{n}-", 1, 1, remote, pid)
    assert served.lost == in_process.lost == served.crossed == in_process.crossed == 0
    s, i = statistics.median(served.latencies), statistics.median(in_process.latencies)
    print(
        f"one request at a time ({count} each way): served {s * 1e3:.2f} ms, in process "
        f"{i * 1e3:.2f} ms (medians), ratio {s / i:.3f}, added {(s - i) * 1e3:+.2f} ms"
    )


async def idle_memory(
    count: int, pid: int, turn: Turn, close: Callable[[], Awaitable[None]]
) -> None:
    before = resident_bytes(pid)
    tally = Tally()
    for batch in range(0, count, 100):
        await clients(tally, f"idle{batch}-", min(100, count - batch), 1, turn)
    await close()  # idle: no client keeps a connection open
    await asyncio.sleep(1)
    after = resident_bytes(pid)
    assert tally.lost == 0 and tally.crossed == 0, "idle conversations were lost or crossed"
    print(
        f"memory per idle stored conversation: {(after - before) / count:8.0f} bytes "
        f"({count} conversations, served process {before / 2**20:.1f} -> "
        f"{after / 2**20:.1f} MiB resident)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--single", type=int, default=60)
    parser.add_argument("--fake-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--served", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.fake_model:
        serve(echo, arguments.latency)
    elif arguments.served:
        run_server(arguments.served, arguments.store)
    else:
        asyncio.run(main(arguments))
