"""A child process for tests/sessions/test_sqlite_session_store_close.py: `threads` threads
read and write one SQLite session store (or SQLite response cache) while the main thread keeps
closing it. It prints `ok <operations>` when every thread finished its work without an error;
a crash of the interpreter shows as the process's exit status instead.

    python tests/support/sqlite_close_under_load.py store /tmp/app.db --threads 8 --rounds 300
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import traceback
from typing import Any

from promptimus.llms import SQLiteCache
from promptimus.sessions import SQLiteSessionStore


class Closes:
    """How often the main thread closed the file; a worker waits (bounded) for the next close
    every few rounds, so closes land among the statements however the threads are scheduled."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def closed(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_for_next(self, seen: int) -> int:
        with self.changed:
            self.changed.wait_for(lambda: self.count > seen, timeout=5)
            return self.count


def use_store(store: SQLiteSessionStore, name: str, rounds: int, closes: Closes) -> int:
    async def work() -> int:
        seen = 0
        for n in range(rounds):
            await store.append_turn(name, f'{{"n": {n}, "text": "{"x" * 200}"}}')
            await store.load_turns(name)
            await store.list_sessions()
            if n % 10 == 9:
                seen = closes.wait_for_next(seen)
        return rounds * 3

    return asyncio.run(work())


def use_cache(cache: SQLiteCache, name: str, rounds: int, closes: Closes) -> int:
    seen = 0
    for n in range(rounds):
        cache.put_sync(f"{name}-{n}", "y" * 300)
        cache.get_sync(f"{name}-{n // 2}")
        len(cache)
        if n % 10 == 9:
            seen = closes.wait_for_next(seen)
    return rounds * 3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["store", "cache"])
    parser.add_argument("path")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    args = parser.parse_args()
    target: Any = SQLiteSessionStore(args.path) if args.kind == "store" else SQLiteCache(args.path)
    use = use_store if args.kind == "store" else use_cache
    done: list[int] = []
    failures: list[str] = []
    closes = Closes()

    def run(name: str) -> None:
        try:
            done.append(use(target, name, args.rounds, closes))
        except BaseException:
            failures.append(traceback.format_exc())

    threads = [threading.Thread(target=run, args=(f"t{k}",)) for k in range(args.threads)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        target.close()  # while the others execute statements on their connections
        closes.closed()
    for thread in threads:
        thread.join()
    target.close()
    if failures:
        print(failures[0], file=sys.stderr)
        sys.exit(1)
    print(f"ok {sum(done)} {closes.count}", flush=True)


if __name__ == "__main__":
    main()
