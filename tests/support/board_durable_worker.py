"""A worker for tests/board: holds one durable run ("t-42") that pauses on a `refund` tool that
requires approval, recording it to the board file, and waits until someone decides.

    python board_durable_worker.py DB BASE_URL EFFECTS BOARD_FILE

Prints `needs_approval` once the run is paused, then `done <answer>` once the run completed
(after a decision given anywhere, e.g. the board's Approve button). Each time `refund` really
runs it appends a line to EFFECTS: the record of side effects the test counts.
"""

from __future__ import annotations

import asyncio
import sys

from dbos import DBOS
from durable_crash_worker import dbos_config

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.durable import DurableAgent
from promptimus.llms import OpenAILike
from promptimus.tools.tool import Tool


async def main() -> None:
    db, base_url, effects, board_file = sys.argv[1:5]

    def lookup(order: int) -> str:
        """Look an order up."""
        return f"order {order}: 30 EUR"

    def refund(order: int) -> str:
        """Refund an order."""
        with open(effects, "a") as out:
            out.write(f"refund {order}\n")
        return f"refunded {order}"

    tools = [Tool(lookup), Tool(refund, requires_approval=True, idempotent=False)]
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url, timeout=60)
    agent = OpenaiToolCallingAgent("You handle refunds.", tools, max_steps=5).with_llm(llm)
    DBOS(config=dbos_config(db, executor_id="worker"))  # type: ignore[arg-type]
    durable = DurableAgent(agent, name="refunds")
    DBOS.launch()
    try:
        with record(board_file):
            result = await durable.run("Refund order 42", workflow_id="t-42")
            print(result.status, flush=True)
            for _ in range(1200):  # two minutes at most: the test gives up before
                if result.status == "completed":
                    break
                await asyncio.sleep(0.1)
                result = await durable.result("t-42")
            print("done", result.output.content, flush=True)
    finally:
        DBOS.destroy()


asyncio.run(main())
