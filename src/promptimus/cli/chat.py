"""`promptimus chat file.py:object`: a conversation with memory, one line per turn.

Ctrl-D or `/exit` ends it, `/reset` forgets the conversation, `/save PATH` saves the checkpoint.
The conversation lives in one `Session`, so `/reset` is a fresh session.
"""

from __future__ import annotations

from typing import TextIO

from ..core.module import Module
from ..core.session import Session
from ..errors import PromptimusError, ProviderConfigError, ProviderNotSet
from .hints import command_line_message
from .run import run_once
from .style import Style

HELP = (
    "Type a message. /reset forgets the conversation, /save PATH saves the checkpoint, /exit ends."
)


def _read_turn(stdin: TextIO, stdout: TextIO, interactive: bool, style: Style) -> str | None:
    if interactive:  # input() gives line editing and history on a terminal
        try:
            return input(style("you> ", "bold"))
        except EOFError:
            stdout.write("\n")
            return None
    line = stdin.readline()
    return line.rstrip("\n") if line else None


async def chat(
    module: Module,
    stream: bool,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    variables: dict[str, str] | None = None,
) -> int:
    """Turns from `stdin` until its end or /exit; `variables` fill the prompt's template
    variables at every turn."""
    style = Style(stdout)
    interactive = stdin.isatty()
    if interactive:
        stdout.write(style(HELP, "dim") + "\n")
    session = Session("chat")
    while True:
        text = _read_turn(stdin, stdout, interactive, style)
        if text is None:  # Ctrl-D / end of input
            return 0
        command, _, argument = text.strip().partition(" ")
        if command == "/exit":
            return 0
        if command == "/reset":
            session = Session("chat")
            stdout.write(style("(memory cleared)", "dim") + "\n")
            continue
        if command == "/save":
            if not argument.strip():
                stderr.write("/save needs a path, e.g. /save agent.toml\n")
                continue
            try:
                module.save(argument.strip())
            except PromptimusError as exc:
                stderr.write(f"cannot save: {exc}\n")
                continue
            stdout.write(
                style(f"(saved {argument.strip()}, digest {module.digest()})", "dim") + "\n"
            )
            continue
        if not text.strip():
            continue
        if command.startswith("/") and "/" not in command[1:]:
            stderr.write(f"unknown command {command}; {HELP}\n")
            continue
        try:
            with session:
                await run_once(module, text, stream, as_json=False, variables=variables)
        except (ProviderConfigError, ProviderNotSet):
            raise  # a missing key, provider or model will not fix itself on the next turn
        except PromptimusError as exc:
            stderr.write(f"error: {command_line_message(exc)}\n")
        stdout.flush()
