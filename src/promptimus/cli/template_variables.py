"""`--var NAME=VALUE`: the values that fill a prompt's template variables (`{company}`) on the
command line, passed to the run as the keyword arguments Python code would pass."""

from __future__ import annotations

from collections.abc import Iterable

from .command_error import CommandLineError

# keyword arguments of `agent.run(...)` that are not template variables
_RESERVED = frozenset({"request", "deps", "resume", "approvals"})


def parse_variables(pairs: Iterable[str]) -> dict[str, str]:
    """`["company=Acme", "tone=dry"]` as `{"company": "Acme", "tone": "dry"}`; the value is
    everything after the first "=" (it may hold "=" itself, or be empty)."""
    variables: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name.isidentifier():
            raise CommandLineError(
                f"--var {pair!r}: give NAME=VALUE, NAME being the template variable's name "
                "(as in {company}), e.g. --var company=Acme."
            )
        if name in _RESERVED:
            raise CommandLineError(
                f"--var {name}=...: {name!r} is an argument of the run, not a template "
                "variable; rename the variable in the prompt."
            )
        if name in variables:
            raise CommandLineError(f"--var {name} is given twice; give each variable once.")
        variables[name] = value
    return variables
