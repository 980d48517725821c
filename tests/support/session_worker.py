"""One worker process of tests/sessions/test_session_store_workers.py: it serves
`--turns` turns of conversation `--session` with its own agent and its own store object, the
model being the fake OpenAI server at `--base-url`. After each finished turn it prints
`done <n>`.

    python tests/support/session_worker.py sqlite /tmp/app.db --session shared --name w1 \
        --turns 25 --base-url http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import argparse
import asyncio

from store_backends import Backend

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import OpenAILike


async def serve(args: argparse.Namespace) -> None:
    store = Backend(args.kind, args.target).make()
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=args.base_url, timeout=120)
    agent = OpenaiToolCallingAgent("You help.").with_llm(llm)
    try:
        for n in range(args.turns):
            async with pm.Session(args.session, store=store):
                await agent(f"{args.name} turn {n}")
            print(f"done {n}", flush=True)
    finally:
        await store.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["sqlite", "postgres", "redis"])
    parser.add_argument("target", help="the SQLite file or the server's URL")
    parser.add_argument("--session", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--base-url", required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
