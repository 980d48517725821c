"""Saving under hostile conditions: onto a folder (onto a FIFO: test_checkpoint_limits.py),
past a file-size limit, killed with -9 in the middle (the next save removes what the dead writer
left, never a live writer's file); and pickling a module tree."""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from module_box import Box

from promptimus.checkpoint import files as checkpoint_files
from promptimus.core import ModuleDict, Parameter
from promptimus.errors import CheckpointWriteError
from promptimus.llms.dummy import DummyLLm

BOUND = 60.0  # seconds for a child to report; generous


def tree() -> Box:
    root = Box()
    root.text = Parameter("old")
    root.tools = ModuleDict({"search": Box()})
    return root


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------------------ named failures


@pytest.mark.parametrize("keep_comments", [True, False])
def test_saving_onto_a_folder_is_a_named_error(tmp_path: Path, keep_comments: bool) -> None:
    target = tmp_path / "c.toml"
    target.mkdir()
    (target / "inside.txt").write_text("kept")
    with pytest.raises(CheckpointWriteError, match="folder"):
        tree().save(target, keep_comments=keep_comments)
    assert (target / "inside.txt").read_text() == "kept"
    assert temp_files(tmp_path) == []


CHILD_PRELUDE = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from promptimus.core import Module, Parameter

    class Box(Module):
        async def forward(self):
            return None

    path = Path(sys.argv[1])
    """
)


def run_child(body: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = CHILD_PRELUDE + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=BOUND
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs resource.RLIMIT_FSIZE")
def test_save_past_the_file_size_limit_is_named_and_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    result = run_child(
        """
        import resource
        from promptimus.errors import CheckpointWriteError
        root = Box()
        root.text = Parameter("small")
        root.save(path)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        root.text.value = "x" * 100_000
        try:
            root.save(path)
        except CheckpointWriteError as exc:
            print("named:", exc)
        except BaseException as exc:
            print("raw:", type(exc).__name__, exc)
        """,
        str(path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("named:"), result.stdout
    assert "file-size limit" in result.stdout
    assert 'text = """\nsmall\n"""' in path.read_text()
    assert temp_files(tmp_path) == []


# ------------------------------------------------------------------- temp files of dead writers

STALLING_SAVE = """
    out = int(sys.argv[2])

    def stall(fd):  # the temporary file is written: tell the parent, then wait to be killed
        os.write(out, b"writing\\n")
        while True:
            time.sleep(60)

    os.fsync = stall
"""


def start_stalled_writer(path: Path, save: str) -> subprocess.Popen[bytes]:
    """A child process stopped inside save(), its temporary file written; it reports through a
    pipe (no sleeps in the test)."""
    read_end, write_end = os.pipe()
    code = CHILD_PRELUDE + textwrap.dedent(STALLING_SAVE) + textwrap.dedent(save)
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(write_end)], pass_fds=(write_end,)
    )
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], BOUND)
        assert ready, "the writer never reported"
        assert os.read(read_end, 100) == b"writing\n"
    except BaseException:
        child.kill()
        child.wait(BOUND)
        raise
    finally:
        os.close(read_end)
    return child


def kill_9(child: subprocess.Popen[bytes]) -> None:
    child.send_signal(signal.SIGKILL)
    assert child.wait(BOUND) == -signal.SIGKILL


SAVE_CHECKPOINT = """
    root = Box()
    root.text = Parameter("new " * 10_000)
    root.save(path)
"""


@pytest.mark.skipif(os.name != "posix", reason="kill -9 and pid probes are POSIX")
def test_next_save_removes_the_temp_file_of_a_writer_killed_mid_save(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    tree().save(path)
    before = path.read_bytes()
    kill_9(start_stalled_writer(path, SAVE_CHECKPOINT))
    left = temp_files(tmp_path)
    assert len(left) == 1 and left[0].startswith(".c.toml.")
    assert path.read_bytes() == before  # the crash never touched the checkpoint
    tree().save(path)
    assert temp_files(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="kill -9 and pid probes are POSIX")
def test_a_live_writers_temp_file_is_never_removed(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    writer = start_stalled_writer(path, SAVE_CHECKPOINT)
    try:
        live = temp_files(tmp_path)
        assert len(live) == 1
        tree().save(path)  # another process saves the same file meanwhile
        assert temp_files(tmp_path) == live
    finally:
        kill_9(writer)
    # a dead writer's file from another host (a shared folder) is not ours to judge
    other_tag = "0" * 8 if checkpoint_files._HOST_TAG != "0" * 8 else "1" * 8
    foreign = f".c.toml.{other_tag}-{writer.pid}-abcdef.tmp"
    (tmp_path / foreign).write_text("another host's write in progress")
    unrelated = ".c.toml.notes.tmp"  # not named by our writer
    (tmp_path / unrelated).write_text("a user's file")
    tree().save(path)
    assert temp_files(tmp_path) == sorted([foreign, unrelated])


@pytest.mark.skipif(os.name != "posix", reason="kill -9 and pid probes are POSIX")
def test_memory_store_save_removes_the_temp_file_of_a_killed_save(tmp_path: Path) -> None:
    path = tmp_path / "store.zip"
    save_store = """
        from promptimus.vector_stores.memory import InMemoryVectorStore
        InMemoryVectorStore(text_search=False).save(path)
    """
    kill_9(start_stalled_writer(path, save_store))
    assert len(temp_files(tmp_path)) == 1
    from promptimus.vector_stores.memory import InMemoryVectorStore

    InMemoryVectorStore(text_search=False).save(path)
    assert temp_files(tmp_path) == []
    assert InMemoryVectorStore.load(path) is not None


@pytest.mark.skipif(os.name != "posix", reason="kill -9 and pid probes are POSIX")
def test_training_history_save_removes_the_temp_file_of_a_killed_save(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    save_history = """
        from promptimus.optim.run_state import TrainState
        state = TrainState(Box(), {}, [], [], None, checkpoint_dir=path.parent)
        state.history.append({"step": 0})
        state.save(best_changed=False)
    """
    kill_9(start_stalled_writer(path, save_history))
    assert len(temp_files(tmp_path)) == 1
    from promptimus.optim.run_state import TrainState

    state = TrainState(Box(), {}, [], [], None, checkpoint_dir=tmp_path)  # type: ignore[arg-type]
    state.history.append({"step": 1})
    state.save(best_changed=False)
    assert temp_files(tmp_path) == []
    assert path.read_text() == '{"step": 1}\n'


# ------------------------------------------------------------------------------------- pickle


def test_a_module_tree_pickles_without_its_providers() -> None:
    root = tree()
    root.tools["search"].query = Parameter(["a", 1, 2.5, True])
    root.shared = root.tools["search"]  # a diamond: one module under two names
    root.unset = Parameter()
    root.with_llm(DummyLLm())
    clone = pickle.loads(pickle.dumps(root))
    assert clone.digest() == root.digest()
    assert clone.state_dict() == root.state_dict()
    assert clone.tools["search"] is clone.shared
    assert clone.tools["search"].query.path in ("root.tools.search.query", "root.shared.query")
    assert clone.text.path == "root.text"
    assert not clone.has_provider("llm")  # providers (clients, keys) never travel in a pickle
    assert root.has_provider("llm")
    assert not clone.unset.is_set
    clone.text.value = "changed"  # independent of the original
    assert root.text.value == "old"
    clone.tools["new"] = Box()
    assert clone.tools["new"].path == "root.tools.new"
    assert [name for name, _ in clone.named_modules()] == [
        name for name, _ in root.named_modules()
    ] + ["tools.new"]
