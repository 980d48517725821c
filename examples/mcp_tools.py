"""MCP both ways: serve promptimus tools as an MCP server, then let an agent use them.

    python3 -m uv run --extra mcp examples/mcp_tools.py

This file is both sides. `python -m promptimus.mcp serve examples/mcp_tools.py:tools` serves
`tools` (below) over stdio; `main()` starts exactly that as a subprocess through
`MCPToolset.stdio`, and an agent calls the server's tools. The agent's model is promptimus's
fake OpenAI server on 127.0.0.1 with a scripted tool call (no API key needed); swap in a real
`OpenAILike(...)` to let a real model choose.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from promptimus.llms import OpenAILike
from promptimus.modules import OpenaiToolCallingAgent, Tool
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall


@Tool.decorate
def convert(celsius: float) -> float:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: the temperature in degrees Celsius.
    """
    return celsius * 9 / 5 + 32


tools = [convert]


async def main() -> None:
    from promptimus.mcp import MCPToolset

    here = Path(__file__)
    server = MCPToolset.stdio(
        sys.executable, ["-m", "promptimus.mcp", "serve", f"{here}:tools"], prefix="units_"
    )
    with FakeOpenAIServer() as fake:
        fake.chat.script(
            Reply(tool_calls=[ToolCall("units_convert", {"celsius": 21})]),
            Reply(content="21 °C is 69.8 °F."),
        )
        llm = OpenAILike("demo", api_key=fake.api_key, base_url=fake.base_url)
        async with server:
            print("tools from the MCP server:", list(server.tools))
            agent = OpenaiToolCallingAgent("Answer with the tools.", [server]).with_llm(llm)
            answer, record = await agent.run("What is 21 °C in Fahrenheit?")
        call = record.steps[0].tool_calls[0]
        print(f"the model called {call.name}({call.arguments}) -> {call.result}")
        print("answer:", answer.content)


if __name__ == "__main__":
    asyncio.run(main())
