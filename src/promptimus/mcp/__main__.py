"""`python -m promptimus.mcp serve path/to/file.py:object [--http] [--host H] [--port N]`."""

from __future__ import annotations

import argparse
import sys

from ..errors import MCPError
from .serve_command import add_serve_arguments, run_serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m promptimus.mcp")
    commands = parser.add_subparsers(dest="command", required=True)
    add_serve_arguments(commands.add_parser("serve", help="serve a module or tools over MCP"))
    args = parser.parse_args(argv)
    try:
        return run_serve(args)
    except MCPError as exc:
        print("promptimus: error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
