"""What `promptimus.board.record` costs a run: the same agent runs with and without recording,
interleaved in one process, and the ratio of their medians.

    uv run python bench/board_overhead.py [--runs 40] [--repeats 7]

Two workloads, each an agent run with one tool call and two model calls (6 spans per run):

- over HTTP: the model is the fake OpenAI server on 127.0.0.1 (no latency added), so the run
  pays a real request, JSON and the SDK, as with a real provider, but with no network time:
  a real model's hundreds of milliseconds would make the ratio closer still to 1;
- in process: a `ScriptedLLM` answers at once. Nothing but the framework runs, so this is the
  worst case: recording's share of a run that does nothing else.

Each repeat times `--runs` runs without recording and `--runs` with it (each first in turn),
the writer's flush included (so work the background thread does is counted, not left after
the clock stops); opening and closing the file, once per process in real use, are not timed.
Printed: the ratio of the medians, and of the fastest blocks (the least disturbed on a busy
machine).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.dto import Message, MessageRole, ToolRequest
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool


def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR"


def scripted_reply(history: list[Message], kwargs: dict[str, Any]) -> Any:
    if history[-1].role == MessageRole.TOOL:
        return "It costs 30 EUR."
    call = ToolRequest.model_validate(
        {"id": "c1", "function": {"name": "lookup", "arguments": '{"order": 42}'}}
    )
    return Message(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def http_reply(body: dict[str, Any]) -> Any:
    if body["messages"][-1]["role"] == "tool":
        return "It costs 30 EUR."
    return Reply(tool_calls=[ToolCall("lookup", {"order": 42}, id="c1")])


async def timed(runs: int, one: Callable[[], Awaitable[Any]], path: Path | None) -> float:
    """Seconds for `runs` runs; with `path`, recorded there, the flush that writes what is
    still queued counted (opening and closing the file, once per process in real use, not)."""
    recording = None if path is None else record(path)
    start = time.perf_counter()
    for _ in range(runs):
        await one()
    if recording is not None:
        recording.flush()
    took = time.perf_counter() - start
    if recording is not None:
        recording.close()
    return took


async def compare(
    name: str, make: Callable[[], Any], runs: int, repeats: int, folder: Path
) -> float:
    async def one() -> Any:  # a fresh agent: each run sends the same two requests
        return await make().run("How much is order 42?")

    for _ in range(3):
        await one()  # warm up: imports, connections, caches
    plain, recorded = [], []
    for repeat in range(repeats):
        path = folder / f"{name}-{repeat}.sqlite"
        if repeat % 2:  # alternate which goes first, so neither always follows the other
            recorded.append(await timed(runs, one, path))
            plain.append(await timed(runs, one, None))
        else:
            plain.append(await timed(runs, one, None))
            recorded.append(await timed(runs, one, path))
    off, on = statistics.median(plain), statistics.median(recorded)
    ratio = on / off
    print(
        f"{name:<11} {runs} runs: without {off / runs * 1e3:7.3f} ms/run, "
        f"with record {on / runs * 1e3:7.3f} ms/run, ratio {ratio:.3f} "
        f"(of the fastest blocks: {min(recorded) / min(plain):.3f})"
    )
    return ratio


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(record=False) as srv:
        folder = Path(tmp)
        srv.chat.respond_with(http_reply)
        llm = OpenAILike("fake-model", api_key="sk-fake", base_url=srv.base_url)
        tools = [Tool(lookup)]

        def over_http() -> Any:
            return OpenaiToolCallingAgent("You help.", tools).with_llm(llm)

        await compare("over HTTP", over_http, args.runs, args.repeats, folder)
        scripted = ScriptedLLM(scripted_reply, model_name="scripted")

        def in_process() -> Any:
            return OpenaiToolCallingAgent("You help.", tools).with_llm(scripted)

        await compare("in process", in_process, args.runs * 5, args.repeats, folder)


if __name__ == "__main__":
    asyncio.run(main())
