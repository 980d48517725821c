"""Per-call overhead of an MCP tool call through `MCPToolset` against the raw `mcp` client
session, on the same server process and the same session (stdio, tests/mcp_servers/small_server.py).

    uv run python bench/mcp_overhead.py [--calls 200] [--rounds 5]

Both variants call the server's `add` tool; they are interleaved in rounds (which goes first
alternates) so machine noise hits them alike. Printed: the best and the median seconds per call
of each, and the ratios toolset/raw (target <= 1.05x), then this process's CPU per call (the
client side only: the server is another process). The best round is the steadier wall figure on
a shared machine; the median shows the spread. The toolset path adds JSON-schema validation of
the arguments, the `Tool.call` timeout scope, the module call path (hooks, tracing) and the
conversion of the result to text.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from promptimus.mcp import MCPToolset

SERVER = str(Path(__file__).parent.parent / "tests" / "mcp_servers" / "small_server.py")


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
    best_raw, best_ours = min(raw_times), min(ours_times)
    med_raw, med_ours = statistics.median(raw_times), statistics.median(ours_times)
    for label, best, median in (
        ("raw mcp ClientSession.call_tool", best_raw, med_raw),
        ("MCPToolset tool.call", best_ours, med_ours),
    ):
        print(f"{label:32s}: best {best * 1e3:7.3f}  median {median * 1e3:7.3f} ms/call")
    print(f"{'ratio toolset / raw (best)':32s}: {best_ours / best_raw:7.3f}x  (target <= 1.05x)")
    print(f"{'ratio toolset / raw (median)':32s}: {med_ours / med_raw:7.3f}x")
    # this process's CPU per call: the client side only (the server is another process), the
    # steadier figure on a shared machine
    cpu_raw, cpu_ours = statistics.median(raw_cpu), statistics.median(ours_cpu)
    print(f"{'client CPU raw / toolset':32s}: {cpu_raw * 1e6:7.1f} / {cpu_ours * 1e6:7.1f} us/call")
    print(f"{'ratio client CPU (median)':32s}: {cpu_ours / cpu_raw:7.3f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
