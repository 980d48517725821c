"""What is particular to the SQLite store: an erased conversation leaves nothing readable in the
database file or its WAL, and a turn cancelled while its write waits for another writer writes
nothing."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import ScriptedLLM
from promptimus.sessions import SQLiteSessionStore

SECRET = "card-4242-4242-4242-4242"
POLLS = 60_000  # rounds of 10 ms: only so a broken run fails instead of hanging the suite


def on_disk(path: Path) -> bytes:
    """Every byte of the database: its file, its WAL and its shared-memory index."""
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    return b"".join(file.read_bytes() for file in files if file.exists())


async def talk(store: SQLiteSessionStore, session_id: str, text: str) -> None:
    agent = OpenaiToolCallingAgent("You help.").with_llm(ScriptedLLM([f"noted: {text}"]))
    async with pm.Session(session_id, store=store):
        await agent(text)


@pytest.mark.parametrize("how", ["delete", "prune", "expiry"])
async def test_an_erased_conversation_leaves_no_text_on_disk(tmp_path: Path, how: str) -> None:
    now = [1_000.0]
    path = tmp_path / "app.db"
    store = SQLiteSessionStore(path, ttl=60, clock=lambda: now[0])
    try:
        for n in range(5):
            await talk(store, "alice", f"my {SECRET} number {n} " + "and more words " * 50)
        await talk(store, "bob", "something else")
        assert SECRET.encode() in on_disk(path)  # it was there
        if how == "delete":
            assert await store.delete("alice")
        else:
            now[0] += 120
            if how == "prune":
                assert await store.prune() == 2
            else:  # the conversation's next turn finds it expired and erases it
                await talk(store, "alice", "a new start")
        assert SECRET.encode() not in on_disk(path)
        assert len(await store.load_turns("alice")) == (1 if how == "expiry" else 0)
    finally:
        store.close()


def busy_waiting_for_the_write_lock() -> bool:
    """Whether a thread of this process is waiting in `SQLiteFile.begin` (for the lock)."""
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_name == "begin" and "sqlite_file" in frame.f_code.co_filename:
                return True
            frame = frame.f_back  # type: ignore[assignment]
    return False


def test_a_turn_cancelled_while_its_write_waits_for_another_writer_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    store = SQLiteSessionStore(path, busy_timeout=120)
    other = sqlite3.connect(path, isolation_level=None)  # another process's writer
    llm = ScriptedLLM(["answered"])
    agent = OpenaiToolCallingAgent("You help.").with_llm(llm)

    async def turn() -> Any:
        async with pm.Session("alice", store=store):
            return await agent("cancel me")

    async def main() -> None:
        other.execute("BEGIN IMMEDIATE")
        task = asyncio.create_task(turn())
        for _ in range(POLLS):  # the model has answered, the turn's write waits in a thread
            if busy_waiting_for_the_write_lock():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the turn's write never waited for the lock")
        assert len(llm.requests) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        other.execute("ROLLBACK")  # the lock frees: the waiting write gets it

    asyncio.run(main())  # returns once the worker threads have finished
    other.close()
    assert asyncio.run(store.load_turns("alice")) == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM promptimus_turns").fetchone() == (0,)
    store.close()
