"""`promptimus serve FILE.py:OBJECT`: the module behind HTTP (OpenAI-compatible chat
completions, AG-UI, A2A and a chat page), for many callers, until Ctrl-C or SIGTERM (running
requests then get a grace period to finish)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from types import FrameType
from typing import Any

from ..errors import PromptimusError
from .command_error import CommandLineError

_LOCAL = {"127.0.0.1", "localhost", "::1"}


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="FILE.py:OBJECT",
        help="a Module, or a class or zero-argument function that returns one",
    )
    parser.add_argument("--load", metavar="CKPT", help="apply this checkpoint first")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="with --load: apply the keys that match the module, skip unknown and missing ones",
    )
    parser.add_argument("--model", metavar="MODEL", help='the model to use ("fake": offline)')
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--store",
        metavar="URL",
        help="keep conversations in this session store: a SQLite file, postgresql:// or "
        "redis:// (default: in this process)",
    )
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="T",
        help="accept this token (repeat for more callers; each is its own user)",
    )
    parser.add_argument(
        "--tokens-file", metavar="F", help="accept the tokens in F, one `TOKEN USER` per line"
    )
    parser.add_argument(
        "--max-concurrent-runs",
        type=int,
        default=64,
        metavar="N",
        help="runs at once; more get 503 with Retry-After (default 64)",
    )
    parser.add_argument(
        "--max-conversations",
        type=int,
        default=None,
        metavar="N",
        help="without --store: conversations kept in memory, the least recently used forgotten "
        "first (default 10,000)",
    )
    parser.add_argument(
        "--board-url",
        metavar="URL",
        help="the board recording this server's runs: the chat page links each run to it",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long running requests may take to finish (default 30)",
    )


def is_local(host: str) -> bool:
    return host in _LOCAL or host.startswith("127.")


def _tokens(args: argparse.Namespace) -> dict[str, str] | None:
    from ..serve import read_tokens_file

    tokens: dict[str, str] = {}
    for number, token in enumerate(args.token, 1):
        tokens[token] = f"user{number}" if len(args.token) > 1 else "user"
    if args.tokens_file is not None:
        tokens.update(read_tokens_file(args.tokens_file))
    return tokens or None


def _open_store(address: str) -> Any:
    if address.startswith(("postgresql://", "postgres://")):
        from ..sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(address)
    if address.startswith(("redis://", "rediss://", "unix://")):
        from ..sessions.redis import RedisSessionStore

        return RedisSessionStore(address)
    from ..sessions.sqlite import SQLiteSessionStore

    return SQLiteSessionStore(address.removeprefix("sqlite:///"))


def run_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..serve import app
    except ImportError:
        raise CommandLineError(
            'promptimus serve needs Starlette and uvicorn: pip install "promptimus[serve]".'
        ) from None
    if not 0 < args.port < 65536:
        raise CommandLineError(f"--port must be 1-65535, got {args.port}.")
    if not args.grace >= 0 or args.grace == float("inf"):
        raise CommandLineError(
            f"--grace must be a finite number of seconds >= 0, got {args.grace}."
        )
    tokens = _tokens(args)
    if tokens is None and not is_local(args.host):
        raise CommandLineError(
            f"--host {args.host} would let anyone on the network run the module: give callers "
            "tokens (--token T, or --tokens-file F), or serve on 127.0.0.1."
        )
    from .prepared_module import prepare

    module = prepare(args.target, args.load, args.model, args.partial)
    store = None if args.store is None else _open_store(args.store)
    hosts = None
    if tokens is None:  # open to this machine only: refuse pages of other sites (DNS rebinding)
        names = _LOCAL | {args.host}
        hosts = {f"[{n}]:{args.port}" if ":" in n else f"{n}:{args.port}" for n in names}
    limits = {} if args.max_conversations is None else {"max_conversations": args.max_conversations}
    try:
        asgi = app(
            module,
            store=store,
            tokens=tokens,
            max_concurrent_runs=args.max_concurrent_runs,
            allowed_hosts=hosts,
            board_url=args.board_url,
            **limits,
        )
    except PromptimusError as exc:
        raise CommandLineError(str(exc)) from None
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"promptimus serve: http://{shown}:{args.port}/ (chat page; OpenAI-compatible at /v1, "
        "AG-UI at /ag-ui, A2A card at /.well-known/agent-card.json)",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        asgi,
        host=args.host,
        port=args.port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=args.grace,
        # longer than clients' own idle timeout (httpx: 5 s), so a busy client never reuses a
        # connection the server is closing at that moment
        timeout_keep_alive=75,
    )

    class Server(uvicorn.Server):
        """uvicorn's server, which on SIGTERM or Ctrl-C stops taking requests and lets the
        running ones finish, without killing the process by the signal afterwards (so the
        store is closed and the exit status is 0)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True  # a second Ctrl-C: stop waiting
            self.should_exit = True

    asyncio.run(_serve(Server(config), store))
    return 0


async def _serve(server: Any, store: Any) -> None:
    """Serve until SIGTERM or Ctrl-C (uvicorn then stops taking requests and lets running
    ones finish), then close the store on the loop that used it."""
    try:
        await server.serve()
    finally:
        if store is not None:
            with contextlib.suppress(Exception):
                await store.aclose()
