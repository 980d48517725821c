"""`path/to/file.py:object` → a Module: import the file, take the object, call it if it is a
zero-argument factory or class."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from ..core.module import Module
from .command_error import CommandLineError


def describe_failure(exc: BaseException) -> str:
    """`Type: message` plus the innermost frame of the user's code, without a traceback dump."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def import_file(path: Path) -> Any:
    name = f"promptimus_cli_target_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CommandLineError(f"{path} cannot be imported; give a Python file ending in .py.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise CommandLineError(f"Importing {path} failed: {describe_failure(exc)}") from None
    return module


def load_target(spec: str) -> Module:
    """The Module that `spec` (`file.py:object`) names."""
    file, sep, attribute = spec.rpartition(":")
    if not sep or not file or not attribute:
        raise CommandLineError(
            f"{spec!r} does not name an object; write path/to/file.py:object, e.g. agent.py:agent."
        )
    path = Path(file)
    if path.is_dir():
        raise CommandLineError(
            f"{file} is a folder, not a Python file; write path/to/file.py:object, e.g. "
            "agent.py:agent."
        )
    if not path.is_file():
        raise CommandLineError(f"{file}: no such file. Check the path before the ':'.")
    namespace = import_file(path)
    try:
        obj = getattr(namespace, attribute)
    except AttributeError:
        raise CommandLineError(
            f"{file} defines no {attribute!r}; name a Module instance, or a class or function "
            "that returns one when called without arguments."
        ) from None
    if not isinstance(obj, Module) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise CommandLineError(
                f"Calling {attribute}() from {file} failed: {describe_failure(exc)}"
            ) from None
    if not isinstance(obj, Module):
        raise CommandLineError(
            f"{file}:{attribute} is not a promptimus Module (it is a {type(obj).__name__}); name a "
            "Module instance, or a class or function that returns one when called without "
            "arguments."
        )
    return obj
