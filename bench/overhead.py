"""Client CPU of promptimus against the raw openai SDK and a bare httpx client, in one run.

    uv run python bench/overhead.py [--calls 2000] [--loops 1000] [--rounds 20]
    uv run python bench/overhead.py --also-python /work/sdk-new-venv/bin/python

The fake OpenAI server runs in its own process, so this process's CPU time is the client's cost
(SDK + framework; the steadier figure on a shared machine). Variants are interleaved in many
short rounds so machine noise hits them alike; each ratio is the median over rounds of the
variant's CPU per call divided by the raw SDK's in the same round (target: at most 0.6x for a
single call, 0.7x for the tool loop, never above 1.0x). Measured:

- single call: the same two messages (system + user) and the same reply, one call at a time and
  64 at once. Baselines: the raw SDK (``client.chat.completions.create``) and bare httpx (the
  HTTP client the SDK makes, with its connection limits: one POST of JSON, the reply read by
  ``json.loads``; the floor for any client). Then ``OpenAILike.achat`` (as it sends by default,
  and with ``sdk_requests=True``, through the SDK's typed method), ``Prompt.forward`` and
  ``MemoryModule.forward`` (a fresh ``pm.Session`` per call).
- a streamed reply of 60 chunks read to its end, one call at a time: the raw SDK's stream,
  bare httpx reading the ``data:`` lines, ``OpenAILike.astream`` (and with ``sdk_requests``).
- 3-step tool loop: the model asks for one tool call, then another, then answers, through
  ``OpenaiToolCallingAgent`` (a fresh ``pm.Session`` per run) beside the same loop written by
  hand on the raw SDK and on bare httpx, with a sync and an async tool, one run at a time and
  64 at once. The hand-written loops are the fair, lean equivalent: plain dict messages, the
  assistant's tool calls appended without ``content``, arguments decoded by ``json.loads``, the
  sync tool run off the event loop with ``asyncio.to_thread``. The server answers by the
  request alone: a tool call while the conversation holds fewer than two tool results.

- Anthropic: ``Anthropic.achat`` against the raw ``anthropic`` SDK's
  ``client.messages.create`` (the same system prompt and question, one call at a time and 64 at
  once), and the 3-step tool loop through ``OpenaiToolCallingAgent`` on ``Anthropic`` against
  the same loop written by hand on the raw SDK (the reply's content blocks appended as the
  assistant turn, the tool results as one user turn of ``tool_result`` blocks), both on the fake
  Messages API server in its own process. Goal: at most 1.0x the raw SDK.

``--also-python`` runs the whole measurement again under another interpreter (another SDK
release, e.g. the newest in a separate venv) with this checkout's ``src`` on its path, and
prints both runs' ratios side by side at the end. Then the ``import promptimus`` time.

The Gemini provider is measured after the OpenAI figures against the raw google-genai SDK on
FakeGeminiServer (bench/overhead_gemini.py; ``--skip-gemini`` leaves it out), and the Responses
provider (``OpenAIResponses``: a single call and a 3-step tool loop with reasoning items) against
the raw SDK's ``responses.create`` on the fake Responses API (bench/overhead_responses.py;
``--skip-responses`` leaves it out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
from child_server import serve, spawned

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import Anthropic, OpenAILike, aaccumulate
from promptimus.modules import MemoryModule, Prompt
from promptimus.testing import (
    AnthropicReply,
    FakeAnthropicServer,
    FakeOpenAIServer,
    Reply,
    ToolCall,
)
from promptimus.tools import Tool

SYSTEM = "You are a benchmark."
QUESTION = "ping"
MODEL = "fake-model"
KEY = "sk-fake"
RAW = "raw openai SDK"
BARE = "bare httpx"

Call = Callable[[], Awaitable[object]]


def bare_client(base_url: str) -> tuple[Any, Callable[[dict[str, Any]], Awaitable[Any]]]:
    """The httpx client the SDK makes by default (same library, connection limits and timeout;
    no SDK code on the way), and a call that POSTs a body to ``/chat/completions`` and returns
    the decoded reply."""
    http = openai.DefaultAsyncHttpxClient(timeout=60.0)
    url = f"{base_url}/chat/completions"
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    async def post(body: dict[str, Any]) -> Any:
        response = await http.post(url, content=json.dumps(body).encode(), headers=headers)
        response.raise_for_status()
        if body.get("stream"):  # the text of `data:` lines up to [DONE]
            text = []
            async for line in response.aiter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    choices = json.loads(line[6:])["choices"]
                    if choices and choices[0]["delta"].get("content"):
                        text.append(choices[0]["delta"]["content"])
            return "".join(text)
        return json.loads(response.content)

    return http, post


async def close(clients: list[Any]) -> None:
    for client in clients:
        await (client.close() if isinstance(client, openai.AsyncOpenAI) else client.aclose())


# --- single calls ----------------------------------------------------------------------------


def single_call_variants(base_url: str) -> tuple[dict[str, Call], list[Any]]:
    """The variants, and the clients to close before the event loop ends."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    http, post = bare_client(base_url)
    llm = OpenAILike(MODEL, api_key=KEY, base_url=base_url)
    typed = OpenAILike(MODEL, api_key=KEY, base_url=base_url, sdk_requests=True)
    prompt = Prompt(SYSTEM).with_llm(llm)
    memory = MemoryModule(memory_size=10, system_prompt=SYSTEM).with_llm(llm)
    history = [pm.Message(role=pm.MessageRole.USER, content=QUESTION)]
    raw_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
    sent = [pm.Message(role=pm.MessageRole.SYSTEM, content=SYSTEM), *history]

    async def raw_sdk() -> object:
        reply = await raw.chat.completions.create(model=MODEL, messages=raw_messages)  # type: ignore[arg-type]
        return reply.choices[0].message.content

    async def bare() -> object:
        return (await post({"model": MODEL, "messages": raw_messages}))["choices"][0]["message"]

    async def memory_forward() -> object:
        with pm.Session():  # a fresh conversation per call: same two messages as the others
            return await memory.forward(QUESTION)

    variants: dict[str, Call] = {
        RAW: raw_sdk,
        BARE: bare,
        "OpenAILike.achat": lambda: llm.achat(sent),
        "  sdk_requests=True": lambda: typed.achat(sent),
        "Prompt.forward": lambda: prompt.forward(history),
        "MemoryModule.forward": memory_forward,
    }
    return variants, [raw, http, llm._factory.get(), typed._factory.get()]


