"""Framework overhead against the raw openai SDK, measured in one run against one fake server.

    uv run python bench/overhead.py [--calls 2000] [--rounds 5]

The fake OpenAI server runs in its own process (so its work does not share our event loop). Each
variant sends the same two messages (system + user) and gets the same reply; variants are
interleaved in many short rounds so machine noise hits them alike. Printed, at concurrency 1 and
256: median and p90 latency per call, and this process's CPU time per call (the server's work is
in the other process, so this is the client-side cost: SDK + framework; it is the steadier figure
on a shared machine), each with its ratio to the raw SDK (target <= 1.05x); then the
`import promptimus` time (target <= 150 ms).

The tool loop (`--loops`, `--skip-tool-loop`): a 3-step run (the model asks for one tool call,
then another, then answers) through `OpenaiToolCallingAgent` beside the same loop written by hand
on the raw SDK, with a sync tool and with an async tool. The hand-written loop is the fair, lean
equivalent: it keeps the conversation as plain dicts, appends the assistant's tool calls as a dict
without `content`, decodes the arguments with `json.loads`, and runs the sync tool off the event
loop with `asyncio.to_thread` (what async code does with a blocking function; the agent must too).
Its server (another process) answers by the request alone: a tool call while the conversation
holds fewer than two tool results, then the answer. Printed: wall median per run and this
process's CPU per run, with their ratios to the raw loop of the same tool kind (target <= 1.05x).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator

import openai

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import OpenAILike
from promptimus.modules import MemoryModule, Prompt
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import Tool

SYSTEM = "You are a benchmark."
QUESTION = "ping"

Call = Callable[[], Awaitable[object]]


def variants(base_url: str, api_key: str) -> tuple[dict[str, Call], openai.AsyncOpenAI]:
    """The variants, and the raw SDK client to close before the event loop ends."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    llm = OpenAILike("fake-model", api_key=api_key, base_url=base_url)
    prompt = Prompt(SYSTEM).with_llm(llm)
    memory = MemoryModule(memory_size=10, system_prompt=SYSTEM).with_llm(llm)
    history = [pm.Message(role=pm.MessageRole.USER, content=QUESTION)]
    raw_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    sent = [pm.Message(role=pm.MessageRole.SYSTEM, content=SYSTEM), *history]

    async def raw_sdk() -> object:
        reply = await raw.chat.completions.create(model="fake-model", messages=raw_messages)
        return reply.choices[0].message.content

    async def openai_like() -> object:
        return await llm.achat(sent)

    async def prompt_forward() -> object:
        return await prompt.forward(history)

    async def memory_forward() -> object:
        with pm.Session():  # a fresh conversation per call: same two messages as the others
            return await memory.forward(QUESTION)

    return {
        "raw openai SDK": raw_sdk,
        "OpenAILike.achat": openai_like,
        "Prompt.forward": prompt_forward,
        "MemoryModule.forward": memory_forward,
    }, raw


async def timed_batch(call: Call, calls: int, concurrency: int) -> tuple[list[float], float]:
    """Latencies of `calls` calls made by `concurrency` workers, and the CPU seconds they took."""
    latencies: list[float] = []
    per_worker = max(calls // concurrency, 1)
    cpu_start = time.process_time()

    async def worker() -> None:
        for _ in range(per_worker):
            start = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - start)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.process_time() - cpu_start


