"""`MCPTool`: one tool of an MCP server, as a promptimus `Tool` an agent can call.

The model sees the server's name (with the toolset's prefix), description and input schema as
the server wrote them. Arguments are checked against that schema before anything is sent (a
mismatch goes back to the model, as with a local tool); the call goes through the toolset's one
session. Text content comes back as text, structured content as JSON, an `isError` result and a
call past the toolset's timeout as a tool error for the model.

Images (image content, or an embedded resource whose MIME type is `image/*`) come back as
`ImageContent` (`data:` URLs): the result is then a `Message` whose `content` is the text, with a
placeholder such as `[image 1 (image/png)]` where each image was, and whose `images` hold them.
Agents show them to the model as the chat API allows: the OpenAI tool-calling agent sends the
text in the `tool` message and the images in a user message right after the tool messages (an
OpenAI `tool` message takes text only); the ReACT agent puts them in its `Observation:` message
when that is a user message. For a model without vision, open the toolset with `images=False`:
each image is then only named in the text (`[image (image/png), not shown]`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema

from ..dto import ImageContent, Message, MessageRole
from ..errors import ToolArgumentsError, ToolExecutionError
from ..tools.base import Tool
from ..tools.run_context import RunContext

__all__ = ["MCPTool", "ToolServer"]


class ToolServer(Protocol):
    """What an MCP tool needs of the toolset that made it (`MCPToolset`)."""

    @property
    def server(self) -> str: ...  # how errors name the server (command line or URL)

    @property
    def name(self) -> str: ...  # what records, events and spans call the server

    @property
    def timeout(self) -> float | None: ...

    @property
    def images(self) -> bool: ...

    async def call_tool(
        self, remote_name: str, arguments: dict[str, Any], *, idempotent: bool = False
    ) -> Any: ...


class MCPTool(Tool):
    """One tool of an MCP server (made by `MCPToolset`; see `Tool.from_mcp`)."""

    def __init__(
        self,
        toolset: ToolServer,
        remote_name: str,
        description: str | None,
        input_schema: dict[str, Any],
        prefix: str = "",
        idempotent: bool = False,
    ) -> None:
        super().__init__(
            name=prefix + remote_name,
            description=description or "",
            timeout=toolset.timeout,
            idempotent=idempotent,
        )
        self.remote_name = remote_name
        self._toolset = toolset
        self.update(description, input_schema)

    def update(self, description: str | None, input_schema: dict[str, Any]) -> None:
        """Take the server's new description and schema (after a list-changed notice)."""
        if self.description.value != (description or ""):
            self.description.value = description or ""
        schema = dict(input_schema) if input_schema else {"type": "object", "properties": {}}
        self._input_schema = schema
        # a `$schema` jsonschema does not know: the newest draft, said outright (left implicit,
        # jsonschema warns that it will raise for it in the future, which would fail the toolset)
        validator = jsonschema.validators.validator_for(schema, default=_NEWEST)
        self._validator = validator(schema, registry=_OFFLINE)
        self._accepts = _fast_check(schema, validator)

    @property
    def origin(self) -> str:
        return f"a tool of the MCP server {self._toolset.server!r}"

    @property
    def server(self) -> str:
        """The MCP server's name (`MCPToolset(name=...)`, else the one it gives itself)."""
        return self._toolset.name

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return self._input_schema

    def extra_repr(self) -> str:
        return f"name={self._name!r}, server={self._toolset.server!r}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the server's tool with keyword arguments (or one JSON-object string)."""
        if len(args) == 1 and isinstance(args[0], str | dict) and not kwargs:
            kwargs = self.validate(args[0])
        elif args:
            raise ToolArgumentsError(f"MCP tool {self._name!r} takes keyword arguments only.")
        else:
            kwargs = self.validate(kwargs)
        result = await self._toolset.call_tool(self.remote_name, kwargs, idempotent=self.idempotent)
        text, images = _read_content(result.content, self._toolset.images)
        if result.is_error:
            raise ToolExecutionError(
                f"Tool {self._name!r} (MCP server {self.server!r}) failed: "
                f"{text or 'the server gave no reason'}"
            )
        if images:
            return Message(role=MessageRole.TOOL, content=text, images=images)
        if result.structured_content is not None:
            return result.structured_content
        return text

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Coroutine[Any, Any, Any]:
        # through `forward`, the module call path, so hooks and tracing see the call as they see
        # a local tool's; the schema is checked there, once. Not itself a coroutine: `forward`'s
        # is handed straight to the timeout scope, one frame less on each of the call's awaits
        return self.forward(self._object(arguments))

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """The arguments checked against the server's schema (jsonschema-rs first, jsonschema
        to word what it turns down); a `$ref` this side cannot follow leaves them to the server."""
        values = self._object(arguments)
        if self._accepts is not None:
            try:
                if self._accepts(values):
                    return values
            except BaseException as exc:  # a Rust panic too: jsonschema decides below
                if isinstance(exc, KeyboardInterrupt | SystemExit):
                    raise
        try:
            problems = sorted(self._validator.iter_errors(values), key=lambda e: list(e.path))
        except referencing.exceptions.Unresolvable:
            # a `$ref` this side cannot follow (it is never fetched): the server judges
            return values
        except Exception:
            # a schema jsonschema cannot apply (a `pattern` Python's `re` cannot read, such as
            # `\p{L}`): jsonschema-rs's verdict, else the server's; never a crash of the run
            lines = "; ".join(_rs_problems(self._accepts, values)[:5])
        else:
            lines = "; ".join(_explain(p) for p in problems[:5])
        if lines:
            raise ToolArgumentsError(
                f"Tool {self._name!r}: invalid arguments: {lines}. Fix them and call again."
            )
        return values

    def _object(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """The arguments as a JSON object (not yet checked against the schema)."""
        if arguments is None or arguments == "":
            values: Any = {}
        elif isinstance(arguments, str):
            try:
                values = _DECODER.decode(arguments)
            except json.JSONDecodeError as exc:
                raise ToolArgumentsError(
                    f"Tool {self._name!r}: the arguments are not valid JSON ({exc.msg}). "
                    "Send one JSON object."
                ) from None
            except _NonFinite as exc:
                raise self._non_finite(str(exc)) from None
        else:
            values = arguments
            if isinstance(values, dict) and _holds_non_finite(values):
                raise self._non_finite("NaN or Infinity is not a JSON number")
        if not isinstance(values, dict):
            raise ToolArgumentsError(
                f"Tool {self._name!r}: the arguments must be a JSON object, got "
                f"{type(values).__name__}."
            )
        return values

    def _non_finite(self, what: str) -> ToolArgumentsError:
        # Python's JSON reader takes NaN/Infinity (and 1e999 as inf), jsonschema-rs reads them
        # as null and jsonschema lets them past most bounds: the server would get null, or text
        # that is not JSON, in place of a number the model never validly sent
        return ToolArgumentsError(
            f"Tool {self._name!r}: the arguments are not valid JSON ({what}). Send one JSON "
            "object whose numbers are finite."
        )


class _NonFinite(ValueError):
    pass


def _refuse(name: str) -> Any:
    raise _NonFinite(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _NonFinite(f"{text} is too large a number")
    return number


_PLAIN = frozenset({str, int, bool, type(None)})


_DECODER = json.JSONDecoder(parse_constant=_refuse, parse_float=_finite)
"""`json.loads` without NaN/Infinity, built once (`json.loads` with hooks builds one per call)."""


def _holds_non_finite(value: Any) -> bool:
    # on every MCP call (the arguments reach `forward` as a dict): skips plain values unvisited
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        return False
    for item in items:  # noqa: SIM110 (a loop: `any` over a generator takes twice as long)
        if type(item) not in _PLAIN and _holds_non_finite(item):
            return True
    return False


def _unchecked(uri: str) -> referencing.Resource[Any]:
    # never fetched: the part of the schema behind it is taken as "anything" (the server judges
    # that part), and the rest of the arguments is still checked here
    return referencing.jsonschema.DRAFT202012.create_resource({})


# `retrieve` is the public alias of an attrs field, which the checker's attrs support misses
_OFFLINE: referencing.Registry[Any] = referencing.Registry(retrieve=_unchecked)  # type: ignore[call-arg]
"""A `$ref` in a server's schema is never fetched: otherwise a server could make its client
reach any host it names (jsonschema still fetches remote references by default, with no
timeout), and wait on it. A `$ref` to an outside document accepts anything; only one pointing
into such a document (`...#/defs/x`), which cannot be followed, lets the arguments through
unchecked."""


_NEWEST: Any = jsonschema.Draft202012Validator

_SAME_DRAFT: dict[type[Any], str] = {
    jsonschema.Draft4Validator: "Draft4Validator",
    jsonschema.Draft6Validator: "Draft6Validator",
    jsonschema.Draft7Validator: "Draft7Validator",
    jsonschema.Draft201909Validator: "Draft201909Validator",
    jsonschema.Draft202012Validator: "Draft202012Validator",
}
"""jsonschema-rs's validator for the draft jsonschema picked. jsonschema-rs reads more `$schema`
spellings (`https://json-schema.org/draft-07/schema#`) than jsonschema, which takes the newest
draft for those: left to pick its own draft, jsonschema-rs would skip keywords (`prefixItems`,
`dependentRequired`, ...) that jsonschema enforces, and pass what jsonschema turns down."""


def _fast_check(
    schema: dict[str, Any], validator: type[Any] | None = None
) -> Callable[[Any], bool] | None:
    """jsonschema-rs's compiled check of `schema`, which lets valid arguments through in well
    under a microsecond (jsonschema's walk takes ~20 us; it still judges and words whatever this
    turns down). None without jsonschema-rs, for a schema it cannot compile, or for a draft it
    lacks (draft 3). `validator`: jsonschema's class for the schema, whose draft this uses.
    Offline: a `$ref` to a URL is never fetched (jsonschema-rs would fetch it by default)."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    if validator is None:
        validator = jsonschema.validators.validator_for(schema, default=_NEWEST)
    draft = _SAME_DRAFT.get(validator)
    if draft is None:
        return None
    try:
        return getattr(jsonschema_rs, draft)(schema, offline=True).is_valid  # type: ignore[no-any-return]
    except BaseException as exc:  # a Rust panic is a BaseException; the slow path still works
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return None


def _rs_problems(check: Callable[[Any], bool] | None, values: dict[str, Any]) -> list[str]:
    validator = getattr(check, "__self__", None)  # the jsonschema-rs validator `_fast_check` made
    if validator is None:
        return []
    try:
        errors = list(validator.iter_errors(values))
    except Exception:
        return []
    problems = []
    for error in errors:
        where = "/".join(str(p) for p in error.instance_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    return problems


def _explain(error: jsonschema.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


_CHAT_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp"})
"""The image types chat APIs accept in a message (OpenAI's list; others take the same or fewer)."""


def _read_content(blocks: list[Any], keep_images: bool) -> tuple[str, list[ImageContent]]:
    """The text of the result's content blocks and its images; kinds without a text form
    (audio, links) are named in the text, not dropped silently."""
    parts: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
            continue
        data, mime = _image_data(block)
        if data is None:
            if kind == "resource" and hasattr(block.resource, "text"):
                parts.append(block.resource.text)
            else:
                parts.append(f"[{kind or type(block).__name__} content]")
        elif keep_images and mime.lower() in _CHAT_IMAGE_TYPES:
            images.append(ImageContent(url=f"data:{mime};base64,{data}"))
            parts.append(f"[image {len(images)} ({mime})]")
        elif keep_images:  # sent, the request would be refused (a 400) and the run would end
            parts.append(f"[image ({mime}), not shown: the chat API takes PNG, JPEG, GIF, WebP]")
        else:
            parts.append(f"[image ({mime}), not shown]")
    return "\n".join(parts), images


def _image_data(block: Any) -> tuple[str | None, str]:
    """(base64 data, MIME type) of an image block or an embedded image resource, else None."""
    kind = getattr(block, "type", None)
    if kind == "image":
        return block.data, block.mime_type or "image/png"
    if kind == "resource":
        resource = block.resource
        mime = getattr(resource, "mime_type", None) or ""
        blob = getattr(resource, "blob", None)
        if blob and mime.startswith("image/"):
            return blob, mime
    return None, ""