STREAMED = " ".join(f"word{i}" for i in range(60))  # a reply of 60 chunks


def stream_variants(base_url: str) -> tuple[dict[str, Call], list[Any]]:
    """A streamed reply read to its end, and the clients to close before the loop ends."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    http, post = bare_client(base_url)
    llm = OpenAILike(MODEL, api_key=KEY, base_url=base_url)
    typed = OpenAILike(MODEL, api_key=KEY, base_url=base_url, sdk_requests=True)
    messages = [{"role": "user", "content": QUESTION}]
    sent = [pm.Message(role=pm.MessageRole.USER, content=QUESTION)]
    options = {"include_usage": True}

    async def raw_sdk() -> object:
        text = []
        stream = await raw.chat.completions.create(
            model=MODEL,
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options=options,  # type: ignore[arg-type]
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
        return "".join(text)

    async def bare() -> object:
        body = {"model": MODEL, "messages": messages, "stream": True, "stream_options": options}
        return await post(body)

    variants: dict[str, Call] = {
        RAW: raw_sdk,
        BARE: bare,
        "OpenAILike.astream": lambda: aaccumulate(llm.astream(sent)),
        "  sdk_requests=True": lambda: aaccumulate(typed.astream(sent)),
    }
    return variants, [raw, http, llm._factory.get(), typed._factory.get()]


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


def cpu_ratio(cpu: dict[str, list[float]], name: str, base: str) -> float:
    """The median over rounds of `name`'s CPU per call over `base`'s in the same round."""
    return statistics.median(a / b for a, b in zip(cpu[name], cpu[base], strict=True))


def print_table(
    title: str,
    samples: dict[str, list[float]],
    cpu: dict[str, list[float]],
    base_of: Callable[[str], str],
) -> None:
    print(f"\n{title}")
    print(f"{'variant':<26}{'median ms':>10}{'p90 ms':>9}{'CPU us':>9}{'CPU ratio':>11}")
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        ratio = cpu_ratio(cpu, name, base_of(name))
        print(
            f"{name:<26}{statistics.median(values) * 1e3:>10.3f}{p90 * 1e3:>9.3f}"
            f"{statistics.median(cpu[name]) * 1e6:>9.0f}{ratio:>10.3f}x"
        )


async def measure_stream(base_url: str, calls: int, rounds: int) -> dict[str, float]:
    variants, clients = stream_variants(base_url)
    try:
        samples, cpu = await sample_rounds(variants, calls, 1, rounds, 64)
        print_table(
            f"streamed reply of 60 chunks, one at a time ({len(samples[RAW])} calls per variant, "
            f"{rounds} rounds; CPU ratio to the {RAW})",
            samples,
            cpu,
            lambda _: RAW,
        )
    finally:
        await close(clients)
    return {"stream c=1: OpenAILike.astream": cpu_ratio(cpu, "OpenAILike.astream", RAW)}


async def measure_single(base_url: str, calls: int, rounds: int) -> dict[str, float]:
    variants, clients = single_call_variants(base_url)
    found: dict[str, float] = {}
    try:
        for concurrency in (1, 64):
            n = calls if concurrency > 1 else max(calls // 4, 50)
            samples, cpu = await sample_rounds(variants, n, concurrency, rounds, 256)
            runs = len(samples[RAW])
            print_table(
                f"single call, concurrency {concurrency} ({runs} calls per variant, "
                f"{rounds} rounds; CPU ratio to the {RAW})",
                samples,
                cpu,
                lambda _: RAW,
            )
            for name in (BARE, "OpenAILike.achat", "Prompt.forward"):
                found[f"single c={concurrency}: {name}"] = cpu_ratio(cpu, name, RAW)
    finally:
        await close(clients)
    return found


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
    serve(tool_loop_reply)


def spawn_tool_loop_server() -> contextlib.AbstractContextManager[str]:
    return spawned([sys.executable, __file__, "--serve-tool-loop"])


async def run_tool(fn: Callable[..., object], arguments: str) -> object:
    args = json.loads(arguments)
    if inspect.iscoroutinefunction(fn):
        return await fn(**args)
    return await asyncio.to_thread(fn, **args)


def tool_loop_variants(base_url: str) -> tuple[dict[str, Call], list[Any]]:
    """The variants, and the clients to close before the event loop ends."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    http, post = bare_client(base_url)
    llm = OpenAILike(MODEL, api_key=KEY, base_url=base_url)
    out: dict[str, Call] = {}
    for kind, fn in (("sync", lookup_sync), ("async", lookup_async)):
        tool = Tool(fn, name="lookup")
        spec = [tool.to_openai()]
        agent = OpenaiToolCallingAgent(SYSTEM, [tool]).with_llm(llm)

        def start() -> list[dict[str, Any]]:
            return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

        async def raw_loop(fn: Callable[..., object] = fn, spec: Any = spec) -> object:
            messages = start()
            while True:
                completion = await raw.chat.completions.create(
                    model=MODEL,
                    messages=messages,  # type: ignore[arg-type]
                    tools=spec,
                )
                message = completion.choices[0].message
                if not message.tool_calls:
                    return message.content
                calls = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,  # type: ignore[union-attr]
                            "arguments": call.function.arguments,  # type: ignore[union-attr]
                        },
                    }
                    for call in message.tool_calls
                ]
                messages.append({"role": "assistant", "tool_calls": calls})
                for call in calls:
                    result = await run_tool(fn, call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

        async def bare_loop(fn: Callable[..., object] = fn, spec: Any = spec) -> object:
            messages = start()
            while True:
                reply = await post({"model": MODEL, "messages": messages, "tools": spec})
                message = reply["choices"][0]["message"]
                calls = message.get("tool_calls")
                if not calls:
                    return message["content"]
                messages.append({"role": "assistant", "tool_calls": calls})
                for call in calls:
                    result = await run_tool(fn, call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

        async def agent_loop(agent: OpenaiToolCallingAgent = agent) -> object:
            with pm.Session():  # a fresh conversation per run, like the hand-written loops
                return await agent.forward(QUESTION)

        out[f"{RAW} loop, {kind}"] = raw_loop
        out[f"{BARE} loop, {kind}"] = bare_loop
        out[f"agent, {kind} tool"] = agent_loop
    return out, [raw, http, llm._factory.get()]


async def measure_tool_loop(base_url: str, loops: int, rounds: int) -> dict[str, float]:
    variants, clients = tool_loop_variants(base_url)
    found: dict[str, float] = {}

    def base_of(name: str) -> str:  # the raw SDK loop with the same kind of tool
        return f"{RAW} loop, {'async' if 'async' in name else 'sync'}"

    try:
        for concurrency in (1, 64):
            n = loops if concurrency > 1 else max(loops // 4, 50)
            samples, cpu = await sample_rounds(variants, n, concurrency, rounds, 64)
            runs = len(next(iter(samples.values())))
            print_table(
                f"3-step tool loop, concurrency {concurrency} ({runs} runs per variant, "
                f"{rounds} rounds; CPU ratio to the {RAW} loop with the same tool)",
                samples,
                cpu,
                base_of,
            )
            for kind in ("sync", "async"):
                where = f"loop c={concurrency} {kind}"
                base = base_of(kind)
                found[f"{where}: bare httpx"] = cpu_ratio(cpu, f"{BARE} loop, {kind}", base)
                found[f"{where}: agent"] = cpu_ratio(cpu, f"agent, {kind} tool", base)
    finally:
        await close(clients)
    return found


# --- Anthropic ---------------------------------------------------------------------------------

RAW_ANTHROPIC = "raw anthropic SDK"
MAX_TOKENS = 1024


def anthropic_tool_loop_reply(body: dict[str, Any]) -> AnthropicReply | str:
    """The fake Claude: a tool call until the conversation holds TOOL_STEPS results, then text."""
    done = sum(
        1
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )
    tools = body.get("tools")
    if done < TOOL_STEPS and tools:
        return AnthropicReply(tool_calls=[ToolCall(tools[0]["name"], {"key": done})])
    return "done"


def serve_anthropic_tool_loop() -> None:
    server = FakeAnthropicServer(record=False)
    server.messages.respond_with(anthropic_tool_loop_reply)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(lambda url: print(f"READY {url}", flush=True)))


def anthropic_variants(base_url: str) -> tuple[dict[str, Call], list[Any]]:
    """Single calls and 3-step tool loops, raw SDK and promptimus, and the clients to close."""
    raw = anthropic.AsyncAnthropic(base_url=base_url, api_key=KEY, max_retries=0)
    llm = Anthropic(MODEL, api_key=KEY, base_url=base_url, max_tokens=MAX_TOKENS)
    sent = [
        pm.Message(role=pm.MessageRole.SYSTEM, content=SYSTEM),
        pm.Message(role=pm.MessageRole.USER, content=QUESTION),
    ]
    tool = Tool(lookup_async, name="lookup")
    spec = [
        {"name": "lookup", "description": "Look a key up.", "input_schema": tool.parameters_schema}
    ]
    agent = OpenaiToolCallingAgent(SYSTEM, [tool]).with_llm(llm)

    async def raw_single() -> object:
        reply = await raw.messages.create(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            system=SYSTEM,
            messages=[{"role": "user", "content": QUESTION}],
        )
        return reply.content[0].text  # type: ignore[union-attr]

    async def raw_loop() -> object:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        while True:
            reply = await raw.messages.create(
                model=MODEL,
                max_tokens=MAX_TOKENS,
                system=SYSTEM,
                messages=messages,
                tools=spec,  # type: ignore[arg-type]
            )
            calls = [block for block in reply.content if block.type == "tool_use"]
            if not calls:
                return reply.content[0].text  # type: ignore[union-attr]
            messages.append({"role": "assistant", "content": reply.content})
            results = []
            for call in calls:
                output = await lookup_async(**call.input)  # type: ignore[arg-type]
                results.append({"type": "tool_result", "tool_use_id": call.id, "content": output})
            messages.append({"role": "user", "content": results})

    async def agent_loop() -> object:
        with pm.Session():
            return await agent.forward(QUESTION)

    variants: dict[str, Call] = {
        RAW_ANTHROPIC: raw_single,
        "Anthropic.achat": lambda: llm.achat(sent),
        f"{RAW_ANTHROPIC} loop": raw_loop,
        "agent on Anthropic, loop": agent_loop,
    }
    return variants, [raw]


async def measure_anthropic(base_url: str, calls: int, loops: int, rounds: int) -> dict[str, float]:
    variants, clients = anthropic_variants(base_url)
    found: dict[str, float] = {}
    pairs = (
        ("single", RAW_ANTHROPIC, "Anthropic.achat", calls),
        ("loop", f"{RAW_ANTHROPIC} loop", "agent on Anthropic, loop", loops),
    )
    try:
        for concurrency in (1, 64):
            for what, base, ours, count in pairs:
                n = count if concurrency > 1 else max(count // 4, 50)
                chosen = {base: variants[base], ours: variants[ours]}
                samples, cpu = await sample_rounds(chosen, n, concurrency, rounds, 64)
                print_table(
                    f"Anthropic {what}, concurrency {concurrency} ({len(samples[base])} per "
                    f"variant, {rounds} rounds; CPU ratio to the {base})",
                    samples,
                    cpu,
                    lambda _, base=base: base,  # type: ignore[misc]
                )
                found[f"anthropic {what} c={concurrency}: {ours}"] = cpu_ratio(cpu, ours, base)
    finally:
        for client in clients:
            await client.close()
    return found


def spawn_anthropic_tool_loop_server() -> contextlib.AbstractContextManager[str]:
    return spawned([sys.executable, __file__, "--serve-anthropic-tool-loop"])


# --- the whole run ---------------------------------------------------------------------------


def import_time(runs: int = 15) -> tuple[float, float]:
    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    bare = statistics.median(run("pass") for _ in range(runs))
    full = statistics.median(run("import promptimus") for _ in range(runs))
    return (full - bare) * 1e3, full * 1e3


def measure(args: argparse.Namespace) -> dict[str, float]:
    print(f"openai {openai.__version__}, Python {sys.version.split()[0]} ({sys.executable})")
    found: dict[str, float] = {}
    if not args.skip_single:
        with FakeOpenAIServer.spawn(reply="pong") as server:
            found |= asyncio.run(measure_single(server.base_url, args.calls, args.rounds))
        with FakeOpenAIServer.spawn(reply=STREAMED) as server:
            calls = max(args.calls // 8, 40)
            found |= asyncio.run(measure_stream(server.base_url, calls, args.rounds))
    if not args.skip_tool_loop:
        with spawn_tool_loop_server() as base_url:
            found |= asyncio.run(measure_tool_loop(base_url, args.loops, args.rounds))
    if not args.skip_responses:
        found |= measure_responses(args)
    if not args.skip_gemini:
        measure_gemini(args)
    if not args.skip_anthropic:
        print(f"anthropic {anthropic.__version__}")
        with spawn_anthropic_tool_loop_server() as base_url:
            loops = max(args.loops // 2, 50)
            found |= asyncio.run(measure_anthropic(base_url, args.calls, loops, args.rounds))
    return found


def measure_responses(args: argparse.Namespace) -> dict[str, float]:
    """`OpenAIResponses` against the raw SDK's ``responses.create`` (bench/overhead_responses.py);
    its ratios join the OpenAI ones."""
    import overhead_responses

    calls, loops = max(args.calls // 5, 100), max(args.loops // 5, 50)
    return overhead_responses.measure(calls, loops, args.rounds)


def measure_gemini(args: argparse.Namespace) -> None:
    """The Gemini provider against the raw google-genai SDK (bench/overhead_gemini.py), its
    ratios printed with its tables."""
    try:
        import overhead_gemini
    except ImportError as exc:  # an interpreter without google-genai (--also-python)
        print(f"\nGemini: skipped ({exc})")
        return
    calls, loops = max(args.calls // 5, 100), max(args.loops // 5, 50)
    ratios = overhead_gemini.measure(calls, loops, args.rounds)
    print("\nCPU ratio to the raw google-genai SDK (goal: <= 1.0x)")
    for key, value in ratios.items():
        print(f"{key:<40}{value:>8.3f}x")


def run_elsewhere(python: str, argv: list[str]) -> tuple[str, dict[str, float]]:
    """Run this benchmark under another interpreter; its SDK version and ratios."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    print(f"\n===== again under {python} =====", flush=True)
    process = subprocess.run(
        [python, __file__, *argv, "--no-also", "--skip-import-time"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    version, ratios = "?", {}
    for line in process.stdout.splitlines():
        if line.startswith("RATIOS "):
            version, ratios = json.loads(line.removeprefix("RATIOS "))
        else:
            print(line)
    return version, ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="single calls per variant at c=64")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--loops", type=int, default=1000, help="tool-loop runs per variant")
    parser.add_argument("--skip-single", action="store_true", help="only the tool loop")
    parser.add_argument("--skip-tool-loop", action="store_true", help="only single calls")
    parser.add_argument("--also-python", help="measure again under this interpreter")
    parser.add_argument("--no-also", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-import-time", action="store_true")
    parser.add_argument("--skip-gemini", action="store_true", help="no Gemini section")
    parser.add_argument("--skip-responses", action="store_true", help="no Responses API section")
    parser.add_argument("--skip-anthropic", action="store_true", help="no Anthropic figures")
    parser.add_argument("--serve-tool-loop", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-anthropic-tool-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_tool_loop:
        serve_tool_loop()
        return
    if args.serve_anthropic_tool_loop:
        serve_anthropic_tool_loop()
        return

    ratios = measure(args)
    if args.no_also:
        print("RATIOS " + json.dumps([openai.__version__, ratios]))
        return
    runs = {openai.__version__: ratios}
    if args.also_python:
        argv = [arg for arg in sys.argv[1:] if not arg.startswith("--also-python")]
        if args.also_python in argv:
            argv.remove(args.also_python)
        version, other = run_elsewhere(args.also_python, argv)
        runs[version] = other
    print(
        "\nCPU ratio to the raw openai SDK (targets: single call <= 0.6x, tool loop <= 0.7x; "
        "responses rows: to its responses.create, <= 0.6x); anthropic rows: to the raw "
        "anthropic SDK (goal <= 1.0x)"
    )
    versions = list(runs)
    print(f"{'':<40}" + "".join(f"{'openai ' + v:>16}" for v in versions))
    for key in ratios:
        print(f"{key:<40}" + "".join(f"{runs[v].get(key, float('nan')):>15.3f}x" for v in versions))
    if not args.skip_import_time:
        net, total = import_time()
        print(f"\nimport promptimus: {net:.1f} ms over a bare interpreter ({total:.1f} ms in all)")


if __name__ == "__main__":
    main()
