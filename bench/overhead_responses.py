"""Client CPU of the ``OpenAIResponses`` provider against the raw openai SDK's
``responses.create``, on the fake Responses API.

    uv run python bench/overhead_responses.py [--calls 400] [--loops 200] [--rounds 10]

(``bench/overhead.py`` runs it too, after the Chat Completions figures.) The fake server runs in
a child process, so this process's CPU time is the client's. Measured, one call at a time:

- single call: a system message and one user message, the reply read as text. Raw:
  ``client.responses.create(model=..., input=[...], store=False)`` and ``response.output_text``.
  Ours: ``OpenAIResponses.achat``.
- a streamed reply of 60 text deltas read to its end: ``responses.create(stream=True)``, its
  events iterated and the ``response.output_text.delta`` texts joined, against
  ``OpenAIResponses.astream``.
- 3-step tool loop: a reasoning model (a reasoning item with its summary and encrypted content
  before each call) calls ``lookup`` twice, then answers. Raw: the loop written by hand on the
  SDK, as lean as it goes: ``store=False`` with ``include=["reasoning.encrypted_content"]``,
  the reasoning items and calls sent back as plain dicts (id, summary, encrypted content; call
  id, name, arguments), one ``function_call_output`` per call. Ours:
  ``OpenaiToolCallingAgent`` on ``OpenAIResponses`` (a fresh ``pm.Session`` per run).

Each ratio is the median over rounds of our CPU per call over the raw SDK's in the same round
(goal: at most 0.6x; never above 1.0x).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import openai
from overhead import Call, cpu_ratio, print_table, sample_rounds

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms import OpenAIResponses
from promptimus.testing import FakeOpenAIServer, ResponsesReply, ToolCall
from promptimus.tools import Tool

SYSTEM = "You are a benchmark."
QUESTION = "ping"
MODEL = "o-bench"
KEY = "sk-fake"
RAW = "raw openai SDK responses"
TOOL_STEPS = 2
STREAMED = " ".join(f"word{i}" for i in range(60))


async def lookup(key: int) -> str:
    """Look a key up."""
    return f"value {key}"


def reply_for(body: dict[str, Any]) -> ResponsesReply | str:
    """The fake model: a reasoned call to the tool until the request holds TOOL_STEPS call
    outputs, then text; a request without tools gets "pong"."""
    if not body.get("tools"):
        return STREAMED if body.get("stream") else "pong"
    done = sum(1 for item in body["input"] if item.get("type") == "function_call_output")
    if done < TOOL_STEPS:
        return ResponsesReply(
            reasoning="Look it up.", tool_calls=[ToolCall("lookup", {"key": done})]
        )
    return "done"


def serve() -> None:
    """This script's child process: the fake server until interrupted."""
    server = FakeOpenAIServer(record=False)
    server.responses.respond_with(reply_for)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(lambda url: print(f"READY {url}", flush=True)))


@contextlib.contextmanager
def spawned_server() -> Iterator[str]:
    from child_server import spawned

    with spawned([sys.executable, __file__, "--serve"]) as base_url:
        yield base_url


def variants(base_url: str) -> tuple[dict[str, Call], dict[str, Call], list[Any]]:
    """The single-call variants, the tool-loop variants, and the clients to close."""
    raw = openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    llm = OpenAIResponses(MODEL, api_key=KEY, base_url=base_url, reasoning_summary="auto")
    history = [
        Message(role=MessageRole.SYSTEM, content=SYSTEM),
        Message(role=MessageRole.USER, content=QUESTION),
    ]
    question = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    async def raw_call() -> object:
        reply = await raw.responses.create(model=MODEL, input=question, store=False)  # type: ignore[arg-type]
        return reply.output_text

    async def our_call() -> object:
        return (await llm.achat(history)).content

    async def raw_stream() -> object:
        events = await raw.responses.create(model=MODEL, input=question, store=False, stream=True)  # type: ignore[arg-type]
        return "".join([e.delta async for e in events if e.type == "response.output_text.delta"])

    async def our_stream() -> object:
        return "".join([d.content or "" async for d in llm.astream(history)])

    tool = Tool(lookup, name="lookup")
    spec = [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look a key up.",
            "parameters": tool.parameters_schema,
            "strict": False,
        }
    ]
    agent = OpenaiToolCallingAgent(SYSTEM, [tool]).with_llm(llm)

    async def raw_loop() -> object:
        items: list[Any] = list(question)
        while True:
            reply = await raw.responses.create(
                model=MODEL,
                input=items,
                tools=spec,  # type: ignore[arg-type]
                store=False,
                include=["reasoning.encrypted_content"],
                reasoning={"summary": "auto"},
            )
            calls = []
            for item in reply.output:
                if item.type == "reasoning":
                    items.append(
                        {
                            "type": "reasoning",
                            "id": item.id,
                            "summary": [
                                {"type": "summary_text", "text": s.text} for s in item.summary
                            ],
                            "encrypted_content": item.encrypted_content,
                        }
                    )
                elif item.type == "function_call":
                    calls.append(item)
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": item.call_id,
                            "name": item.name,
                            "arguments": item.arguments,
                        }
                    )
            if not calls:
                return reply.output_text
            for call in calls:
                output = await lookup(**json.loads(call.arguments))
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": output}
                )

    async def agent_loop() -> object:
        with pm.Session():
            return await agent.forward(QUESTION)

    return (
        {
            RAW: raw_call,
            "OpenAIResponses.achat": our_call,
            f"{RAW} stream": raw_stream,
            "OpenAIResponses.astream": our_stream,
        },
        {f"{RAW} loop": raw_loop, "agent on OpenAIResponses": agent_loop},
        [raw, llm],
    )


async def measure_async(base_url: str, calls: int, loops: int, rounds: int) -> dict[str, float]:
    single, loop, keep = variants(base_url)
    try:
        samples, cpu = await sample_rounds(single, calls, 1, rounds, 64)
        print_table(
            f"Responses: single call and a 60-delta stream, one at a time ({len(samples[RAW])} "
            f"calls per variant, {rounds} rounds; CPU ratio to the {RAW} call of the same kind)",
            samples,
            cpu,
            lambda name: f"{RAW} stream" if "stream" in name else RAW,
        )
        found = {
            "responses single c=1: achat": cpu_ratio(cpu, "OpenAIResponses.achat", RAW),
            "responses stream c=1: astream": cpu_ratio(
                cpu, "OpenAIResponses.astream", f"{RAW} stream"
            ),
        }
        samples, cpu = await sample_rounds(loop, loops, 1, rounds, 32)
        print_table(
            f"Responses: 3-step tool loop with reasoning, one at a time "
            f"({len(samples[f'{RAW} loop'])} runs per variant, {rounds} rounds; CPU ratio to "
            f"the {RAW} loop)",
            samples,
            cpu,
            lambda _: f"{RAW} loop",
        )
        found["responses loop c=1: agent"] = cpu_ratio(
            cpu, "agent on OpenAIResponses", f"{RAW} loop"
        )
    finally:
        await keep[0].close()
    return found


def measure(calls: int, loops: int, rounds: int) -> dict[str, float]:
    """Run both measurements against a spawned fake server; the ratios by name."""
    print(f"openai {openai.__version__} (Responses API)")
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
    print("\nCPU ratio to the raw openai SDK's responses.create (goal: <= 0.6x, never > 1.0x)")
    for key, value in ratios.items():
        print(f"{key:<40}{value:>8.3f}x")


if __name__ == "__main__":
    main()
