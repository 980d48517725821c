"""`StructuralOutput`: ask the model for JSON matching a pydantic model, validate, retry.

Two modes:
- native (default): the request carries `response_format` with the model's JSON schema, marked
  `strict` when OpenAI's strict mode can express it (every object lists all its properties as
  required and allows no extra ones) and non-strict otherwise;
- prompted (`native=False`): the schema goes into the system prompt, for servers without
  structured outputs.

Native mode degrades on servers that reject `response_format: json_schema` (llama-cpp-python's
server accepts only `{"type": "json_object", "schema": ...}`; some vLLM and Ollama versions
neither): a request the server rejects (`RequestRejected`, never retried) is sent again with
`json_object` and the schema, then with no `response_format` and the schema in a system message
(prompted). A rejection is recognized in each server's dialect (a 4xx, or a request-validation
report in any status: llama-cpp-python answers `json_schema` with a 500 that wraps one; see
`promptimus.transport.error_body`); one that names the fields it rejected and none of them is
`response_format` is raised at once, since a weaker format cannot help. The first mode the
server accepts is remembered on the provider (`llm.capabilities`, see
`promptimus.llms.capabilities`), so later calls go straight to it, and one log line (logger
`promptimus.structural`, WARNING) says which mode it fell back to. If even the prompted request
is rejected, the problem is not the format: that error is raised.

Either way the reply is parsed leniently (plain JSON, JSON in a code fence, JSON with stray text
around it) and validated. A reply that fails is sent back with the validation errors, at most
`n_retries` times; then `FailedToParseOutput` is raised with every raw reply and error. A reply
cut off at the token limit (`finish_reason == "length"`) raises `OutputTruncated` at once:
retrying the same request would be cut off again.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .._compat_seam import compat_names
from ..argument_checks import non_negative_int
from ..core import Module, Parameter
from ..dto import Message, MessageRole
from ..errors import (
    ContextWindowExceeded,
    FailedToParseOutput,
    InvalidArgument,
    ModelJSONTooComplex,
    OutputTruncated,
    RequestRejected,
)
from ..llms.capabilities import RESPONSE_FORMAT_MODES, ResponseFormatMode, capabilities
from ..model_json import decode_json, decode_json_prefix
from ..observe.provider_calls import report_event
from ..prompts.prompt import Prompt
from ..prompts.template import format_template
from .memory import as_messages
from .output_judge import output_judge
from .partial_output import PartialReader

__all__ = ["StructuralOutput", "format_validation_error", "openai_response_format"]

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger("promptimus.structural")

DEFAULT_SYSTEM_PROMPT = (
    "Reply with a single JSON object that matches the requested schema. Fill every required "
    "field, respect the field constraints, and write nothing outside the JSON."
)

DEFAULT_PROMPTED_SYSTEM_PROMPT = (
    "Reply with a single JSON object that matches this JSON schema:\n"
    "{schema_description}\n\n"
    "Fill every required field, respect the field constraints, and write nothing outside the "
    "JSON: no comments, no code fences."
)

DEFAULT_RETRY_TEMPLATE = (
    "Your reply does not match the required schema:\n{error_message}\n\n"
    "Reply again with only the corrected JSON object."
)

FALLBACK_SCHEMA_TEMPLATE = (
    "Reply with a single JSON object that matches this JSON schema:\n{schema}\n\n"
    "Write nothing outside the JSON: no comments, no code fences."
)
"""The system message that carries the schema when native mode fell back (not a parameter:
it exists for servers that reject the native format)."""

_NOT_ABOUT_THE_FORMAT = frozenset({401, 403, 404, 413})

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONES = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def _strictify(node: Any) -> bool:
    """Close every object schema under `node` (additionalProperties: false where unset) and
    return whether OpenAI's strict mode can take the schema.

    The walk follows the JSON-schema structure: the values of `properties` / `$defs` are
    schemas, the mapping itself is not (a field may be named `properties` or `type`)."""
    if not isinstance(node, dict):
        return True
    strict = True
    if node.get("type") == "object" or isinstance(node.get("properties"), dict):
        properties = node.get("properties", {})
        if set(node.get("required", ())) != set(properties):
            strict = False
        if node.setdefault("additionalProperties", False) is not False:
            strict = False
    for key in _SUBSCHEMA_MAPS:
        mapping = node.get(key)
        if isinstance(mapping, dict):
            for value in mapping.values():
                strict = _strictify(value) and strict
    for key in _SUBSCHEMA_LISTS:
        items = node.get(key)
        if isinstance(items, list):
            for item in items:
                strict = _strictify(item) and strict
    for key in _SUBSCHEMA_ONES:
        strict = _strictify(node.get(key)) and strict
    return strict


def openai_response_format(output_model: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` for `output_model`: strict when the schema allows it."""
    schema = copy.deepcopy(output_model.model_json_schema())
    strict = _strictify(schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": _NAME_CHARS.sub("_", output_model.__name__)[:64] or "output",
            "schema": schema,
            "strict": strict,
        },
    }


