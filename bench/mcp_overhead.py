"""Per-call overhead of an MCP tool call through `MCPToolset` against the raw `mcp` client
session, on the same server process and the same session (stdio,
tests/support/mcp_servers/small_server.py).

    uv run python bench/mcp_overhead.py [--calls 50] [--rounds 60]

Both variants call the server's `add` tool. They run in many short rounds, each round one batch
of each back to back (which goes first alternates), so a slow spell of the shared machine hits
both halves of a pair alike. The figure to read is the median over rounds of each pair's ratio
toolset/raw (target <= 1.05x), with its quartiles; the best and median seconds per call of each
are printed too, and this process's CPU per call (the client side only: the server is another
process). The toolset path adds JSON-schema validation of the arguments, the `Tool.call` timeout
scope, the module call path (hooks, tracing) and the conversion of the result to text.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from promptimus.mcp import MCPToolset

SERVER = str(Path(__file__).parent.parent / "tests" / "support" / "mcp_servers" / "small_server.py")


async def main(calls: int, rounds: int) -> None:
    async with MCPToolset.stdio(sys.executable, [SERVER]) as toolset:
        session = toolset._open_session()  # the same raw SDK session the toolset uses
        tool = toolset.tool("add")
        raw_times: list[float] = []
        ours_times: list[float] = []

        raw_cpu: list[float] = []
        ours_cpu: list[float] = []

        async def raw() -> None:
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(calls):
                await session.call_tool("add", {"a": i, "b": 1})
            raw_times.append((time.perf_counter() - started) / calls)
            raw_cpu.append((time.process_time() - cpu) / calls)

        async def ours() -> None:
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(calls):
                await tool.call({"a": i, "b": 1})
            ours_times.append((time.perf_counter() - started) / calls)
            ours_cpu.append((time.process_time() - cpu) / calls)

        for round_ in range(rounds):
            first, second = (raw, ours) if round_ % 2 == 0 else (ours, raw)
            await first()
            await second()

    def quartiles(values: list[float]) -> tuple[float, float, float]:
        q1, q2, q3 = statistics.quantiles(values, n=4)
        return q1, q2, q3

    wall = [o / r for o, r in zip(ours_times, raw_times, strict=True)]
    cpu = [o / r for o, r in zip(ours_cpu, raw_cpu, strict=True)]
    for label, times in (
        ("raw mcp ClientSession.call_tool", raw_times),
        ("MCPToolset tool.call", ours_times),
    ):
        best, median = min(times), statistics.median(times)
        print(f"{label:32s}: best {best * 1e3:7.3f}  median {median * 1e3:7.3f} ms/call")
    q1, q2, q3 = quartiles(wall)
    print(f"{'ratio toolset / raw (paired)':32s}: {q2:7.3f}x  median of {len(wall)} rounds,")
    print(f"{'':32s}  quartiles {q1:.3f}-{q3:.3f}  (target <= 1.05x)")
    print(f"{'ratio of the best rounds':32s}: {min(ours_times) / min(raw_times):7.3f}x")
    # this process's CPU per call: the client side only (the server is another process)
    cpu_raw, cpu_ours = statistics.median(raw_cpu), statistics.median(ours_cpu)
    print(f"{'client CPU raw / toolset':32s}: {cpu_raw * 1e6:7.1f} / {cpu_ours * 1e6:7.1f} us/call")
    q1, q2, q3 = quartiles(cpu)
    print(f"{'ratio client CPU (paired)':32s}: {q2:7.3f}x  quartiles {q1:.3f}-{q3:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
