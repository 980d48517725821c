"""ChromaVectorStore against a real local Chroma server (``chroma run`` on 127.0.0.1).

The server is chromadb's own, started from the installed package with telemetry off and data in a
temp folder; nothing leaves the machine. If the server cannot start here (no ``chroma`` executable,
port trouble), these tests are skipped with the reason rather than hanging the run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from chromadb_store import ChromaVectorStore

SETTINGS = Settings(anonymized_telemetry=False)
DOCS = ["apple pie", "banana bread", "cherry tart"]
IDS = ["a", "b", "c"]
VECTORS = [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 1.0, 0.0]]
METAS = [{"kind": "fruit", "n": 1}, {"kind": "fruit", "n": 2}, {"kind": "tart", "n": 3}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_executable() -> str | None:
    beside_python = Path(sys.executable).with_name("chroma")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("chroma")


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    exe = _chroma_executable()
    if exe is None:
        pytest.skip("the `chroma` executable is not installed beside this Python")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [exe, "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1
                ) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip("a local Chroma server did not start within 30 s")
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_http_client_round_trip(chroma_server: int) -> None:
    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server, settings=SETTINGS)
    store = ChromaVectorStore(client, "http_docs")
    await store.insert(VECTORS, DOCS, IDS, METAS)
    await store.insert([VECTORS[0]], ["apple pie, again"], ["a"], [METAS[0]])  # upsert, not a copy

    assert await store.count() == 3
    hits = await store.search([1.0, 0.0, 0.0], n_results=10)
    assert [h.id for h in hits] == ["a", "b", "c"]
    assert hits[0].document == "apple pie, again"
    assert hits[0].score == pytest.approx(1.0)
    assert hits[0].score > hits[1].score > hits[2].score

    only_tarts = await store.search([1.0, 0.0, 0.0], n_results=10, where={"kind": "tart"})
    assert [h.id for h in only_tarts] == ["c"]

    await store.delete(["b"])
    reopened = ChromaVectorStore(
        chromadb.HttpClient(host="127.0.0.1", port=chroma_server, settings=SETTINGS), "http_docs"
    )
    assert await reopened.count() == 2
    assert [h.id for h in await reopened.search([0.0, 1.0, 0.0], n_results=5)] == ["c", "a"]


async def test_async_http_client_round_trip_and_concurrent_first_calls(chroma_server: int) -> None:
    import asyncio

    client = await chromadb.AsyncHttpClient(host="127.0.0.1", port=chroma_server, settings=SETTINGS)
    store = ChromaVectorStore(client, "async_docs", space="l2")
    assert store.collection is None  # the async collection opens on first use

    # Several first calls at once open the collection once and all succeed.
    await asyncio.gather(
        store.insert(VECTORS[:1], DOCS[:1], IDS[:1], METAS[:1]),
        store.insert(VECTORS[1:], DOCS[1:], IDS[1:], METAS[1:]),
        store.count(),
    )
    assert store.collection is not None
    assert await store.count() == 3
    assert store.space == "l2"

    hits = await store.search([1.0, 0.0, 0.0], n_results=3)
    assert [h.id for h in hits] == ["a", "b", "c"]
    assert hits[0].score > hits[1].score > hits[2].score  # higher is better in L2 too
    assert hits[1].metadata == {"kind": "fruit", "n": 2}

    filtered = await store.search([1.0, 0.0, 0.0], n_results=3, where={"n": {"$gte": 2}})
    assert [h.id for h in filtered] == ["b", "c"]

    await store.delete(["a", "c"])
    assert await store.count() == 1
