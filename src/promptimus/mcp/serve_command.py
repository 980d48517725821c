"""The `serve` command line, shared by `python -m promptimus.mcp serve` and `promptimus mcp
serve`. Light to import: the `mcp` SDK loads only when the command runs."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any, Literal

from ..errors import MCPError


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="path/to/file.py:object (a Module, tools, or a mapping)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--name", default=None, help="the server's name")


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


def run_serve(args: argparse.Namespace) -> int:
    """Serve the target named on the command line until stopped. Raises `MCPError`."""
    target = load_object(args.target)
    from .serve import serve

    transport: Literal["stdio", "http"] = "http" if args.http else "stdio"
    serve(target, name=args.name, transport=transport, host=args.host, port=args.port)
    return 0
