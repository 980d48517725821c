"""From a Python signature to a JSON schema the model sees, and a pydantic model that validates
what the model sends back.

One pydantic model is built per tool, once: its `model_json_schema()` (cleaned of pydantic's
auto-generated titles) is the tool's `parameters`, and the same model validates the arguments, so
what the schema promises is exactly what validation accepts (lax mode: `"3"` for an int is fine).

Rules:
- a parameter annotated with `RunContext` / `RunContext[...]` is injected by the agent and hidden;
- `*args` and `**kwargs` are never part of the schema; unknown arguments are refused;
- a default makes an argument optional (and appears as `"default"`);
- per-argument descriptions come from `Annotated[T, "desc"]`, `Annotated[T, Field(description=...)]`
  or the docstring (Google `Args:`, NumPy `Parameters` + dashes, Sphinx `:param x:`);
- nested pydantic models and enums stay in a top-level `"$defs"` referenced with `"$ref"`
  (accepted by OpenAI, and the only form that can describe recursive models).
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import PydanticJsonSchemaWarning

from ..errors import ToolArgumentsError, ToolError
from .finite_numbers import holds_non_finite
from .run_context import RunContext

__all__ = [
    "ArgSpec",
    "FunctionSchema",
    "ParsedDocstring",
    "SchemaChecked",
    "build_schema",
    "clean_schema",
    "is_context_annotation",
    "parse_docstring",
]


# ---------------------------------------------------------------------------------- docstrings


@dataclass(frozen=True, slots=True)
class ParsedDocstring:
    summary: str
    params: dict[str, str]


_GOOGLE_HEADER = re.compile(
    r"^(args|arguments|parameters|params|keyword args|keyword arguments|kwargs|other parameters|"
    r"returns?|yields?|raises?|examples?|notes?|attributes|see also|warnings?|todo|references)"
    r"\s*:\s*$",
    re.IGNORECASE,
)
_GOOGLE_ARGS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "kwargs",
    "other parameters",
}
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ARGS = {"parameters", "other parameters", "keyword arguments", "arguments", "args"}
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::.*)?$")
_SPHINX_FIELD = re.compile(
    r"^:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|except|yields?)\b"
)
_SPHINX_PARAM = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}([A-Za-z_]\w*)\s*:(.*)$"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_numpy_header(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and _NUMPY_RULE.match(lines[i + 1]) is not None
        and not _NUMPY_RULE.match(lines[i])
    )


def _section_start(lines: list[str], i: int) -> bool:
    stripped = lines[i].strip()
    return bool(
        _GOOGLE_HEADER.match(stripped)
        or _is_numpy_header(lines, i)
        or _SPHINX_FIELD.match(stripped)
    )


def _join(parts: list[str]) -> str:
    return " ".join(" ".join(parts).split())


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its summary (everything before the first section) and a mapping of
    parameter name -> description from a Google, NumPy or Sphinx parameter section."""
    if not doc:
        return ParsedDocstring("", {})
    lines = inspect.cleandoc(doc).splitlines()
    first = next((i for i in range(len(lines)) if _section_start(lines, i)), len(lines))
    summary = "\n".join(lines[:first]).strip()
    params: dict[str, str] = {}
    i = first
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        header = _GOOGLE_HEADER.match(stripped)
        if header and header.group(1).lower() in _GOOGLE_ARGS:
            i = _google_section(lines, i + 1, _indent(line), params)
            continue
        if _is_numpy_header(lines, i) and stripped.lower() in _NUMPY_ARGS:
            i = _numpy_section(lines, i + 2, _indent(line), params)
            continue
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx:
            parts = [sphinx.group(2)]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(":"):
                if _indent(lines[i]) <= _indent(line) and _section_start(lines, i):
                    break
                parts.append(lines[i])
                i += 1
            params.setdefault(sphinx.group(1), _join(parts))
            continue
        i += 1
    return ParsedDocstring(summary, params)


