"""A PersistentClient killed with -9 while inserting: the named error, then `rebuild()` recovers
every row chromadb committed (compared with chroma.sqlite3 read directly). Issue 10."""

from __future__ import annotations

import math
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from chromadb_store import ChromaVectorStore

from promptimus.errors import VectorIndexCorrupted, VectorStoreRecoveryError

SETTINGS = Settings(anonymized_telemetry=False)
DIM = 32
BATCH = 250
# Long ids make chromadb's id map (index_metadata.pickle) big, so its rewrite, which chromadb
# does in place, lasts long enough for the test to kill the writer in the middle of it.
PAD = "." * 150

# One writer process: the rows it inserts are a pure function of `first`, so the test knows
# every vector it may find. It reports through the pipe before each upsert. A sync threshold
# below the batch size makes chromadb persist its index on every upsert.
WRITER = """
import random, sys
import chromadb
from chromadb.config import Settings

path, first, count, dim, batch, pad = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
rng = random.Random(first)
vectors = [[rng.random() for _ in range(dim)] for _ in range(count)]
client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
collection = client.get_or_create_collection(
    "docs",
    embedding_function=None,
    configuration={"hnsw": {"space": "cosine", "sync_threshold": 100}},
)
for start in range(0, count, batch):
    print(start, flush=True)
    ids = range(first + start, first + start + batch)
    collection.upsert(
        ids=[f"id{i}{pad}" for i in ids],
        embeddings=vectors[start : start + batch],
        documents=[f"doc {i}" for i in ids],
        metadatas=[{"n": i} for i in ids],
    )
print("finished", flush=True)
"""


def number(doc_id: str) -> int:
    return int(doc_id.removesuffix(PAD)[2:])


def expected_vectors(first: int, count: int) -> dict[str, list[float]]:
    rng = random.Random(first)
    return {f"id{first + i}{PAD}": [rng.random() for _ in range(DIM)] for i in range(count)}


def run_writer(path: Path, first: int, count: int, *, kill: bool) -> bool:
    """Run one writer. With ``kill``: once it has reported its first batch, SIGKILL it the
    moment chromadb has emptied the index's id map to rewrite it (or, if that is never seen,
    after its tenth batch). Returns whether the kill landed mid-rewrite."""
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), *map(str, (first, count, DIM, BATCH)), PAD],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in process.stdout], daemon=True).start()
    try:
        first_line = lines.get(timeout=120)  # generous: a hang fails instead of blocking
        if not kill:
            while first_line.strip() != "finished":
                first_line = lines.get(timeout=120)
            return False
        id_maps = list(path.glob("*/index_metadata.pickle"))
        reported = 1
        while process.poll() is None and reported <= 10:
            if any(_size(p) == 0 for p in id_maps):
                os.kill(process.pid, signal.SIGKILL)
                return True
            while not lines.empty():
                reported += 1
                lines.get_nowait()
        os.kill(process.pid, signal.SIGKILL)
        return False
    finally:
        process.kill()
        process.wait(timeout=120)


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def committed_ids(path: Path) -> set[str]:
    """Every id chromadb committed: its metadata segment's rows and its write-ahead log."""
    db = sqlite3.connect(f"file:{path / 'chroma.sqlite3'}?mode=ro", uri=True)
    try:
        stored = {
            row[0]
            for row in db.execute(
                "SELECT e.embedding_id FROM embeddings e JOIN segments s ON s.id = e.segment_id "
                "WHERE s.scope = 'METADATA'"
            )
        }
        logged = {row[0] for row in db.execute("SELECT id FROM embeddings_queue")}
    finally:
        db.close()
    return stored | logged


def open_store(path: Path) -> tuple[chromadb.ClientAPI, ChromaVectorStore]:
    client = chromadb.PersistentClient(path=str(path), settings=SETTINGS)
    return client, ChromaVectorStore(client, "docs")


