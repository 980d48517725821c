"""Argument parsing and the one place errors turn into a message and an exit status.

Exit statuses, like diff(1): 0 success (or equal checkpoints), 1 checkpoints differ, 2 trouble
(a bad file, object, option or model, or a run that failed), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from .._version import __version__
from ..errors import PromptimusError
from .command_error import CommandLineError
from .hints import command_line_message
from .target import describe_failure

MODEL_HELP = (
    '"fake" (the built-in offline model: no key, no network) or a model string like '
    "openai:gpt-4o-mini, ollama:llama3.2 or an alias (resolved like promptimus.llms.resolve)"
)


def _module_options(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--model", metavar="MODEL", help=MODEL_HELP)
    parser.add_argument("--stream", action="store_true", help="print events as they arrive")
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fill the prompt's template variable {NAME} with VALUE (repeat for more)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="promptimus", description="Inspect promptimus checkpoints and run modules."
    )
    parser.add_argument("--version", action="version", version=f"promptimus {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = commands.add_parser("show", help="print a checkpoint's tree, parameters and digest")
    show.add_argument("checkpoint", metavar="CHECKPOINT.toml")
    show.add_argument("--full", action="store_true", help="do not fold long prompts")
    diff = commands.add_parser(
        "diff",
        help="compare two checkpoints (exit 0 when equal, 1 when they differ); with three, "
        "A MERGED B, say what the merge took from each parent",
    )
    diff.add_argument("a", metavar="A.toml")
    diff.add_argument("b", metavar="B.toml", nargs="?")
    diff.add_argument("c", metavar="C.toml", nargs="?")
    diff.add_argument(
        "--merges",
        action="store_true",
        help="A is a fit's checkpoint_dir: list its merges and what each took from each parent",
    )
    run = commands.add_parser("run", help="run a module once on INPUT and print the result")
    _module_options(run)
    run.add_argument("--json", action="store_true", help="print the run record as JSON")
    run.add_argument("input", metavar="INPUT", help='the request ("-" reads it from stdin)')
    chat = commands.add_parser("chat", help="talk to a module, one line per turn, with memory")
    _module_options(chat)
    mcp = commands.add_parser("mcp", help="MCP: serve a module or tools as an MCP server")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="MCP_COMMAND")
    from ..mcp.serve_command import add_serve_arguments

    add_serve_arguments(mcp_commands.add_parser("serve", help="serve over stdio or --http"))
    from .board import add_board_arguments

    add_board_arguments(
        commands.add_parser("board", help="a local web page of runs, training and approvals")
    )
    from .serve import add_serve_arguments

    add_serve_arguments(
        commands.add_parser("serve", help="serve a module over HTTP (OpenAI-compatible)")
    )
    return parser


def _check_streams(args: argparse.Namespace) -> None:
    """Refuse, before anything is read or run, a command whose stdin or stdout was closed
    (`<&-`, `>&-`): Python then has no stream for it, and the output of a run that worked
    could not be shown."""
    if args.command in ("show", "diff", "run", "chat") and sys.stdout is None:
        raise CommandLineError(
            f"stdout is closed, and `promptimus {args.command}` writes its result there; run "
            "it with stdout open (>/dev/null discards the output)."
        )
    reads_stdin = args.command == "chat" or (args.command == "run" and args.input == "-")
    if reads_stdin and sys.stdin is None:
        what = "the turns" if args.command == "chat" else "the request (INPUT is -)"
        raise CommandLineError(
            f"stdin is closed, and `promptimus {args.command}` reads {what} from it; pipe "
            "them in or run it with stdin open."
        )


def _diff(args: argparse.Namespace) -> int:
    if args.merges:
        if args.b is not None:
            raise CommandLineError(
                "diff --merges takes one training run folder (a fit's checkpoint_dir), "
                f"got {args.a}, {args.b}{', ' + args.c if args.c else ''}."
            )
        from .merge_diff import diff_run_merges

        return diff_run_merges(args.a, sys.stdout)
    if args.b is None:
        raise CommandLineError(
            "diff takes two checkpoints (A.toml B.toml), three (PARENT_A.toml MERGED.toml "
            "PARENT_B.toml), or --merges RUN_DIR."
        )
    if args.c is not None:
        from .merge_diff import diff_merged

        return diff_merged(args.a, args.b, args.c, sys.stdout)
    from .diff import diff

    return diff(args.a, args.b, sys.stdout)


def _dispatch(args: argparse.Namespace) -> int:
    _check_streams(args)
    if args.command == "show":
        from .show import show

        return show(args.checkpoint, args.full, sys.stdout)
    if args.command == "diff":
        return _diff(args)
    if args.command == "board":
        from .board import run_board

        return run_board(args)
    if args.command == "mcp":
        from ..mcp.serve_command import run_serve

        return run_serve(args)
    if args.command == "serve":
        from .serve import run_serve as serve

        return serve(args)
    from .prepared_module import prepare
    from .template_variables import parse_variables

    variables = parse_variables(args.var)
    module = prepare(args.target, args.load, args.model, args.partial)
    if args.command == "run":
        from .run import run_once

        request = sys.stdin.read() if args.input == "-" else args.input
        asyncio.run(run_once(module, request, args.stream, args.json, variables))
        return 0
    from .chat import chat

    return asyncio.run(chat(module, args.stream, sys.stdin, sys.stdout, sys.stderr, variables))


def one_line(text: str) -> str:
    """A multi-line message (a checkpoint mismatch lists keys as `- ...` lines) as one line:
    lines joined with "; ", or a space after a line that ends in ":"."""
    lines = [line.strip().removeprefix("- ") for line in text.splitlines() if line.strip()]
    joined = lines[0] if lines else ""
    for line in lines[1:]:
        joined += (" " if joined.endswith(":") else "; ") + line
    return joined


def _report(text: str) -> None:
    print(one_line(text), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stderr is None:  # started with stderr closed (2>&-): messages go nowhere, not to stdout
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except PromptimusError as exc:
        _report(f"promptimus: error: {command_line_message(exc)}")
    except KeyboardInterrupt:
        _report("promptimus: interrupted")
        return 130
    except Exception as exc:  # the user's module failed: say how, without a traceback
        _report(f"promptimus: error: the run failed: {describe_failure(exc)}")
    return 2