def _google_section(lines: list[str], i: int, header_indent: int, out: dict[str, str]) -> int:
    entry_indent: int | None = None
    name: str | None = None
    parts: list[str] = []

    def flush() -> None:
        if name is not None:
            out.setdefault(name.lstrip("*"), _join(parts))

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break
        if entry_indent is None:
            entry_indent = indent
        match = _GOOGLE_ENTRY.match(line.strip()) if indent == entry_indent else None
        if match:
            flush()
            name, parts = match.group(1), [match.group(2)]
        elif name is not None:
            parts.append(line)
        i += 1
    flush()
    return i


def _numpy_section(lines: list[str], i: int, header_indent: int, out: dict[str, str]) -> int:
    names: list[str] = []
    parts: list[str] = []

    def flush() -> None:
        for n in names:
            out.setdefault(n.lstrip("*"), _join(parts))

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _is_numpy_header(lines, i) or (
            _indent(line) <= header_indent and _SPHINX_FIELD.match(line.strip())
        ):
            break
        match = _NUMPY_ENTRY.match(line.strip()) if _indent(line) <= header_indent else None
        if match:
            flush()
            names = [n.strip() for n in match.group(1).split(",")]
            parts = []
        elif names:
            parts.append(line)
        i += 1
    flush()
    return i


# ---------------------------------------------------------------------------------- annotations


def _strip_annotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = annotation.__origin__
    return annotation


def is_context_annotation(annotation: Any) -> bool:
    """True for `RunContext`, `RunContext[X]`, `Annotated[RunContext, ...]` and their optionals."""
    annotation = _strip_annotated(annotation)
    if annotation is RunContext or typing.get_origin(annotation) is RunContext:
        return True
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return any(
            is_context_annotation(arg) for arg in typing.get_args(annotation) if arg is not None
        )
    return False


def _split_annotated(annotation: Any) -> tuple[Any, list[Any], str | None]:
    """(annotation without string metadata, remaining metadata, description from a str item)."""
    if typing.get_origin(annotation) is not Annotated:
        return annotation, [], None
    base, *metadata = typing.get_args(annotation)
    description = next((m for m in metadata if isinstance(m, str)), None)
    return base, [m for m in metadata if not isinstance(m, str)], description