async def is_broken(store: ChromaVectorStore) -> bool:
    try:
        await store.count()
    except VectorIndexCorrupted:
        return True
    return False


async def assert_everything_recovered(
    store: ChromaVectorStore, path: Path, vectors: dict[str, list[float]]
) -> None:
    wanted = committed_ids(path)
    assert wanted, "the writer committed nothing"
    assert await store.rebuild() == len(wanted)
    assert await store.count() == len(wanted)
    got = store.collection.get(ids=sorted(wanted), include=["embeddings", "documents", "metadatas"])
    assert set(got["ids"]) == wanted
    for doc_id, vector, document, metadata in zip(
        got["ids"], got["embeddings"], got["documents"], got["metadatas"], strict=True
    ):
        n = number(doc_id)
        assert (document, metadata) == (f"doc {n}", {"n": n})
        assert cosine(vector, vectors[doc_id]) == pytest.approx(1.0, abs=1e-5), doc_id
    # The rebuilt collection is an ordinary one: search and insert work.
    some = next(iter(wanted))
    hits = await store.search(vectors[some], n_results=1)
    assert hits[0].id == some
    await store.insert([[1.0] * DIM], ["after"], ["after"])
    assert await store.count() == len(wanted) + 1


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_kill_9_during_inserts_then_rebuild_recovers_every_committed_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chroma"
    run_writer(path, 0, 2000, kill=False)  # a persisted index to begin with
    vectors = expected_vectors(0, 2000)
    broken = False
    for round_ in range(1, 9):  # a series of kills on one database, as a crashing app would
        first = round_ * 100_000
        vectors.update(expected_vectors(first, 5000))
        run_writer(path, first, 5000, kill=True)
        client, store = open_store(path)
        broken = await is_broken(store)
        if broken:
            with pytest.raises(VectorIndexCorrupted, match=r"rebuild\(\)"):
                await store.search([1.0] * DIM)
            with pytest.raises(VectorIndexCorrupted):
                await store.insert([[1.0] * DIM], ["x"], ["x"])
            break
        client.clear_system_cache()
    # Either way (a kill may land at a harmless moment every time): every committed row.
    await assert_everything_recovered(store, path, vectors)
    print(f"broken state reproduced: {broken} after {round_} kills")


async def test_a_torn_index_id_map_is_detected_and_every_row_recovered(tmp_path: Path) -> None:
    """The on-disk state the kills above leave most often, made on purpose: chromadb rewrites
    the index's id map in place, so a kill during that write leaves it empty."""
    path = tmp_path / "chroma"
    run_writer(path, 0, 3000, kill=False)
    run_writer(path, 100_000, 750, kill=False)
    vectors = {**expected_vectors(0, 3000), **expected_vectors(100_000, 750)}
    (pickle_path,) = path.glob("*/index_metadata.pickle")
    pickle_path.write_bytes(b"")
    client, store = open_store(path)
    for call in (store.count(), store.search([1.0] * DIM)):
        with pytest.raises(VectorIndexCorrupted, match=r"await store\.rebuild\(\)"):
            await call
    await assert_everything_recovered(store, path, vectors)
    # A new client (a restarted app) sees the rebuilt collection.
    client.clear_system_cache()
    _, reopened = open_store(path)
    assert await reopened.count() == 3751


async def test_a_rebuild_that_cannot_recover_every_vector_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    run_writer(path, 0, 3000, kill=False)
    (pickle_path,) = path.glob("*/index_metadata.pickle")
    pickle_path.write_bytes(b"")
    data = pickle_path.parent / "data_level0.bin"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # vectors lost for good
    before = committed_ids(path)
    client, store = open_store(path)
    with pytest.raises(VectorStoreRecoveryError, match="no recoverable vector") as caught:
        await store.rebuild()
    assert "Nothing was changed" in str(caught.value)
    assert committed_ids(path) == before
    assert [c.name for c in client.list_collections()] == ["docs"]
    with pytest.raises(VectorIndexCorrupted):
        await store.count()
