"""`python -m promptimus.mcp serve` and `promptimus mcp serve` end a bad start with one
`promptimus: error:` line and exit code 2, never a traceback: a target that fails to import or
has a syntax error, a port out of range or not a number, an address already in use.

Each command runs in a child process, as a user runs it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from locations import MCP_SERVERS, REPO

TARGETS = MCP_SERVERS / "served_tools.py"
BOUND = 60.0
CLI = "import sys; from promptimus.cli.main import main; sys.exit(main(sys.argv[1:]))"
COMMANDS = {
    "python -m promptimus.mcp": [sys.executable, "-m", "promptimus.mcp", "serve"],
    "promptimus": [sys.executable, "-c", CLI, "mcp", "serve"],
}


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def one_error_line(command: list[str], *args: str) -> str:
    result = subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=BOUND, cwd=REPO
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("promptimus: error: "), result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS)
def test_a_target_that_fails_to_import(command: list[str], tmp_path: Path) -> None:
    target = tmp_path / "needs_a_package.py"
    target.write_text("import no_such_package_here\ntools = []\n")
    line = one_error_line(command, f"{target}:tools")
    assert "ModuleNotFoundError" in line and "no_such_package_here" in line


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS)
def test_a_target_with_a_syntax_error(command: list[str], tmp_path: Path) -> None:
    target = tmp_path / "broken.py"
    target.write_text("tools = [\n\ndef oops(:\n")
    line = one_error_line(command, f"{target}:tools")
    assert "syntax error at line" in line


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS)
@pytest.mark.parametrize("port", ["99999", "0", "-1", "abc"])
def test_a_bad_port(command: list[str], port: str) -> None:
    line = one_error_line(command, f"{TARGETS}:tools", "--http", f"--port={port}")
    assert "--port must be a whole number from 1 to 65535" in line


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS)
def test_a_port_in_use(command: list[str], taken_port: int) -> None:
    line = one_error_line(command, f"{TARGETS}:tools", "--http", "--port", str(taken_port))
    assert f"Cannot listen on 127.0.0.1:{taken_port}" in line
