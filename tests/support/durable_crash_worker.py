"""A process that runs one durable agent run and stops dead at a chosen point, for
tests/test_durable_recovery.py.

The run makes three tool calls (`look`, `charge`, `note`, one per step) against the fake OpenAI
server at `--base-url`, whose model answers from the tool results it has seen (`respond`).
Each tool appends its name to `--log`. At the point named by `--stop-at` the process writes
`reached <point>` to the FIFO `--signal` and blocks until the test kills it:

- `after:<step>:<k>`: the k-th `history` / `model` / `tool` / `commit` step was recorded;
- `before:model:<k>`: inside the k-th model step, before the request is sent;
- `sent:model:<k>`: inside it, after the reply arrived, before DBOS recorded it;
- `before:tool:<k>`: inside the k-th tool step, before the tool runs;
- `effect:charge`: inside `charge`, after its effect (the log line), before it returns;
- `appended:turn`: the run's turn is in the session store, its commit step not recorded yet.

With `--stop-at none` the run completes and the process prints the final answer.
- `after:compact:<k>`: the k-th compaction step was recorded.

`--compact` gives the agent a compactor that summarizes every turn but the run's own (a
conversation read from `--sessions` with earlier turns is compacted before the first request).
`--charge-once` marks `charge` `idempotent=False`, `--approve-charge` makes it require approval
(the process prints `status needs_approval` and exits); `--wait` waits for the run instead of
starting it (the process that recovers it). `--sessions FILE` gives the durable agent an
`SQLiteSessionStore` on FILE and starts the run inside `Session("ann", store=...)`. `--guards
FILE` gives the agent guardrails whose verdicts change after their first call (`guardrails`),
each noting its calls in FILE. `--responses` runs the agent on `OpenAIResponses` (the fake's
`/v1/responses`, answered by `respond_responses`: a reasoning item before each call).

    python tests/support/durable_crash_worker.py DB --base-url URL --log LOG --signal FIFO \
        --stop-at P

`--serve` starts a process that forks such workers on demand (see `serve`): the kill tests
start one worker per kill point, and forking them skips the second or so of imports each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from dbos import DBOS

import promptimus as pm
from promptimus.agents.loop.executor import RunExecutor
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message
from promptimus.durable import DurableAgent, DurableExecutor
from promptimus.guardrails import InputGuardrail, OutputGuardrail, ToolGuardrail, Verdict
from promptimus.llms import OpenAILike, OpenAIResponses
from promptimus.modules import Compactor, Summarize
from promptimus.protocols.session_store import StoredTurn
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import Reply, ResponsesReply, ToolCall
from promptimus.transport.retry import RetryPolicy

APP_VERSION = "promptimus-durable-tests-1"
TOOLS = ("look", "charge", "note")
WORKFLOW_ID = "ticket-42"
REQUEST = "Refund order 42"


SUMMARY = "Summary: the customer asked about orders 1 to 4."


def respond(body: dict[str, Any]) -> Reply:
    """The deterministic model: call the tools in turn, then answer with what they returned
    (the results after the run's request: a stored conversation's earlier turns come before
    it). A request without tools is a compaction's summary request."""
    if "tools" not in body:
        return Reply(content=SUMMARY)
    messages = body["messages"]
    starts = [i for i, m in enumerate(messages) if str(m.get("content")).startswith(REQUEST)]
    run = messages[starts[-1] :] if starts else messages
    results = [m.get("content") or "" for m in run if m["role"] == "tool"]
    if len(results) < len(TOOLS):
        n = len(results)
        return Reply(tool_calls=[ToolCall(TOOLS[n], {"order": 42}, id=f"call_{n + 1}")])
    return Reply(content="done: " + ", ".join(results))


def respond_responses(body: dict[str, Any]) -> ResponsesReply:
    """`respond` on the Responses API, as a reasoning model: each reply starts with a reasoning
    item ("step N"), so the next request must carry it back before the call it led to."""
    results = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    n = len(results)
    if n < len(TOOLS):
        call = ToolCall(TOOLS[n], {"order": 42}, id=f"call_{n + 1}")
        return ResponsesReply(reasoning=f"step {n + 1}", tool_calls=[call])
    return ResponsesReply(reasoning="answer", content="done: " + ", ".join(results))


def dbos_config(db: Path | str, executor_id: str | None = None) -> dict[str, Any]:
    """DBOS's configuration for the tests: `db` is a SQLite file or a PostgreSQL URL."""
    config: dict[str, Any] = {
        "name": "promptimus-tests",
        "system_database_url": db if str(db).startswith("postgresql") else f"sqlite:///{db}",
        "application_version": APP_VERSION,
        "log_level": "WARNING",
    }
    if executor_id is not None:
        config["executor_id"] = executor_id
    return config


