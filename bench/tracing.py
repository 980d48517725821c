"""Tracing overhead, side by side in one run against one fake server.

    uv run python bench/tracing.py [--calls 400] [--rounds 10] [--phoenix-url URL | --no-phoenix]

Variants of one `Prompt.forward` call (system + user message, two spans when traced: the module
and its LLM request), interleaved in rounds so machine noise hits them alike:
- raw openai SDK (the baseline);
- untraced: promptimus as it is without `tracing.instrument()`;
- tracing off: instrumented, but no tracer provider configured (the OpenTelemetry no-op);
- in-memory: an SDK `TracerProvider` with the in-memory exporter (simple processor);
- batch OTLP to Phoenix: the `phoenix_tracer.register()` set-up (batch processor, OTLP/HTTP)
  exporting to a local Phoenix, started here unless `--phoenix-url` names a running one.
Printed: median latency and client CPU per call with ratios to the raw SDK and to the untraced
figure (target for "tracing off": <= 1.02x untraced); then the CPU cost per span, measured with
the network call stubbed out (what tracing adds to our own code, divided by spans per call).
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
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import openai
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import promptimus as pm
from promptimus import tracing
from promptimus.llms import OpenAILike
from promptimus.modules import Prompt
from promptimus.testing import FakeOpenAIServer

SYSTEM = "You are a benchmark."
QUESTION = "ping"
SPANS_PER_CALL = 2

Call = Callable[[], Awaitable[object]]
Setup = Callable[[], Callable[[], None]]  # turns a mode on, returns how to turn it off
_providers: list[TracerProvider] = []  # flushed and shut down before Phoenix stops


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_phoenix(timeout: float = 600) -> Iterator[str]:
    """`phoenix serve` on 127.0.0.1 (temporary working dir, telemetry off); yields its URL."""
    work = tempfile.mkdtemp(prefix="phoenix-bench-")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": work,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    with open(os.path.join(work, "server.log"), "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix did not start; see {work}/server.log")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def modes(phoenix_url: str | None) -> dict[str, Setup]:
    def untraced() -> Callable[[], None]:
        return lambda: None

    def tracing_off() -> Callable[[], None]:
        return tracing.instrument().remove  # the global provider is the API's no-op

    memory = InMemorySpanExporter()
    memory_provider = TracerProvider()
    memory_provider.add_span_processor(SimpleSpanProcessor(memory))

    def in_memory() -> Callable[[], None]:
        handle = tracing.instrument(memory_provider)

        def off() -> None:
            handle.remove()
            memory.clear()

        return off

    out: dict[str, Setup] = {
        "untraced": untraced,
        "tracing off": tracing_off,
        "in-memory": in_memory,
    }
    if phoenix_url is not None:
        from phoenix_tracer import register

        otlp_provider = register(endpoint=phoenix_url, project_name="bench")  # batch processor
        _providers.append(otlp_provider)
        tracing.instrument().remove()  # register() turned tracing on; each round does instead

        def batch_otlp() -> Callable[[], None]:
            return tracing.instrument(otlp_provider).remove

        out["batch OTLP (Phoenix)"] = batch_otlp
    return out


async def timed(call: Call, calls: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    cpu = time.process_time()

    async def worker() -> None:
        for _ in range(max(calls // concurrency, 1)):
            start = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.process_time() - cpu


async def measure(base_url: str, calls: int, rounds: int, phoenix_url: str | None) -> None:
    raw = openai.AsyncOpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url)
    prompt = Prompt(SYSTEM).with_llm(llm)
    history = [pm.Message(role="user", content=QUESTION)]
    raw_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    async def raw_call() -> object:
        return (await raw.chat.completions.create(model="fake-model", messages=raw_messages)).id

    async def prompt_call() -> object:
        return await prompt.forward(history)

    setups = modes(phoenix_url)
    names = ["raw openai SDK", *setups]
    for concurrency in (1, 32):
        samples: dict[str, list[float]] = {name: [] for name in names}
        cpu = dict.fromkeys(names, 0.0)
        for name in names:  # warm up
            off = setups[name]() if name in setups else (lambda: None)
            await timed(raw_call if name == names[0] else prompt_call, 64, concurrency)
            off()
        per_round = max(calls // rounds, concurrency)
        for _ in range(rounds):
            for name in names:
                off = setups[name]() if name in setups else (lambda: None)
                try:
                    call = raw_call if name == names[0] else prompt_call
                    latencies, seconds = await timed(call, per_round, concurrency)
                finally:
                    off()
                samples[name].extend(latencies)
                cpu[name] += seconds
        base = statistics.median(samples[names[0]])
        base_cpu = cpu[names[0]] / len(samples[names[0]])
        untraced = statistics.median(samples["untraced"])
        untraced_cpu = cpu["untraced"] / len(samples["untraced"])
        print(f"\nconcurrency {concurrency} ({len(samples[names[0]])} calls per variant)")
        print(
            f"{'variant':<22}{'median ms':>10}{'vs SDK':>8}{'vs untraced':>12}"
            f"{'CPU us/call':>13}{'vs SDK':>8}{'vs untraced':>12}"
        )
        for name in names:
            median = statistics.median(samples[name])
            per_call = cpu[name] / len(samples[name])
            print(
                f"{name:<22}{median * 1e3:>10.3f}{median / base:>7.3f}x{median / untraced:>11.3f}x"
                f"{per_call * 1e6:>13.0f}{per_call / base_cpu:>7.3f}x"
                f"{per_call / untraced_cpu:>11.3f}x"
            )


async def per_span_cost(base_url: str, calls: int, phoenix_url: str | None) -> None:
    """CPU per span with the network call stubbed out: (traced - untraced) / spans per call."""
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url)
    sdk = llm._factory.get()
    recorded = await sdk.chat.completions.create(
        model="fake-model",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
    )

    async def stub(**_: object) -> object:
        return recorded

    sdk.chat.completions.create = stub  # type: ignore[method-assign]
    prompt = Prompt(SYSTEM).with_llm(llm)
    history = [pm.Message(role="user", content=QUESTION)]
    results: dict[str, float] = {}
    for name, setup in modes(phoenix_url).items():
        best = float("inf")
        for _ in range(5):
            off = setup()
            try:
                start = time.process_time()
                for _ in range(calls):
                    await prompt.forward(history)
                best = min(best, (time.process_time() - start) / calls)
            finally:
                off()
        results[name] = best
    print("\nour own CPU per call, network stubbed (best of 5)")
    for name, seconds in results.items():
        extra = (seconds - results["untraced"]) / SPANS_PER_CALL
        print(f"{name:<22}{seconds * 1e6:>8.1f} us/call   {extra * 1e6:>7.1f} us per span")


def shut_down_exporters() -> None:
    for provider in _providers:
        provider.force_flush(30_000)
        provider.shutdown()
    _providers.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400, help="calls per variant")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument(
        "--phoenix-url", default=None, help="a running Phoenix (default: start one)"
    )
    parser.add_argument("--no-phoenix", action="store_true", help="skip the OTLP variant")
    args = parser.parse_args()

    with FakeOpenAIServer.spawn(reply="pong") as server:
        if args.no_phoenix:
            asyncio.run(measure(server.base_url, args.calls, args.rounds, None))
            asyncio.run(per_span_cost(server.base_url, 5000, None))
            return
        if args.phoenix_url:
            url: str = args.phoenix_url
            asyncio.run(measure(server.base_url, args.calls, args.rounds, url))
            asyncio.run(per_span_cost(server.base_url, 5000, url))
            shut_down_exporters()
            return
        with local_phoenix() as url:
            asyncio.run(measure(server.base_url, args.calls, args.rounds, url))
            asyncio.run(per_span_cost(server.base_url, 5000, url))
            shut_down_exporters()


if __name__ == "__main__":
    main()
