"""Targets for `python -m promptimus.mcp serve tests/support/mcp_servers/served_tools.py:<name>`."""

from __future__ import annotations

from promptimus import Module, Parameter
from promptimus.dto import ImageContent, Message, MessageRole
from promptimus.tools.tool import Tool

PICTURE = ImageContent.from_buffer(b"\x89PNG\r\n\x1a\n not a real picture", "image/png")


@Tool.decorate
def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@Tool.decorate
def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"broken: {reason}")


class Greeter(Module):
    """Greets someone with the configured greeting."""

    def __init__(self) -> None:
        super().__init__()
        self.greeting = Parameter("Hello")

    async def forward(self, name: str) -> str:
        """Greet someone.

        Args:
            name: who to greet.
        """
        return f"{self.greeting.value}, {name}!"


@Tool.decorate
def picture() -> Message:
    """A caption and a picture."""
    return Message(role=MessageRole.TOOL, content="a picture", images=[PICTURE])


@Tool.decorate
def noisy(text: str) -> str:
    """Prints to stdout and reads stdin, as careless code does, then answers."""
    import sys

    print(f"stray output {text}")
    sys.stdout.flush()
    return f"heard {text}; stdin gave {sys.stdin.read()!r}"


tools = [add, fail]
pictures = [picture]
noisy_tools = [add, noisy]
greeter = Greeter()
named = {"hello": Greeter()}