class Stop:
    """Where the process stops: `reach(point)` signals the test and blocks for ever there."""

    def __init__(self, point: str, signal: Path | None) -> None:
        self.point, self.signal = point, signal
        self.counts: Counter[str] = Counter()

    def count(self, kind: str) -> int:
        self.counts[kind] += 1
        return self.counts[kind]

    def reach(self, point: str) -> None:
        if point != self.point or self.signal is None:
            return
        fd = os.open(self.signal, os.O_WRONLY)
        os.write(fd, f"reached {point}\n".encode())
        os.close(fd)
        threading.Event().wait()  # the test kills the process here


def build_agent(
    base_url: str,
    log: Path,
    *,
    charge_once: bool,
    approve_charge: bool = False,
    stop: Stop | None = None,
    guards: Path | None = None,
    compact: bool = False,
    responses: bool = False,
) -> Any:
    """The agent of the run: the same in the worker and in the process that recovers it."""

    def tool(name: str) -> Any:
        def run(order: int) -> str:
            with log.open("a") as out:
                out.write(f"{name}\n")
            if stop is not None and name == "charge":
                stop.reach("effect:charge")
            return f"{name}-ok"

        run.__name__ = name
        run.__doc__ = f"The {name} tool."
        return run

    from promptimus.tools.tool import Tool

    tools = [
        Tool(
            tool(name),
            idempotent=not (charge_once and name == "charge"),
            requires_approval=approve_charge and name == "charge",
        )
        for name in TOOLS
    ]
    provider: Any = OpenAIResponses if responses else OpenAILike
    llm = provider(
        "fake-model",
        api_key="sk-fake",
        base_url=base_url,
        retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01),
        timeout=30.0,
        **({"reasoning_summary": "auto"} if responses else {}),
    )
    agent = OpenaiToolCallingAgent(
        "You handle refunds.",
        tools,
        max_steps=6,
        guardrails=None if guards is None else guardrails(guards),
        compactor=Compactor(Summarize(), trigger_messages=2, keep_last=1) if compact else None,
    ).with_llm(llm)
    if stop is not None:
        agent.executor = _Stopping(_StoppingInside(stop), stop)
    return agent


def guardrails(log: Path) -> list[Any]:
    """Guardrails like judges that change their minds: each notes its position (`input`,
    `parallel`, `tool`, `output`) in `log` when called, and decides one way on its first call,
    the other way on any later one. A run that checked again would take another path."""

    def calls(position: str) -> int:
        with log.open("a") as out:
            out.write(f"{position}\n")
        return log.read_text().split().count(position)

    def screen_request(text: str) -> Verdict:
        return Verdict.replace(f"{text} [screened]") if calls("input") == 1 else Verdict.allow()

    def parallel_review(text: str) -> Verdict:
        return Verdict.allow() if calls("parallel") == 1 else Verdict.block("changed its mind")

    def charge_limit(name: str, arguments: dict[str, Any]) -> Verdict:
        return Verdict.block("over the limit") if calls("tool") == 1 else Verdict.allow()

    def review_answer(text: str) -> Verdict:
        if calls("output") == 1:
            return Verdict.replace(f"{text} [reviewed]")
        return Verdict.block("changed its mind")

    return [
        InputGuardrail(screen_request),
        InputGuardrail(parallel_review, parallel=True),
        ToolGuardrail(charge_limit, tools="charge"),
        OutputGuardrail(review_answer),
    ]


class _StoppingInside(RunExecutor):
    """The work inside the steps, with the `before:` / `sent:` points."""

    __slots__ = ("stop",)

    def __init__(self, stop: Stop) -> None:
        self.stop = stop

    async def call_model(self, prompt: Any, request: Any, on_delta: Any = None) -> Message:
        k = self.stop.count("model-inside")
        self.stop.reach(f"before:model:{k}")
        reply = await super().call_model(prompt, request, on_delta)
        self.stop.reach(f"sent:model:{k}")
        return reply

    async def run_tool_call(self, tools: Any, call: Any, ctx: Any, limit: Any) -> Any:
        self.stop.reach(f"before:tool:{self.stop.count('tool-inside')}")
        return await super().run_tool_call(tools, call, ctx, limit)


