"""`python -m promptimus.mcp serve path/to/file.py:object [--http] [--host H] [--port N]`."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..errors import MCPError
from .serve import serve


def load_object(spec: str) -> Any:
    """`path/to/file.py:name` -> the object named `name` in that file."""
    path_text, _, attr = spec.rpartition(":")
    if not path_text or not attr:
        raise MCPError(f"Give the target as path/to/file.py:object, not {spec!r}.")
    path = Path(path_text)
    if not path.is_file():
        raise MCPError(f"No file {path_text!r} (from the target {spec!r}).")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise MCPError(f"Cannot load {path_text!r} as Python.")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module
    module_spec.loader.exec_module(module)
    if not hasattr(module, attr):
        raise MCPError(f"{path_text!r} defines no {attr!r}.")
    return getattr(module, attr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m promptimus.mcp")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve a module or tools over MCP")
    serve_cmd.add_argument("target", help="path/to/file.py:object")
    serve_cmd.add_argument("--http", action="store_true", help="streamable HTTP, not stdio")
    serve_cmd.add_argument("--host", default="127.0.0.1")
    serve_cmd.add_argument("--port", type=int, default=8000)
    serve_cmd.add_argument("--name", default=None, help="the server's name")
    args = parser.parse_args(argv)
    try:
        target = load_object(args.target)
    except MCPError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    serve(
        target,
        name=args.name,
        transport="http" if args.http else "stdio",
        host=args.host,
        port=args.port,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