def format_validation_error(exc: ValidationError) -> str:
    """A short, model-readable list of what is wrong: one `- field.path: problem` per line."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(whole object)"
        lines.append(f"- {where}: {error['msg']}")
    return "\n".join(lines)


def _embedded_json(text: str) -> Any:
    """The first JSON value found in a fenced block, else the first decodable `{...}` / `[...]`.
    JSON past the decoding limits (`promptimus.model_json`) ends the search with its reason."""
    for match in _FENCE.finditer(text):
        try:
            return decode_json(match.group(1))
        except ModelJSONTooComplex as exc:
            raise ValueError(f"The reply cannot be used: {exc.msg}.") from None
        except json.JSONDecodeError:
            continue
    for opening in re.finditer(r"[{\[]", text):
        try:
            value, _ = decode_json_prefix(text, opening.start())
        except ModelJSONTooComplex as exc:
            raise ValueError(f"The reply cannot be used: {exc.msg}.") from None
        except json.JSONDecodeError:
            continue
        return value
    raise ValueError("The reply contains no JSON object. Reply with only the JSON object.")


class StructuralOutput(Module, Generic[T]):
    """Turn a request into a validated `output_model` instance.

        extract = StructuralOutput(Person).with_llm(llm)
        person = await extract("Ann is 31 and lives in Oslo.")

    `n_retries` is how many times a reply that fails validation is sent back with its errors
    (so at most `n_retries + 1` LLM calls). Parameters (checkpointed, tunable):
    `predictor.prompt` — the system prompt (`{schema_description}` is filled with
    `model_json_schema`), `retry_template` — the correction message (`{error_message}`),
    `model_json_schema` — the schema text shown in prompted mode.
    """

    def __init__(
        self,
        output_model: type[T],
        n_retries: int = 3,
        system_prompt: str | None = None,
        retry_template: str | None = None,
        retry_message_role: MessageRole | str = MessageRole.USER,
        native: bool = True,
    ) -> None:
        super().__init__()
        if not (isinstance(output_model, type) and issubclass(output_model, BaseModel)):
            raise InvalidArgument(
                f"StructuralOutput needs a pydantic BaseModel subclass, got {output_model!r}; "
                "wrap other types in a model (class Out(BaseModel): items: list[int])."
            )
        n_retries = non_negative_int(n_retries, "n_retries")
        self.model_json_schema = Parameter(json.dumps(output_model.model_json_schema(), indent=2))
        default = DEFAULT_SYSTEM_PROMPT if native else DEFAULT_PROMPTED_SYSTEM_PROMPT
        self.predictor = Prompt(system_prompt if system_prompt is not None else default)
        self.retry_template = Parameter(
            retry_template if retry_template is not None else DEFAULT_RETRY_TEMPLATE
        )
        self.output_model = output_model
        self.n_retries = n_retries
        self.native = native
        self.retry_message_role = MessageRole(retry_message_role)
        self._response_format = openai_response_format(output_model) if native else None

    @property
    def response_format(self) -> dict[str, Any] | None:
        """What native mode sends as `response_format` (None in prompted mode)."""
        return self._response_format

    def provider_kwargs(self, mode: ResponseFormatMode | None = None) -> dict[str, Any]:
        """Request options for `mode` (default: the native `response_format`, none in prompted
        mode)."""
        if mode is None:
            mode = "json_schema" if self.native else "prompted"
        if mode == "json_schema" and self._response_format is not None:
            return {"response_format": self._response_format}
        if mode == "json_object":
            schema = copy.deepcopy(self.output_model.model_json_schema())
            return {"response_format": {"type": "json_object", "schema": schema}}
        return {}

    # --- degrading on servers that reject the native format ---------------------------------

    def mode_for(self, llm: Any) -> ResponseFormatMode:
        """The mode to try first with `llm`: what it accepted before, else json_schema (native)
        or prompted."""
        if not self.native:
            return "prompted"
        return capabilities(llm).response_format or "json_schema"

    def schema_instructions(self, mode: ResponseFormatMode) -> Message | None:
        """The extra system message a fallback mode sends (None when not needed: in native
        json_schema mode, and in prompted mode the system prompt already has the schema)."""
        if not self.native or mode == "json_schema":
            return None
        text = FALLBACK_SCHEMA_TEMPLATE.replace("{schema}", self.model_json_schema.value)
        return Message(role=MessageRole.SYSTEM, content=text)

    def fall_back(
        self, mode: ResponseFormatMode, error: BaseException
    ) -> ResponseFormatMode | None:
        """The mode to try after the server rejected a request sent in `mode`, or None when the
        rejection cannot be about the format (authentication, unknown model, context window) or
        there is no weaker mode left."""
        if not self.native or not isinstance(error, RequestRejected):
            return None
        if isinstance(error, ContextWindowExceeded) or error.status in _NOT_ABOUT_THE_FORMAT:
            return None
        if error.rejected_fields and not any(
            field.partition(".")[0] == "response_format" for field in error.rejected_fields
        ):
            return None  # the server named what it rejected, and it is not the format
        position = RESPONSE_FORMAT_MODES.index(mode)
        if position + 1 >= len(RESPONSE_FORMAT_MODES):
            return None
        weaker = RESPONSE_FORMAT_MODES[position + 1]
        log.debug(
            "the server rejected structured output as %s (%s); trying %s",
            mode,
            error.server_message or error,
            weaker,
        )
        return weaker

    def accepted(self, llm: Any, mode: ResponseFormatMode) -> None:
        """Record that `llm` accepted a request in `mode` (logged once when it is a fallback)."""
        if self.native and capabilities(llm).learn_response_format(mode) and mode != "json_schema":
            how = (
                "json_object with the schema"
                if mode == "json_object"
                else "prompted mode (schema in a system message, no response_format)"
            )
            rejected = "json_schema" if mode == "json_object" else "json_schema and json_object"
            log.warning(
                "%r rejected response_format %s; StructuralOutput(%s) fell back to %s for this "
                "provider",
                llm,
                rejected,
                self.output_model.__name__,
                how,
            )

    def system_message(self, **prompt_vars: Any) -> Message:
        """The system prompt, rendered (with the schema in prompted mode)."""
        return self.predictor.render(
            None, schema_description=self.model_json_schema.value, **prompt_vars
        )[0]

    def retry_message(self, error: str) -> Message:
        text = format_template(
            self.retry_template.value,
            {"error_message": error},
            where=f"StructuralOutput {self.path or 'root'!r} retry_template",
        )
        return Message(role=self.retry_message_role, content=text)

    def check(self, reply: Message) -> tuple[T | None, str | None]:
        """Validate a reply: `(value, None)` or `(None, error text for the model)`.

        Raises `OutputTruncated` if the reply was cut off at the token limit."""
        if reply.finish_reason == "length":
            raise OutputTruncated(
                f"The model's reply for {self.output_model.__name__} was cut off at its token "
                f"limit (finish_reason='length', {len(reply.content)} characters received). "
                "Raise the token limit (e.g. provider_kwargs={'max_tokens': ...}) or ask for a "
                "smaller output; retrying the same request would be cut off again."
            )
        try:
            return self.parse(reply.content), None
        except FailedToParseOutput as exc:
            return None, exc.errors[0]

    def parse(self, text: str) -> T:
        """Validate `text` (JSON, fenced JSON, or JSON with text around it) as `output_model`;
        raise `FailedToParseOutput` with a model-readable error otherwise."""
        stripped = text.strip()
        try:
            return self.output_model.model_validate_json(stripped)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            if not (len(errors) == 1 and errors[0]["type"] == "json_invalid"):
                raise self._failure(text, format_validation_error(exc)) from None
        try:
            value = _embedded_json(stripped)
            return self.output_model.model_validate(value)
        except ValidationError as exc:
            raise self._failure(text, format_validation_error(exc)) from None
        except ValueError as exc:
            raise self._failure(text, str(exc)) from None

    def _failure(self, raw: str, error: str) -> FailedToParseOutput:
        return FailedToParseOutput(
            f"The reply is not a valid {self.output_model.__name__}:\n{error}",
            raw=[raw],
            errors=[error],
        )

    async def forward(self, history: list[Message] | Message | str, **prompt_vars: Any) -> T:
        return await self._answer(history, prompt_vars, None)

    async def stream(
        self, history: list[Message] | Message | str, **prompt_vars: Any
    ) -> AsyncIterator[BaseModel]:
        """The answer while it streams: partial objects (instances of
        `partial_model(output_model)`: the fields that arrived and validate, in order) as the
        reply comes in, then the fully validated `output_model` instance, last. A reply that
        fails validation is sent back as by `forward` (the next attempt's partials start
        afresh). A call of this module like `forward`: hooks, tracing and usage see it.

        Inside a module with output guardrails around its call (`Guarded`), nothing shows
        before they judged the answer: the partials are held, then yielded with the answer
        when allowed; a replaced answer comes alone; a blocked one raises `GuardrailTripped`."""
        queue: asyncio.Queue[BaseModel] = asyncio.Queue()

        async def answer(module: StructuralOutput[T], history: Any, **variables: Any) -> T:
            return await module._answer(history, variables, queue.put_nowait)

        judge = output_judge()
        held: list[BaseModel] | None = None if judge is None else []
        task = asyncio.ensure_future(self._call(answer, (history,), prompt_vars))
        getter: asyncio.Future[BaseModel] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    if held is None:
                        yield getter.result()
                    else:  # an output guardrail has not judged the answer yet
                        held.append(getter.result())
                    continue
                getter.cancel()
                rest = [queue.get_nowait() for _ in range(queue.qsize())]
                final = task.result()
                if judge is not None and held is not None:
                    shown = await judge(final)
                    rest = [*held, *rest] if shown is final else []
                    final = shown
                for partial in rest:
                    yield partial
                yield final
                return
        finally:
            if getter is not None:
                getter.cancel()  # a caller cancelled while waiting leaves no reader behind
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _ask(
        self,
        messages: list[Message],
        params: dict[str, Any],
        variables: dict[str, Any],
        on_partial: Callable[[BaseModel], object] | None,
    ) -> Message:
        """One request: through `predictor.forward`, or streamed with its partial objects."""
        if on_partial is None:
            return await self.predictor.forward(messages, provider_kwargs=params, **variables)
        reader = PartialReader(self.output_model)

        def on_delta(delta: Any) -> None:
            if delta.content:
                snapshot = reader.add(delta.content)
                if snapshot is not None:
                    on_partial(snapshot)

        return await self.predictor.forward_streamed(messages, on_delta, params, **variables)

    async def _answer(
        self,
        history: list[Message] | Message | str,
        prompt_vars: dict[str, Any],
        on_partial: Callable[[BaseModel], object] | None,
    ) -> T:
        messages = as_messages(history, MessageRole.USER)
        variables = {"schema_description": self.model_json_schema.value, **prompt_vars}
        llm = self.predictor.llm
        mode = self.mode_for(llm)
        raw: list[str] = []
        errors: list[str] = []
        while len(raw) <= self.n_retries:
            extra = self.schema_instructions(mode)
            try:
                reply = await self._ask(
                    [extra, *messages] if extra is not None else messages,
                    self.provider_kwargs(mode),
                    variables,
                    on_partial,
                )
            except RequestRejected as exc:
                weaker = self.fall_back(mode, exc)
                if weaker is None:
                    raise
                mode = weaker
                continue
            self.accepted(llm, mode)
            raw.append(reply.content)
            value, error = self.check(reply)
            if error is None:
                return value  # type: ignore[return-value]
            errors.append(error)
            if len(raw) <= self.n_retries:
                report_event(self, "retry", {"attempt": len(raw), "error": error})
            messages = [*messages, reply, self.retry_message(error)]
        raise FailedToParseOutput(
            f"No valid {self.output_model.__name__} after {len(raw)} attempt(s); the last "
            f"reply's problems:\n{errors[-1]}\nRaise n_retries, simplify the schema or use a "
            "stronger model. Every reply is in `.raw` and every error in `.errors`.",
            raw=raw,
            errors=errors,
        )

    def extra_repr(self) -> str:
        mode = "native" if self.native else "prompted"
        return f"{self.output_model.__name__}, n_retries={self.n_retries}, {mode}"


__getattr__ = compat_names(__name__)
