"""Writing checkpoint text: exact, fast, no TOML library involved (see `format` for the layout).

`save()`/`describe()` always mark. `module_dict_to_toml_str` marks only when a string parameter
starts or ends with a newline, the one case the two reading rules read differently; otherwise its
text is the unmarked layout 0.1 wrote, and either way `module_dict_from_toml_str` reads it back
exactly. 0.1 reads our files too: it ignores the mark (a comment) and strips edge newlines, so it
loses only those, which its format cannot hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import CheckpointTooDeep, InvalidParameterValue
from .format import REFERENCE_SHAPE, marked, module_dict_parts
from .limits import MAX_MODULE_DEPTH
from .values import check_value

__all__ = ["checkpoint_text", "module_dict_to_toml_str", "render_module_dict", "top_value"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_SHORT_ESCAPES["\r"] = "\\r"


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or code == 0x7F


def _escape_char(ch: str) -> str:
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def _basic_string(text: str) -> str:
    out = [_escape_char(ch) if (_is_control(ch) or ch in '\\"') else ch for ch in text]
    return '"' + "".join(out) + '"'


def _multiline_string(text: str) -> str:
    # A newline right after the opening delimiter is dropped by TOML, so the value starts on the
    # next line whatever it begins with. CR is escaped because parsers may normalise CRLF.
    parts: list[str] = []
    quotes = 0  # raw quotes just emitted; a third would close the string
    for ch in text:
        if ch == '"':
            if quotes == 2:
                parts.append('\\"')
                quotes = 0
            else:
                parts.append('"')
                quotes += 1
            continue
        quotes = 0
        if ch == "\\" or ch == "\r" or (_is_control(ch) and ch not in "\t\n"):
            parts.append(_escape_char(ch))
        else:
            parts.append(ch)
    return '"""\n' + "".join(parts) + '\n"""'


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _basic_string(name)


def _inline_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    # int()/float() first: subclasses (numpy.float64, IntFlag, ...) may repr as non-TOML text
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
    if isinstance(value, str):
        return _basic_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_inline_value(item) for item in value) + "]"
    raise InvalidParameterValue(f"Cannot write a {type(value).__name__} to a TOML checkpoint.")


def top_value(value: Any) -> str:
    if isinstance(value, str):
        if REFERENCE_SHAPE.fullmatch(value):
            value = "$" + value
        return _multiline_string(value)
    return _inline_value(value)


def _edge_newline(value: str) -> bool:
    return value.startswith("\n") or value.endswith("\n")


def render_module_dict(
    data: Mapping[str, Any], path: Iterable[str] = (), where: str = ""
) -> tuple[str, bool]:
    """The unmarked checkpoint text of a module dict whose tables sit under `path`, and whether
    a string parameter in it starts or ends with a newline (so only the marked rule reads it).
    Errors name keys as if the dict sat at `where` (default: `path`)."""
    lines: list[str] = []
    edge = False

    prefix = list(path)
    shown = where.split(".") if where else prefix

    def emit(module: Mapping[str, Any], path: list[str]) -> None:
        nonlocal edge
        named = shown + path[len(prefix) :]
        if len(path) - len(prefix) > MAX_MODULE_DEPTH:  # a looping or runaway dict
            raise CheckpointTooDeep(
                f"{'.'.join(named[:3])}...: the module dict nests more than {MAX_MODULE_DEPTH} "
                "submodules deep (promptimus.core.MAX_MODULE_DEPTH); no module tree is that deep."
            )
        params, submodules = module_dict_parts(module, ".".join(named) or "root")
        for name, value in params.items():
            check_value(value, f"Checkpoint key {'.'.join([*named, name])!r}")
            if isinstance(value, str) and not edge:
                edge = _edge_newline(value)
            lines.append(f"{_key(name)} = {top_value(value)}")
            lines.append("")
        for name, sub in submodules.items():
            sub_path = [*path, name]
            lines.append("")
            lines.append("[" + ".".join(_key(part) for part in sub_path) + "]")
            emit(sub, sub_path)

    emit(data, prefix)
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return ("\n".join(lines) + "\n" if lines else ""), edge


def module_dict_to_toml_str(data: Mapping[str, Any]) -> str:
    """Render a module dict (`{"params": ..., "submodules": ...}`) as checkpoint TOML.

    The text carries the format mark only when a string parameter starts or ends with a newline;
    otherwise it is exactly what promptimus 0.1 wrote. `module_dict_from_toml_str` reads it back
    exactly either way.
    """
    body, edge = render_module_dict(data)
    return marked(body) if edge else body


def checkpoint_text(data: Mapping[str, Any]) -> str:
    """The text `save()` writes to a new file: always marked, so hand edits stay exact too."""
    return marked(render_module_dict(data)[0])
