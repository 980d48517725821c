"""The `serve` command line, shared by `python -m promptimus.mcp serve` and `promptimus mcp
serve`. Light to import: the `mcp` SDK loads only when the command runs."""

from __future__ import annotations

import argparse
import importlib.util
import socket
import sys
from pathlib import Path
from typing import Any, Literal

from ..errors import MCPError


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", help="path/to/file.py:object (a Module, tools, or a mapping)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP, not stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="8000", help="1 to 65535 (default 8000)")
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
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(path.stem, None)
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise MCPError(
            f"{path_text!r} has a syntax error{where}: {exc.msg}. Fix the file, then serve it."
        ) from None
    except Exception as exc:
        sys.modules.pop(path.stem, None)
        said = " ".join(str(exc).split()) or "no message"
        raise MCPError(
            f"Importing {path_text!r} failed: {type(exc).__name__}: {said}. Check that the file "
            "runs on its own (python FILE) with the packages it imports installed."
        ) from None
    if not hasattr(module, attr):
        raise MCPError(f"{path_text!r} defines no {attr!r}.")
    return getattr(module, attr)


def _port(text: object) -> int:
    """The ``--port`` given, checked: a whole number from 1 to 65535."""
    value = str(text).strip()
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise MCPError(f"--port must be a whole number from 1 to 65535, not {text!r}.")
    return int(value)


def _check_listen(host: str, port: int) -> None:
    """Refuse, before the server starts, an address it could not listen on (a port in use, a
    host that is not this machine's): the HTTP server would print a traceback first."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise MCPError(
            f"Cannot listen on {host}:{port} ({reason}). Pick a free --port, or a --host of "
            "this machine (127.0.0.1 for this machine only)."
        ) from None


def run_serve(args: argparse.Namespace) -> int:
    """Serve the target named on the command line until stopped. Raises `MCPError`."""
    port = _port(args.port)
    if args.http:
        _check_listen(args.host, port)
    target = load_object(args.target)
    from .serve import serve

    transport: Literal["stdio", "http"] = "http" if args.http else "stdio"
    serve(target, name=args.name, transport=transport, host=args.host, port=port)
    return 0
