"""Every `PromptimusError` survives pickling with its message and attributes, whatever its
constructor takes: a durable run stores the error that stopped it (DBOS pickles it) and a Ray
worker sends errors back to the driver."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest

import promptimus.errors as errors_module
from promptimus.errors import GuardrailTripped, PromptimusError, StreamInterrupted


def every_error() -> list[type[PromptimusError]]:
    found = [
        value
        for value in vars(errors_module).values()
        if isinstance(value, type) and issubclass(value, PromptimusError)
    ]
    return sorted(set(found), key=lambda cls: cls.__name__)


def made(cls: type[PromptimusError]) -> PromptimusError:
    """An instance, its required arguments filled with text."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except ValueError:  # the message alone: Exception's own constructor
        parameters = []
    for parameter in parameters:
        if parameter.default is not inspect.Parameter.empty:
            continue
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            keywords[parameter.name] = f"{parameter.name} value"
        elif parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            positional.append(3 if parameter.name == "pos" else f"{parameter.name} value")
    if not positional and not keywords:
        positional.append("what went wrong")
    return cls(*positional, **keywords)


@pytest.mark.parametrize("cls", every_error(), ids=lambda cls: cls.__name__)
def test_an_error_pickles_whole(cls: type[PromptimusError]) -> None:
    error = made(cls)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert vars(back) == vars(error)


def test_errors_with_keyword_arguments_keep_them() -> None:
    tripped = GuardrailTripped("blocked", guard="no_cards", kind="input", reason="a card number")
    back = pickle.loads(pickle.dumps(tripped))
    assert (back.guard, back.kind, back.reason, str(back)) == (
        "no_cards",
        "input",
        "a card number",
        "blocked",
    )
    assert len(every_error()) > 50  # the whole tree is checked, not a handful
    cut = pickle.loads(pickle.dumps(made(StreamInterrupted)))
    assert isinstance(cut, StreamInterrupted)
