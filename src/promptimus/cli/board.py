"""`promptimus board PATH`: serve the board (runs recorded to PATH, training runs, stored
conversations, durable runs waiting for approval, checkpoint diffs) on a local web page."""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import sys
from pathlib import Path

from .command_error import CommandLineError

TOKEN_ENV = "PROMPTIMUS_BOARD_TOKEN"


def add_board_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        help="the SQLite file promptimus.board.record writes (may not exist yet)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8321, help="port (default 8321)")
    parser.add_argument(
        "--fits", metavar="DIR", help="show every fit whose checkpoint_dir is under DIR"
    )
    parser.add_argument(
        "--sessions",
        metavar="URL",
        help="a session store: a SQLite file, postgresql:// or redis://",
    )
    parser.add_argument("--dbos", metavar="URL", help="the DBOS system database of durable runs")
    parser.add_argument(
        "--checkpoints", metavar="DIR", help="compare the .toml checkpoints under DIR"
    )
    parser.add_argument(
        "--token",
        help=f"require this token (default ${TOKEN_ENV}; one is made up for a non-local --host)",
    )


def _folder(value: str | None, option: str) -> Path | None:
    if value is None:
        return None
    folder = Path(value)
    if not folder.is_dir():
        raise CommandLineError(f"{option} {value}: no such folder.")
    return folder


def _needs(module: str, option: str, extra: str) -> None:
    """One line saying what to install when `option` needs a library that is not there."""
    try:
        importlib.import_module(module)
    except ImportError:
        raise CommandLineError(
            f'{option} needs {module}, which is not installed: pip install "promptimus[{extra}]".'
        ) from None


def _sessions(value: str | None) -> str | None:
    """The session store's address, checked before serving: its library is installed, its
    SQLite file exists (a board never creates a store)."""
    if value is None:
        return None
    if value.startswith(("postgresql://", "postgres://")):
        _needs("psycopg", f"--sessions {value.split('://')[0]}://", "postgres")
    elif value.startswith(("redis://", "rediss://", "unix://")):
        _needs("redis", f"--sessions {value.split('://')[0]}://", "redis")
    elif not Path(value.removeprefix("sqlite:///")).is_file():
        raise CommandLineError(
            f"--sessions {value}: no such SQLite file; give the file a SQLiteSessionStore "
            "writes, or a postgresql:// or redis:// URL."
        )
    return value


def _dbos(value: str | None) -> str | None:
    """The DBOS system database, checked before serving: dbos is installed, and a SQLite path
    names a file that exists (joining a missing one would create an empty database)."""
    if value is None:
        return None
    _needs("dbos", "--dbos", "dbos")
    if "://" not in value and not Path(value).is_file():
        raise CommandLineError(
            f"--dbos {value}: no such file; give the DBOS system database your durable "
            "workers use (a SQLite file or a postgresql:// URL)."
        )
    if value.startswith("sqlite:///") and not Path(value.removeprefix("sqlite:///")).is_file():
        raise CommandLineError(f"--dbos {value}: no such SQLite file.")
    return value


def run_board(args: argparse.Namespace) -> int:
    try:
        import python_multipart  # noqa: F401  (the forms of Approve, Deny and Delete)
        import uvicorn

        from ..board.app import BoardConfig, build_app, is_local
    except ImportError:
        raise CommandLineError(
            "promptimus board needs Starlette, uvicorn and python-multipart: "
            'pip install "promptimus[board]".'
        ) from None
    if not 0 < args.port < 65536:
        raise CommandLineError(f"--port must be 1-65535, got {args.port}.")
    path = Path(args.path)
    if path.is_dir():
        raise CommandLineError(f"{path} is a folder; give the .sqlite file record(path) writes.")
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_local(args.host):
        token = secrets.token_urlsafe(24)  # a board reachable from elsewhere is never open
    config = BoardConfig(
        path=path,
        host=args.host,
        port=args.port,
        fits=_folder(args.fits, "--fits"),
        sessions=_sessions(args.sessions),
        dbos=_dbos(args.dbos),
        checkpoints=_folder(args.checkpoints, "--checkpoints"),
        token=token,
    )
    shown = f"[{args.host}]" if ":" in args.host else args.host
    address = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    print(f"promptimus board: {address}", file=sys.stderr, flush=True)
    uvicorn.run(build_app(config), host=args.host, port=args.port, log_level="warning")
    return 0
