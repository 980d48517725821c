"""What `promptimus.board.record` costs a run: the same agent runs with and without recording,
interleaved in one process, and the ratio of their medians.

    uv run python bench/board_overhead.py [--runs 40] [--repeats 15]

Three workloads, each an agent run with one tool call and two model calls (6 spans per run):

- a fast model: the fake OpenAI server on 127.0.0.1, in a process of its own as a real provider
  is, answering each request after 20 ms (hosted models take ten times that and more). This is
  the figure for real use.
- over HTTP: the same server answering at once. The run pays a real request, JSON and the SDK
  but no network or model time, and the server shares the machine's cores with the run.
- in process: a `ScriptedLLM` answers at once and nothing waits. Nothing but the framework
  runs, so this is the worst case: recording's whole CPU cost set against a run that does no
  other work.

Recording does little on the calling thread (it notes what happened); a background thread
makes the rows and writes them, mostly while the run waits for the model. Each repeat times
`--runs` runs without recording and `--runs` with it (each first in turn), the writer's flush
included, so whatever the background thread still had to do is counted, not left after the
clock stops; opening and closing the file, once per process in real use, are not timed.
Printed: the ratio of the medians, and of the fastest blocks (the least disturbed on a busy
machine).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from child_server import serve, spawned

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.dto import Message, MessageRole, ToolRequest
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.testing import Reply, ToolCall
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


async def main(args: argparse.Namespace) -> None:
    tools = [Tool(lookup)]
    command = [sys.executable, __file__, "--serve"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with spawned([*command, "--latency", "0.02"]) as url:
            slow = OpenAILike("fake-model", api_key="sk-fake", base_url=url)

            def fast_model() -> Any:
                return OpenaiToolCallingAgent("You help.", tools).with_llm(slow)

            await compare("fast model", fast_model, max(args.runs // 4, 1), args.repeats, folder)
        with spawned(command) as url:
            llm = OpenAILike("fake-model", api_key="sk-fake", base_url=url)

            def over_http() -> Any:
                return OpenaiToolCallingAgent("You help.", tools).with_llm(llm)

            await compare("over HTTP", over_http, args.runs, args.repeats, folder)
        scripted = ScriptedLLM(scripted_reply, model_name="scripted")

        def in_process() -> Any:
            return OpenaiToolCallingAgent("You help.", tools).with_llm(scripted)

        await compare("in process", in_process, args.runs * 5, args.repeats, folder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.0, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:  # the model server's own process
        serve(http_reply, arguments.latency)
    else:
        asyncio.run(main(arguments))
