"""Per-call overhead of an MCP tool call through `MCPToolset` against the raw `mcp` client
session, on the same server process and the same session (stdio, tests/mcp_servers/small_server.py).

    uv run python bench/mcp_overhead.py [--calls 200] [--rounds 5]

Both variants call the server's `add` tool; they are interleaved in rounds so machine noise hits
them alike. Printed: median seconds per call for each and the ratio toolset/raw (target <= 1.05x).
The toolset path adds JSON-schema validation of the arguments, the `Tool.call` timeout scope and
the conversion of the result to text.
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
        for _ in range(rounds):
            started = time.perf_counter()
            for i in range(calls):
                await session.call_tool("add", {"a": i, "b": 1})
            raw_times.append((time.perf_counter() - started) / calls)
            started = time.perf_counter()
            for i in range(calls):
                await tool.call({"a": i, "b": 1})
            ours_times.append((time.perf_counter() - started) / calls)
    raw, ours = statistics.median(raw_times), statistics.median(ours_times)
    print(f"raw mcp ClientSession.call_tool : {raw * 1e3:8.3f} ms/call")
    print(f"MCPToolset tool.call            : {ours * 1e3:8.3f} ms/call")
    print(f"ratio toolset / raw             : {ours / raw:8.3f}x  (target <= 1.05x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