# ---------------------------------------------------------------------------------- schema


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One argument the model fills in: its Python parameter name, the pydantic field that holds
    it (fields are `p_<name>` with the parameter name as alias, so any name is safe), and whether
    the function takes it positionally only."""

    name: str
    field: str
    positional_only: bool
    always_pass: bool = False  # the Python default is a pydantic `Field(...)`, not a value


class InvalidToolArguments(ToolArgumentsError, ValidationError):
    """Arguments that fail the tool's schema: a `ToolArgumentsError` whose text is written for
    the model, and also the pydantic `ValidationError` (same `.errors()`) that the original
    promptimus raised, so `except ValidationError:` written for it still catches this."""

    _message: str

    @classmethod
    def wrap(cls, exc: ValidationError, message: str) -> ToolArgumentsError:
        try:
            error = cls.from_exception_data(exc.title, exc.errors(include_url=False))  # type: ignore[arg-type]
        except (TypeError, ValueError, KeyError):  # an error pydantic cannot rebuild from data
            return ToolArgumentsError(message)
        error._message = message
        return error

    def __str__(self) -> str:
        return self._message


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a tool needs from its function's signature, computed once."""

    summary: str
    parameters: dict[str, Any]
    model: type[BaseModel]
    args: tuple[ArgSpec, ...]
    context_params: tuple[str, ...]

    def __reduce__(self) -> tuple[Any, ...]:
        # The argument model is built at run time, so pickle cannot find it by name: it travels
        # as its fields and is rebuilt on unpickling (a Tool inside a pickled module tree).
        fields = {name: (info.annotation, info) for name, info in self.model.model_fields.items()}
        recipe = (self.model.__name__, dict(self.model.model_config), fields)
        model: Any = self.model if _importable(self.model) else recipe
        return (
            _rebuild_schema,
            (self.summary, self.parameters, model, self.args, self.context_params),
        )

    def validate(self, arguments: str | dict[str, Any] | None, tool: str) -> dict[str, Any]:
        """Validate model-sent arguments (JSON text or dict); returns `{field: value}` of the
        arguments that were given. Raises `ToolArgumentsError` with a model-readable message."""
        try:
            if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
                instance = self.model.model_validate({})
            elif isinstance(arguments, str):
                instance = self.model.model_validate_json(arguments)
            else:
                instance = self.model.model_validate(arguments)
        except ValidationError as exc:
            raise InvalidToolArguments.wrap(exc, _explain(exc, tool)) from None
        given = instance.model_fields_set
        values = {
            spec.name: getattr(instance, spec.field)
            for spec in self.args
            if spec.field in given or spec.positional_only or spec.always_pass
        }
        for name, value in values.items():
            if holds_non_finite(value):
                raise ToolArgumentsError(
                    f"Invalid arguments for tool {tool!r}: {name}: NaN and Infinity are not "
                    "JSON numbers. Send finite numbers."
                )
        return values

    def split(self, values: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional-only values in order, then the rest as keywords."""
        if not any(spec.positional_only for spec in self.args):
            return [], values
        values = dict(values)
        positional = [values.pop(s.name) for s in self.args if s.positional_only]
        return positional, values


class SchemaChecked:
    """Mixin for the tool kinds whose arguments a `FunctionSchema` describes (function, module
    and composite tools): the schema the model sees and the check of its arguments."""

    _schema: FunctionSchema
    _name: str

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (shared: do not mutate)."""
        return self._schema.parameters

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """The model's arguments (JSON text or dict) checked against the schema, by name; a
        `ToolArgumentsError` written for the model if they do not fit. Runs nothing."""
        return self._schema.validate(arguments, self._name)


def _importable(cls: type) -> bool:
    owner: Any = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        owner = getattr(owner, part, None)
    return owner is cls


def _rebuild_schema(
    summary: str,
    parameters: dict[str, Any],
    model: Any,
    args: tuple[ArgSpec, ...],
    context_params: tuple[str, ...],
) -> FunctionSchema:
    if not isinstance(model, type):
        name, config, fields = model
        model = create_model(name, __config__=config, **fields)
    return FunctionSchema(summary, parameters, model, args, context_params)


def _explain(exc: ValidationError, tool: str) -> str:
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        kind = error["type"]
        if kind == "json_invalid":
            detail = error.get("ctx", {}).get("error", "invalid JSON")
            return (
                f"The arguments for tool {tool!r} are not valid JSON ({detail}). "
                "Send a single JSON object."
            )
        loc = ".".join(str(part) for part in error["loc"])
        if kind in ("model_type", "model_attributes_type", "dict_type") and not loc:
            return f"The arguments for tool {tool!r} must be a JSON object, not {_short(error)}."
        if kind == "missing":
            problems.append(f"{loc}: missing required argument")
        elif kind == "extra_forbidden":
            problems.append(f"{loc}: unexpected argument")
        else:
            problems.append(f"{loc}: {error['msg']} (got {_short(error)})")
    return f"Invalid arguments for tool {tool!r}: " + "; ".join(problems) + "."


def _short(error: Any) -> str:
    text = repr(error.get("input"))
    return text if len(text) <= 60 else text[:57] + "..."


_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not", "contains")


def clean_schema(node: Any) -> Any:
    """Drop pydantic's auto `title` keys everywhere a schema (not a property name) is expected."""
    if not isinstance(node, dict):
        return node
    out = {key: value for key, value in node.items() if key != "title"}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: clean_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("$defs"), dict):
        out["$defs"] = {k: clean_schema(v) for k, v in out["$defs"].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [clean_schema(item) for item in out[key]]
    for key in _SCHEMA_ONES:
        if isinstance(out.get(key), dict):
            out[key] = clean_schema(out[key])
    return out


def _ordered(schema: dict[str, Any]) -> dict[str, Any]:
    first = ("type", "properties", "required", "additionalProperties", "$defs")
    out = {key: schema[key] for key in first if key in schema}
    out.setdefault("properties", {})
    out.update({k: v for k, v in schema.items() if k not in out})
    return out


def _model_name(tool: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^0-9a-zA-Z]+", tool) if part) or "Tool"


def build_schema(
    tool: str,
    parameters: Sequence[inspect.Parameter],
    docstring: str | None = None,
) -> FunctionSchema:
    """Build the schema for a tool from signature parameters (annotations already evaluated)."""
    doc = parse_docstring(docstring)
    fields: dict[str, Any] = {}
    specs: list[ArgSpec] = []
    context: list[str] = []
    for param in parameters:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if is_context_annotation(Any if param.annotation is param.empty else param.annotation):
            context.append(param.name)
            continue
        spec, field = _argument(param, doc.params.get(param.name))
        fields[spec.field] = field
        specs.append(spec)
    model, raw = _argument_model(tool, fields)
    return FunctionSchema(
        summary=doc.summary,
        parameters=_ordered(clean_schema(raw)),
        model=model,
        args=tuple(specs),
        context_params=tuple(context),
    )


def _argument(param: inspect.Parameter, documented: str | None) -> tuple[ArgSpec, Any]:
    """The argument a parameter stands for, and its pydantic field `(type, FieldInfo)`; its
    description from the annotation or the default's field info, else the docstring's."""
    annotation = Any if param.annotation is param.empty else param.annotation
    base, metadata, description = _split_annotated(annotation)
    # `def f(x: int = Field(3, description=...))`: the default is pydantic field info
    default_info = param.default if isinstance(param.default, FieldInfo) else None
    has_description = any(
        isinstance(m, FieldInfo) and m.description is not None for m in (*metadata, default_info)
    )
    if description is None and not has_description:
        description = documented
    field_type = Annotated[(base, *metadata)] if metadata else base
    extra: dict[str, Any] = {"description": description} if description is not None else {}
    info: Any
    if default_info is not None:
        info = FieldInfo.merge_field_infos(default_info, Field(alias=param.name, **extra))
    else:
        default = ... if param.default is param.empty else param.default
        info = Field(default=default, alias=param.name, **extra)
    spec = ArgSpec(
        param.name,
        f"p_{param.name}",
        param.kind is param.POSITIONAL_ONLY,
        always_pass=default_info is not None,
    )
    return spec, (field_type, info)


def _argument_model(tool: str, fields: dict[str, Any]) -> tuple[type[BaseModel], dict[str, Any]]:
    """The pydantic model of a tool's arguments and its raw JSON schema."""
    try:
        model = create_model(
            _model_name(tool) + "Arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        with warnings.catch_warnings():
            # a default that is not JSON (e.g. a sentinel object) is just left out of the schema
            warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
            raw = model.model_json_schema()
    except ToolError:
        raise
    except Exception as exc:  # pydantic raises several types for types it cannot describe
        raise ToolError(
            f"Cannot build a JSON schema for tool {tool!r}: {exc}. Annotate each argument with a "
            "JSON-compatible type (str, int, float, bool, list, dict, Literal, Enum, a pydantic "
            "model); pass other objects through `RunContext.deps` instead."
        ) from exc
    return model, raw


def _caller_locals() -> dict[str, Any]:
    """Locals of the nearest frame outside promptimus: where a tool is usually created, and where
    types defined inside a function (tests, factories) can be found."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("promptimus"):
        frame = frame.f_back
    return dict(frame.f_locals) if frame is not None else {}


def signature_parameters(fn: Callable[..., Any], tool: str) -> list[inspect.Parameter]:
    """The parameters of `fn` with string annotations evaluated (PEP 563 modules included)."""
    try:
        try:
            signature = inspect.signature(fn, eval_str=True)
        except NameError:
            signature = inspect.signature(fn, eval_str=True, locals=_caller_locals())
    except NameError as exc:
        raise ToolError(
            f"Cannot read the type annotations of tool {tool!r}: {exc}. With `from __future__ "
            "import annotations`, the types in annotations must be visible where the tool is "
            "created (module level, or local to the function that creates the tool)."
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ToolError(f"Cannot read the signature of tool {tool!r}: {exc}.") from exc
    return list(signature.parameters.values())