async def sample_rounds(
    calls_by_name: dict[str, Call], n: int, concurrency: int, rounds: int, warm_up: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each variant's call latencies, and its CPU per call in each round: after a warm-up batch
    of each, `rounds` rounds run every variant in turn, so a slow spell hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in calls_by_name}
    cpu: dict[str, list[float]] = {name: [] for name in calls_by_name}
    for call in calls_by_name.values():  # warm up connections and caches
        await timed_batch(call, min(n, warm_up), concurrency)
    per_round = max(n // rounds, concurrency)
    for _ in range(rounds):
        for name, call in calls_by_name.items():
            latencies, seconds = await timed_batch(call, per_round, concurrency)
            samples[name].extend(latencies)
            cpu[name].append(seconds / len(latencies))
    return samples, cpu


async def measure(base_url: str, api_key: str, calls: int, rounds: int) -> None:
    calls_by_name, raw = variants(base_url, api_key)
    try:
        await _measure(calls_by_name, calls, rounds)
    finally:
        await raw.close()


async def _measure(calls_by_name: dict[str, Call], calls: int, rounds: int) -> None:
    for concurrency in (1, 256):
        n = calls if concurrency > 1 else max(calls // 4, 50)
        samples, cpu = await sample_rounds(calls_by_name, n, concurrency, rounds, 256)
        raw = "raw openai SDK"
        base = statistics.median(samples[raw])
        base_cpu = statistics.fmean(cpu[raw])
        print(f"\nconcurrency {concurrency} ({len(samples[raw])} calls per variant)")
        header = f"{'variant':<22}{'median ms':>10}{'p90 ms':>9}{'ratio':>8}"
        print(header + f"{'CPU us/call':>13}{'ratio':>8}")
        for name, values in samples.items():
            median = statistics.median(values)
            p90 = statistics.quantiles(values, n=10)[-1]
            per_call = statistics.fmean(cpu[name])
            print(
                f"{name:<22}{median * 1e3:>10.3f}{p90 * 1e3:>9.3f}{median / base:>7.3f}x"
                f"{per_call * 1e6:>13.0f}{per_call / base_cpu:>7.3f}x"
            )


async def framework_cost(base_url: str, api_key: str, calls: int = 20000) -> None:
    """Our own code per call: the SDK's network call is replaced by a stub that returns a real
    recorded completion, so what remains is message conversion, retry/limit plumbing, usage
    accounting, the module call path and template rendering."""
    llm = OpenAILike("fake-model", api_key=api_key, base_url=base_url)
    sdk = llm._factory.get()  # the provider's own AsyncOpenAI client for this loop
    sent = [pm.Message(role="system", content=SYSTEM), pm.Message(role="user", content=QUESTION)]
    raw = sdk.chat.completions.with_raw_response  # what OpenAILike.achat calls
    recorded = await raw.create(
        model="fake-model", messages=[{"role": m.role.value, "content": m.content} for m in sent]
    )

    async def stub(**_: object) -> object:
        return recorded

    raw.create = stub  # type: ignore[method-assign]
    prompt = Prompt(SYSTEM).with_llm(llm)
    memory = MemoryModule(memory_size=10, system_prompt=SYSTEM).with_llm(llm)
    history = sent[1:]

    async def memory_call() -> object:
        with pm.Session():
            return await memory.forward(QUESTION)

    print("\nframework's own CPU per call (network call stubbed out)")
    for name, call in (
        ("OpenAILike.achat", lambda: llm.achat(sent)),
        ("Prompt.forward", lambda: prompt.forward(history)),
        ("MemoryModule.forward", memory_call),
    ):
        start = time.process_time()
        for _ in range(calls):
            await call()
        print(f"{name:<22}{(time.process_time() - start) / calls * 1e6:>8.1f} us")


# --- the tool loop ---------------------------------------------------------------------------

TOOL_STEPS = 2  # tool calls before the answer: a 3-step run


def lookup_sync(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


async def lookup_async(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


def tool_loop_reply(body: dict[str, object]) -> Reply | str:
    """The fake model: a tool call until the conversation holds TOOL_STEPS results, then text."""
    messages = body.get("messages")
    done = sum(1 for m in messages if m.get("role") == "tool") if isinstance(messages, list) else 0
    tools = body.get("tools")
    if done < TOOL_STEPS and isinstance(tools, list) and tools:
        return Reply(tool_calls=[ToolCall(tools[0]["function"]["name"], {"key": done})])
    return "done"


def serve_tool_loop() -> None:
    """The tool loop's server, run as this script's child process (own GIL)."""
    server = FakeOpenAIServer(record=False)
    server.chat.respond_with(tool_loop_reply)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(lambda url: print(f"READY {url}", flush=True)))


@contextlib.contextmanager
def spawn_tool_loop_server() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-tool-loop"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the tool-loop server did not start (printed {line!r})")
        yield line.split(" ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(10)


def tool_loop_variants(
    base_url: str, api_key: str
) -> tuple[dict[str, Call], list[openai.AsyncOpenAI]]:
    """The variants, and the SDK clients to close before the event loop ends."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    llm = OpenAILike("fake-model", api_key=api_key, base_url=base_url)
    out: dict[str, Call] = {}
    for kind, fn in (("sync", lookup_sync), ("async", lookup_async)):
        tool = Tool(fn, name="lookup")
        spec = [tool.to_openai()]
        agent = OpenaiToolCallingAgent(SYSTEM, [tool]).with_llm(llm)

        async def raw_loop(fn: Callable[..., object] = fn, spec: object = spec) -> object:
            messages: list[dict[str, object]] = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": QUESTION},
            ]
            while True:
                completion = await raw.chat.completions.create(
                    model="fake-model",
                    messages=messages,  # type: ignore[arg-type]
                    tools=spec,  # type: ignore[arg-type]
                )
                message = completion.choices[0].message
                if not message.tool_calls:
                    return message.content
                calls = []
                for call in message.tool_calls:
                    name, arguments = call.function.name, call.function.arguments  # type: ignore[union-attr]
                    calls.append(
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    )
                messages.append({"role": "assistant", "tool_calls": calls})
                for call in message.tool_calls:
                    args = json.loads(call.function.arguments)  # type: ignore[union-attr]
                    if inspect.iscoroutinefunction(fn):
                        result = await fn(**args)
                    else:
                        result = await asyncio.to_thread(fn, **args)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

        async def agent_loop(agent: OpenaiToolCallingAgent = agent) -> object:
            with pm.Session():  # a fresh conversation per run, like the raw loop
                return await agent.forward(QUESTION)

        out[f"raw loop, {kind} tool"] = raw_loop
        out[f"agent, {kind} tool"] = agent_loop
    return out, [raw, llm._factory.get()]


async def measure_tool_loop(base_url: str, api_key: str, loops: int, rounds: int) -> None:
    """The CPU ratio is the median over rounds of (variant / raw loop) within the same round,
    which a busy neighbour on the machine skews less than a ratio of totals."""
    calls_by_name, clients = tool_loop_variants(base_url, api_key)
    for concurrency in (1, 64):
        n = loops if concurrency > 1 else max(loops // 4, 50)
        samples, cpu = await sample_rounds(calls_by_name, n, concurrency, rounds, 64)
        print(
            f"\n3-step tool loop, concurrency {concurrency} "
            f"({len(next(iter(samples.values())))} runs per variant, {rounds} rounds)"
        )
        print(f"{'variant':<22}{'median ms':>10}{'ratio':>8}{'CPU us/run':>12}{'ratio':>8}")
        for name, values in samples.items():
            base = "raw loop, " + name.split(", ", 1)[1]
            median = statistics.median(values)
            wall_ratio = median / statistics.median(samples[base])
            cpu_ratio = statistics.median(a / b for a, b in zip(cpu[name], cpu[base], strict=True))
            print(
                f"{name:<22}{median * 1e3:>10.3f}{wall_ratio:>7.3f}x"
                f"{statistics.median(cpu[name]) * 1e6:>12.0f}{cpu_ratio:>7.3f}x"
            )
    for client in clients:
        await client.close()


def import_time(runs: int = 15) -> tuple[float, float]:
    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    bare = statistics.median(run("pass") for _ in range(runs))
    full = statistics.median(run("import promptimus") for _ in range(runs))
    return (full - bare) * 1e3, full * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per variant at c=256")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--loops", type=int, default=1000, help="tool-loop runs per variant")
    parser.add_argument("--skip-single", action="store_true", help="only the tool loop")
    parser.add_argument("--skip-tool-loop", action="store_true", help="only single calls")
    parser.add_argument("--serve-tool-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_tool_loop:
        serve_tool_loop()
        return

    if not args.skip_single:
        with FakeOpenAIServer.spawn(reply="pong") as server:
            asyncio.run(measure(server.base_url, "sk-fake", args.calls, args.rounds))
            asyncio.run(framework_cost(server.base_url, "sk-fake"))
    if not args.skip_tool_loop:
        with spawn_tool_loop_server() as base_url:
            asyncio.run(measure_tool_loop(base_url, "sk-fake", args.loops, args.rounds))
    net, total = import_time()
    print(f"\nimport promptimus: {net:.1f} ms over a bare interpreter ({total:.1f} ms in all)")


if __name__ == "__main__":
    main()