class _Stopping(DurableExecutor):
    """The steps, with the `after:` points (a step's result is recorded when it returns)."""

    __slots__ = ("stop",)

    def __init__(self, inner: RunExecutor, stop: Stop) -> None:
        super().__init__(inner)
        self.stop = stop

    def _after(self, kind: str) -> None:
        self.stop.reach(f"after:{kind}:{self.stop.count(kind)}")

    async def history(self, memory: Any) -> list[Message]:
        messages = await super().history(memory)
        self._after("history")
        return messages

    async def call_model(self, prompt: Any, request: Any, on_delta: Any = None) -> Message:
        reply = await super().call_model(prompt, request, on_delta)
        self._after("model")
        return reply

    async def run_tool_call(self, tools: Any, call: Any, ctx: Any, limit: Any) -> Any:
        entry = await super().run_tool_call(tools, call, ctx, limit)
        self._after("tool")
        return entry

    async def compact(self, compactor: Any, messages: Any, llm: Any, frozen_from: int) -> Any:
        done = await super().compact(compactor, messages, llm, frozen_from)
        self._after("compact")
        return done

    async def commit(self, memory: Any, messages: list[Message]) -> None:
        await super().commit(memory, messages)
        self._after("commit")


class _StoppingStore:
    """A session store that stops at `appended:turn` once a turn is appended."""

    def __init__(self, inner: SQLiteSessionStore, stop: Stop) -> None:
        self.inner, self.stop = inner, stop

    async def load_turns(self, session_id: str, since: int = 0) -> list[StoredTurn]:
        return await self.inner.load_turns(session_id, since)

    async def append_turn(self, session_id: str, payload: str) -> int:
        seq = await self.inner.append_turn(session_id, payload)
        self.stop.reach("appended:turn")
        return seq

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def main(args: argparse.Namespace) -> None:
    stop = Stop(args.stop_at, args.signal)
    store = (
        None if args.sessions is None else _StoppingStore(SQLiteSessionStore(args.sessions), stop)
    )
    agent = build_agent(
        args.base_url,
        args.log,
        charge_once=args.charge_once,
        approve_charge=args.approve_charge,
        stop=stop,
        guards=args.guards,
        compact=args.compact,
        responses=args.responses,
    )
    DBOS(config=dbos_config(args.db))  # type: ignore[arg-type]
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02, store=store)
    DBOS.launch()
    try:
        if args.wait:
            result = await durable.result(WORKFLOW_ID)
        elif store is not None:
            async with pm.Session("ann", store=store):
                result = await durable.run(REQUEST, workflow_id=WORKFLOW_ID)
        else:
            result = await durable.run(REQUEST, workflow_id=WORKFLOW_ID)
        print(f"status {result.status}", flush=True)
        if result.status == "completed":
            print(f"answer {result.output.content}", flush=True)
    finally:
        DBOS.destroy()


def serve() -> None:
    """Fork a worker per command line read from stdin, so each starts without paying for its
    imports again: `run <out file> <worker args...>` answers `pid <n>`; `wait <n>` answers
    `exit <status>` once that worker ended (a kill included)."""
    _import_what_a_run_imports()
    assert threading.active_count() == 1, "fork only from a process with one thread"
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "run":
            out, *argv = rest
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                    os.dup2(fd, 1)
                    os.dup2(fd, 2)
                    asyncio.run(main(parser().parse_args(argv)))
                    code = 0
                finally:
                    os._exit(code)
            print(f"pid {pid}", flush=True)
        elif command == "wait":
            _, status = os.waitpid(int(rest[0]), 0)
            print(f"exit {status}", flush=True)


def _import_what_a_run_imports() -> None:
    """Import ahead what a worker imports lazily on its way (the SDK and its HTTP stack,
    DBOS's SQLite database, the 0.1 names), so a forked worker does not pay for it."""
    import importlib

    for name in (
        "openai",
        "httpx2",
        "aiohttp",
        "sqlite3",
        "sqlalchemy.dialects.sqlite",
        "dbos._sys_db_sqlite",
        "promptimus.compat",
        "promptimus.llms.openai",
        "promptimus.llms.openai_responses",
        "promptimus.sessions",
    ):
        importlib.import_module(name)


def _database(text: str) -> Path | str:
    return text if text.startswith("postgresql") else Path(text)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=_database, help="a SQLite file or a PostgreSQL URL")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--signal", type=Path)
    parser.add_argument("--stop-at", default="none")
    parser.add_argument("--charge-once", action="store_true")
    parser.add_argument("--approve-charge", action="store_true", help="charge requires approval")
    parser.add_argument("--wait", action="store_true", help="wait for the run instead of starting")
    parser.add_argument("--sessions", type=Path, help="a SQLite file of the session store")
    parser.add_argument("--guards", type=Path, help="guardrails that note their calls here")
    parser.add_argument("--compact", action="store_true", help="the agent compacts its history")
    parser.add_argument("--responses", action="store_true", help="on OpenAIResponses")
    return parser


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        asyncio.run(main(parser().parse_args()))
