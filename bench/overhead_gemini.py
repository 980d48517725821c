"""Client CPU of the ``Gemini`` provider against the raw google-genai SDK, on FakeGeminiServer.

    uv run python bench/overhead_gemini.py [--calls 400] [--loops 200] [--rounds 10]

(``bench/overhead.py`` runs it too, after the OpenAI figures.) The fake server runs in a child
process, so this process's CPU time is the client's. Both clients use the same HTTP stack: the
SDK's async requests go through an ``httpx.AsyncClient`` (the SDK would pick aiohttp when it is
installed; ``Gemini`` always passes httpx). Measured, one call at a time:

- single call: a system instruction and one user message, the reply read as text. Raw:
  ``client.aio.models.generate_content`` with a ``GenerateContentConfig`` built once. Ours:
  ``Gemini.achat``.
- a streamed reply of 20 events read to its end: ``generate_content_stream`` against
  ``Gemini.astream``.
- 3-step tool loop: the model calls ``lookup`` twice (with a thought signature on each call, as
  Gemini 3 does), then answers. Raw: the loop written by hand on the SDK's typed objects (the
  model's content appended as returned, so its signatures go back; one function response part
  per call). Ours: ``OpenaiToolCallingAgent`` on ``Gemini`` (a fresh ``pm.Session`` per run).

Each ratio is the median over rounds of our CPU per call over the raw SDK's in the same round
(goal: at most 1.0x).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
from google import genai
from google.genai import types
from overhead import Call, cpu_ratio, print_table, sample_rounds

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms import Gemini
from promptimus.testing import FakeGeminiServer, GeminiCall, GeminiReply
from promptimus.tools import Tool

SYSTEM = "You are a benchmark."
QUESTION = "ping"
MODEL = "gemini-3-pro"
KEY = "fake-gemini-key"
RAW = "raw google-genai SDK"
TOOL_STEPS = 2


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


async def lookup_async(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


STREAMED = " ".join(f"word{i}" for i in range(120))


def reply_for(body: dict[str, Any]) -> GeminiReply | str:
    """The fake model: a signed call to the tool until the request holds TOOL_STEPS function
    responses, then text; a plain request without tools gets "pong", one that asks for
    "stream" a 20-event stream."""
    if not body.get("tools"):
        text = body["contents"][-1]["parts"][0].get("text")
        return GeminiReply(text=STREAMED, chunks=20) if text == "stream" else "pong"
    done = sum(
        1
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    )
    if done < TOOL_STEPS:
        return GeminiReply(calls=[GeminiCall("lookup", {"key": done})])
    return "done"


def serve() -> None:
    """This script's child process: the fake server until interrupted."""
    server = FakeGeminiServer(api_key=KEY, record=False, require_signatures=False)
    server.generate.respond_with(reply_for)
    with contextlib.suppress(KeyboardInterrupt), server:
        print(f"READY {server.base_url}", flush=True)
        while True:
            time.sleep(3600)


@contextlib.contextmanager
def spawned_server() -> Iterator[str]:
    from child_server import spawned

    with spawned([sys.executable, __file__, "--serve"]) as base_url:
        yield base_url


def raw_client(base_url: str) -> genai.Client:
    options = types.HttpOptions(
        base_url=base_url, timeout=60_000, httpx_async_client=httpx.AsyncClient(timeout=60.0)
    )
    return genai.Client(api_key=KEY, http_options=options)


def variants(base_url: str) -> tuple[dict[str, Call], dict[str, Call], list[Any]]:
    """The single-call variants, the tool-loop variants, and the clients to keep alive."""
    raw = raw_client(base_url)
    llm = Gemini(MODEL, api_key=KEY, base_url=base_url)
    plain = types.GenerateContentConfig(system_instruction=SYSTEM)
    history = [
        Message(role=MessageRole.SYSTEM, content=SYSTEM),
        Message(role=MessageRole.USER, content=QUESTION),
    ]

    async def raw_call() -> object:
        reply = await raw.aio.models.generate_content(model=MODEL, contents=QUESTION, config=plain)
        return reply.text

    async def our_call() -> object:
        return (await llm.achat(history)).content

    tool = Tool(lookup_async, name="lookup")
    declaration = types.FunctionDeclaration(
        name="lookup",
        description="Look a key up.",
        parameters_json_schema=tool.parameters_schema,
    )
    looping = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=[declaration])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    agent = OpenaiToolCallingAgent(SYSTEM, [tool]).with_llm(llm)

    async def raw_loop() -> object:
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
        while True:
            reply = await raw.aio.models.generate_content(
                model=MODEL, contents=contents, config=looping
            )
            calls = reply.function_calls
            if not calls:
                return reply.text
            contents.append(reply.candidates[0].content)  # type: ignore[index]
            parts = [
                types.Part.from_function_response(
                    name=call.name or "", response={"output": await lookup_async(**call.args or {})}
                )
                for call in calls
            ]
            contents.append(types.Content(role="user", parts=parts))

    async def agent_loop() -> object:
        with pm.Session():
            return await agent.forward(QUESTION)

    to_stream = [Message(role=MessageRole.USER, content="stream")]

    async def raw_stream() -> object:
        chunks = await raw.aio.models.generate_content_stream(
            model=MODEL, contents="stream", config=plain
        )
        return "".join([chunk.text or "" async for chunk in chunks])

    async def our_stream() -> object:
        return "".join([d.content or "" async for d in llm.astream(to_stream)])

    return (
        {
            RAW: raw_call,
            "Gemini.achat": our_call,
            f"{RAW} stream": raw_stream,
            "Gemini.astream": our_stream,
        },
        {f"{RAW} loop": raw_loop, "agent on Gemini": agent_loop},
        [raw, llm],
    )


async def measure_async(base_url: str, calls: int, loops: int, rounds: int) -> dict[str, float]:
    single, loop, keep = variants(base_url)
    samples, cpu = await sample_rounds(single, calls, 1, rounds, 64)
    print_table(
        f"Gemini: single call and a 20-event stream, one at a time ({len(samples[RAW])} calls "
        f"per variant, {rounds} rounds; CPU ratio to the {RAW} call of the same kind)",
        samples,
        cpu,
        lambda name: f"{RAW} stream" if "stream" in name else RAW,
    )
    found = {
        "gemini single c=1: Gemini.achat": cpu_ratio(cpu, "Gemini.achat", RAW),
        "gemini stream c=1: Gemini.astream": cpu_ratio(cpu, "Gemini.astream", f"{RAW} stream"),
    }
    samples, cpu = await sample_rounds(loop, loops, 1, rounds, 32)
    print_table(
        f"Gemini: 3-step tool loop, one at a time ({len(samples[f'{RAW} loop'])} runs per "
        f"variant, {rounds} rounds; CPU ratio to the {RAW} loop)",
        samples,
        cpu,
        lambda _: f"{RAW} loop",
    )
    found["gemini loop c=1: agent"] = cpu_ratio(cpu, "agent on Gemini", f"{RAW} loop")
    del keep
    return found


def measure(calls: int, loops: int, rounds: int) -> dict[str, float]:
    """Run both measurements against a spawned fake server; the ratios by name."""
    print(f"google-genai {genai.__version__}")
    with spawned_server() as base_url:
        return asyncio.run(measure_async(base_url, calls, loops, rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--loops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    ratios = measure(args.calls, args.loops, args.rounds)
    print("\nCPU ratio to the raw google-genai SDK (goal: <= 1.0x)")
    for key, value in ratios.items():
        print(f"{key:<40}{value:>8.3f}x")


if __name__ == "__main__":
    main()
