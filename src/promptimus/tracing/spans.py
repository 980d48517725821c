"""OpenTelemetry spans from the framework's own call path.

`instrument()` plugs into two seams of the core, never patching anything:
- the module call interceptor: one span per module call, named by the module's path
  (`root`, `root.agent`, `root.agent.predictor`), nested as the calls nest;
- the provider call observers: one span per LLM, embedding and rerank request
  (`root.agent.predictor.prompt.llm`, `root.rag.retrieval.embedder`, `....reranker`),
  and span events for what modules report (a structured-output retry).

Span kinds: agents are AGENT, tools TOOL, `RetrievalModule` RETRIEVER, rerankers RERANKER, any
other module CHAIN; a class of your own chooses with a `span_kind = "AGENT"` class attribute.

Spans go to the tracer provider given, else to the global one (`trace.set_tracer_provider`);
with none configured the OpenTelemetry API hands out non-recording spans and this costs a
lookup per call. Attributes follow OpenInference (Phoenix) and the OpenTelemetry GenAI
conventions side by side (see `conventions.py`). Recording a span never changes or breaks the
call: values are truncated, stringified when not JSON, and API keys are redacted.
"""

from __future__ import annotations

import contextvars
import logging
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..core import Module, current_session
from ..errors import InvalidArgument, OptionalDependencyMissing

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised only without the package
    raise OptionalDependencyMissing(
        "promptimus.tracing spans need the opentelemetry-api package: "
        'pip install "promptimus[tracing]" (usage and budgets work without it).'
    ) from exc

from ..core import hooks
from ..core.hooks import (
    CallNext,
    RemovableHandle,
    register_module_call_interceptor,
    revised_call_input,
)
from ..observe.module_path import absolute_path
from ..observe.pricing import Pricing, check_pricing, prompt_cost
from ..observe.provider_calls import ProviderCall, register_provider_call_observer
from . import conventions as c
from .attribute_values import ValueEncoder

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = [
    "DEFAULT_MAX_VALUE_CHARS",
    "Tracing",
    "disable_tracing",
    "enable_tracing",
    "instrument",
    "tracing_disabled",
]

_log = logging.getLogger(__name__)

DEFAULT_MAX_VALUE_CHARS = 32_000
# Ours, as no convention names it yet: the server a remote tool runs on (an MCP server's name).
TOOL_SERVER = "promptimus.tool.server"
_MAX_LISTED = 100  # documents, texts or tools listed one attribute each; the rest are counted

_excluded: weakref.WeakSet[Module] = weakref.WeakSet()
_root_labels: weakref.WeakKeyDictionary[Module, str] = weakref.WeakKeyDictionary()
_suppressed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "promptimus_tracing_suppressed", default=False
)
_active: Tracing | None = None

_PROVIDER_SPAN = {
    "llm": ("llm", c.LLM),
    "embedding": ("embedder", c.EMBEDDING),
    "rerank": ("reranker", c.RERANKER),
}


def disable_tracing(module: Module) -> Module:
    """No spans for `module` and everything it calls (switch tracing off for one tree)."""
    _excluded.add(module)
    return module


def enable_tracing(module: Module) -> Module:
    """Undo `disable_tracing(module)`."""
    _excluded.discard(module)
    return module


def tracing_disabled(module: Module) -> bool:
    return module in _excluded


def label_tree(root: Module, name: str) -> Module:
    """Name `root`'s spans `name`, `name.child`... instead of `root`, `root.child`."""
    if not isinstance(name, str) or not name or "." in name:
        raise InvalidArgument(f"A tree label is a non-empty name without dots, got {name!r}.")
    _root_labels[root] = name
    return root


def current() -> Tracing | None:
    """The active instrumentation, if any."""
    return _active


def instrument(
    tracer_provider: TracerProvider | None = None,
    *,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    include_digest: bool = True,
    pricing: Pricing | None = None,
) -> Tracing:
    """Start emitting spans for every module call and provider request in the process.

    - `tracer_provider`: where spans go (default: the global provider, set by your backend's
      setup or `opentelemetry.trace.set_tracer_provider`).
    - `max_value_chars`: longer input/output/message texts are cut (with a note of how much).
    - `include_digest`: put each module's content digest into the span's `metadata`.
    - `pricing`: `{model: (input, output[, cached_input[, cache_write]])}` per million tokens;
      LLM and embedding spans then carry `llm.cost.prompt|completion|total`.

    Calling it again replaces the previous instrumentation. Returns a `Tracing` handle:
    `.remove()` (or `with instrument(...):`) stops it. Without a call, promptimus instruments
    itself with these defaults once a global tracer provider is set (see `tracing.auto`); an
    explicit call settles that, so a removed instrumentation does not come back by itself.
    """
    global _active
    hooks.auto_probe = None
    if _active is not None:
        _active.remove()
    _active = Tracing(
        tracer_provider, max_value_chars=max_value_chars, digest=include_digest, pricing=pricing
    )
    return _active


class Tracing:
    """An active instrumentation (see `instrument`)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        *,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        digest: bool = True,
        pricing: Pricing | None = None,
    ):
        self.tracer = trace.get_tracer("promptimus", __version__, tracer_provider=tracer_provider)
        self.encoder = ValueEncoder(max_value_chars)
        self.include_digest = digest
        self.pricing = check_pricing(pricing)
        self._handles: list[RemovableHandle] = [
            register_module_call_interceptor(self._intercept),
            register_provider_call_observer(self),
        ]

    # ------------------------------------------------------------------ lifecycle

    def add_secrets(self, *values: str) -> None:
        """Extra values to redact from every attribute (API keys are found on their own)."""
        self.encoder.add_secrets(values)

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def remove(self) -> None:
        global _active
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if _active is self:
            _active = None

    def __enter__(self) -> Tracing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    # ------------------------------------------------------------------ module spans

    async def _intercept(
        self, module: Module, call_next: CallNext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if _suppressed.get():
            return await call_next(args, kwargs)
        if module in _excluded:
            token = _suppressed.set(True)
            try:
                return await call_next(args, kwargs)
            finally:
                _suppressed.reset(token)
        started = self._start(module, "", _module_kind(module))
        if started is None:
            return await call_next(args, kwargs)
        span, name = started
        self._safely(self._module_input, span, module, name, args, kwargs)
        context_token = otel_context.attach(trace.set_span_in_context(span))
        try:
            output = await call_next(args, kwargs)
        except BaseException as exc:
            self._safely(self._record_error, span, exc)
            raise
        else:
            self._safely(self._module_output, span, output)
            span.set_status(Status(StatusCode.OK))
            return output
        finally:
            otel_context.detach(context_token)
            revised = revised_call_input()  # a guardrail redacted the request: record that
            if revised is not None:
                self._safely(self._revised_input, span, *revised)
            span.end()

    def _revised_input(self, span: Span, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        value = _call_input(args, kwargs)
        if value is not None:
            text, mime = self.encoder.value(value)
            span.set_attributes({c.INPUT_VALUE: text, c.INPUT_MIME_TYPE: mime})

    def _start(self, module: Module | None, suffix: str, kind: str) -> tuple[Span, str] | None:
        """A recording span named after `module`'s path (+ `suffix`), or None when spans are
        not recorded (no tracer provider): then the name is never computed. (A sampler sees
        the provisional name "promptimus"; the path is set right after it decides.)"""
        span = self.tracer.start_span("promptimus", attributes={c.SPAN_KIND: kind})
        if not span.is_recording():
            span.end()
            return None
        where = absolute_path(module, _root_labels) if module is not None else "root"
        name = where + suffix
        span.update_name(name)
        session = current_session()
        if session is not None:
            session_id = session.name or f"session-{id(session):x}"
            span.set_attribute(c.SESSION_ID, session_id)
            span.set_attribute(c.GEN_AI_CONVERSATION_ID, session_id)
        return span, name

    def _module_input(
        self,
        span: Span,
        module: Module,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        enc = self.encoder
        for provider in module.own_providers().values():  # its keys, before any value is written
            enc.add_secrets(_provider_secrets(provider))
        kind = _module_kind(module)
        metadata: dict[str, Any] = {"module_class": type(module).__qualname__}
        server = getattr(module, "server", None) if kind == c.TOOL else None
        if isinstance(server, str):  # a remote tool (MCP): shown where backends show metadata
            metadata["tool_server"] = server
        if self.include_digest:
            metadata["module_digest"] = module.digest()
        span.set_attribute(c.METADATA, enc.json(metadata))
        value = _call_input(args, kwargs)
        if value is not None:
            text, mime = enc.value(value)
            span.set_attributes({c.INPUT_VALUE: text, c.INPUT_MIME_TYPE: mime})
        if kind == c.TOOL:
            tool_name = getattr(module, "name", None)
            description = getattr(getattr(module, "description", None), "value", None)
            schema = getattr(module, "parameters_schema", None)
            attributes: dict[str, Any] = {c.GEN_AI_OPERATION_NAME: c.OP_EXECUTE_TOOL}
            if isinstance(tool_name, str):
                attributes[c.TOOL_NAME] = attributes[c.GEN_AI_TOOL_NAME] = tool_name
            if isinstance(description, str) and description:
                attributes[c.TOOL_DESCRIPTION] = attributes[c.GEN_AI_TOOL_DESCRIPTION] = enc.text(
                    description
                )
            if schema is not None:
                attributes[c.TOOL_PARAMETERS] = enc.json(schema)
            if isinstance(server, str):
                attributes[TOOL_SERVER] = enc.text(server)
            span.set_attributes(attributes)
        elif kind == c.AGENT:
            span.set_attributes(
                {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: name}
            )
        elif kind == c.RETRIEVER:
            span.set_attribute(c.GEN_AI_OPERATION_NAME, c.OP_RETRIEVAL)
            if args and isinstance(args[0], str):
                span.set_attribute(c.GEN_AI_RETRIEVAL_QUERY_TEXT, enc.text(args[0]))

    def _module_output(self, span: Span, output: Any) -> None:
        if output is None:
            return
        if _is_hit_list(output):
            span.set_attributes(self._documents(c.RETRIEVAL_DOCUMENTS, output))
        text, mime = self.encoder.value(output)
        span.set_attributes({c.OUTPUT_VALUE: text, c.OUTPUT_MIME_TYPE: mime})

    def _record_error(self, span: Span, exc: BaseException) -> None:
        enc = self.encoder
        message = enc.text(f"{type(exc).__name__}: {exc}")
        span.set_status(Status(StatusCode.ERROR, message))
        span.add_event(
            "exception",
            {
                "exception.type": f"{type(exc).__module__}.{type(exc).__qualname__}",
                "exception.message": enc.text(str(exc)),
                "exception.stacktrace": enc.text(
                    "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                ),
                "exception.escaped": True,
            },
        )

    def _safely(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # recording must never break or change the user's call
            _log.debug("promptimus tracing could not record %s", fn.__name__, exc_info=True)

    # ------------------------------------------------------------------ provider spans

    def on_start(self, call: ProviderCall) -> None:
        if _suppressed.get():
            return
        suffix, kind = _PROVIDER_SPAN.get(call.kind, (call.kind, c.CHAIN))
        started = self._start(call.module, f".{suffix}", kind)
        if started is None:
            return
        span = started[0]
        call.state[self] = span
        self.encoder.add_secrets(_provider_secrets(call.provider))
        self._safely(self._request_attributes, span, call)

    def on_end(self, call: ProviderCall) -> None:
        span = call.state.pop(self, None)
        if span is None:
            return
        try:
            if call.error is not None:
                self._safely(self._record_error, span, call.error)
            else:
                self._safely(self._response_attributes, span, call)
                span.set_status(Status(StatusCode.OK))
            self._safely(self._usage_attributes, span, call)
        finally:
            span.end()

    def on_event(self, module: Module, name: str, attributes: Mapping[str, Any]) -> None:
        if _suppressed.get():
            return
        span = trace.get_current_span()
        if span.is_recording():
            enc = self.encoder
            span.add_event(name, {key: _scalar(enc, value) for key, value in attributes.items()})

    def on_call_event(self, call: ProviderCall, name: str, attributes: Mapping[str, Any]) -> None:
        span = call.state.get(self)
        if span is not None:
            enc = self.encoder
            span.add_event(name, {key: _scalar(enc, value) for key, value in attributes.items()})

    def _request_attributes(self, span: Span, call: ProviderCall) -> None:
        enc = self.encoder
        attributes: dict[str, Any] = {}
        if call.model:
            attributes[c.GEN_AI_REQUEST_MODEL] = call.model
        provider_name = getattr(call.provider, "provider_name", None)
        if not isinstance(provider_name, str):  # an OpenAI-compatible server, or unknown
            provider_name = "openai" if hasattr(call.provider, "base_url") else None
        if provider_name:
            attributes[c.GEN_AI_PROVIDER_NAME] = attributes[c.LLM_SYSTEM] = provider_name
        if call.kind == "llm":
            attributes[c.GEN_AI_OPERATION_NAME] = c.OP_CHAT
            if call.model:
                attributes[c.LLM_MODEL_NAME] = call.model
            params = {**(getattr(call.provider, "call_kwargs", None) or {}), **call.params}
            tools = params.pop("tools", None)
            attributes[c.LLM_INVOCATION_PARAMETERS] = enc.params(params)
            for key, name in (
                ("temperature", c.GEN_AI_REQUEST_TEMPERATURE),
                ("max_tokens", c.GEN_AI_REQUEST_MAX_TOKENS),
                ("max_completion_tokens", c.GEN_AI_REQUEST_MAX_TOKENS),
            ):
                if isinstance(params.get(key), int | float) and not isinstance(params[key], bool):
                    attributes[name] = params[key]
            if call.stream:
                attributes[c.GEN_AI_REQUEST_STREAM] = True
            if isinstance(tools, Sequence):
                for i, tool in enumerate(tools[:_MAX_LISTED]):
                    attributes[f"{c.LLM_TOOLS}.{i}.{c.TOOL_JSON_SCHEMA}"] = enc.json(tool)
            messages = list(call.inputs or ())
            attributes.update(self._messages(c.LLM_INPUT_MESSAGES, messages))
            attributes[c.INPUT_VALUE] = enc.json(
                [m.model_dump(exclude_none=True, exclude_defaults=True) for m in messages]
            )
            attributes[c.INPUT_MIME_TYPE] = c.JSON
            if call.template is not None:
                attributes[c.LLM_PROMPT_TEMPLATE] = enc.text(str(call.template))
            if call.variables:
                attributes[c.LLM_PROMPT_TEMPLATE_VARIABLES] = enc.json(dict(call.variables))
        elif call.kind == "embedding":
            attributes[c.GEN_AI_OPERATION_NAME] = c.OP_EMBEDDINGS
            if call.model:
                attributes[c.EMBEDDING_MODEL_NAME] = call.model
            texts = list(call.inputs or ())
            for i, text in enumerate(texts[:_MAX_LISTED]):
                attributes[f"{c.EMBEDDING_EMBEDDINGS}.{i}.{c.EMBEDDING_TEXT}"] = enc.text(str(text))
            attributes[c.INPUT_VALUE] = enc.json(texts)
            attributes[c.INPUT_MIME_TYPE] = c.JSON
        elif call.kind == "rerank":
            query, hits = call.inputs
            if call.model:
                attributes[c.RERANKER_MODEL_NAME] = call.model
            attributes[c.RERANKER_QUERY] = attributes[c.INPUT_VALUE] = enc.text(str(query))
            attributes[c.INPUT_MIME_TYPE] = c.TEXT
            top_n = call.params.get("top_n")
            if isinstance(top_n, int):
                attributes[c.RERANKER_TOP_K] = top_n
            attributes.update(self._documents(c.RERANKER_INPUT_DOCUMENTS, hits))
        span.set_attributes(attributes)

    def _response_attributes(self, span: Span, call: ProviderCall) -> None:
        enc = self.encoder
        output = call.output
        if call.kind == "llm" and output is not None:
            attributes = self._messages(c.LLM_OUTPUT_MESSAGES, [output])
            text, mime = enc.value(output)
            attributes[c.OUTPUT_VALUE], attributes[c.OUTPUT_MIME_TYPE] = text, mime
            finish = getattr(output, "finish_reason", None)
            if isinstance(finish, str):
                attributes[c.GEN_AI_RESPONSE_FINISH_REASONS] = [finish]
            served_by = getattr(output, "model_name", None)
            if isinstance(served_by, str) and served_by:  # e.g. the fallback that answered
                attributes[c.GEN_AI_RESPONSE_MODEL] = attributes[c.LLM_MODEL_NAME] = served_by
            span.set_attributes(attributes)
        elif call.kind == "embedding" and output is not None:
            dims = {len(vector) for vector in output}
            span.set_attribute(c.OUTPUT_VALUE, f"{len(output)} vectors of {sorted(dims)} dims")
            span.set_attribute(c.OUTPUT_MIME_TYPE, c.TEXT)
        elif call.kind == "rerank" and output is not None:
            span.set_attributes(self._documents(c.RERANKER_OUTPUT_DOCUMENTS, output))

    def _usage_attributes(self, span: Span, call: ProviderCall) -> None:
        usage = call.usage
        if usage is None:
            return
        attributes: dict[str, Any] = {
            c.LLM_TOKEN_COUNT_PROMPT: usage.prompt_tokens,
            c.LLM_TOKEN_COUNT_TOTAL: usage.total_tokens,
            c.GEN_AI_USAGE_INPUT_TOKENS: usage.prompt_tokens,
        }
        if call.kind == "llm":
            attributes[c.LLM_TOKEN_COUNT_COMPLETION] = usage.completion_tokens
            attributes[c.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.completion_tokens
        if usage.cached_tokens:
            attributes[c.LLM_TOKEN_COUNT_CACHE_READ] = usage.cached_tokens
            attributes[c.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cached_tokens
        if usage.reasoning_tokens:
            attributes[c.LLM_TOKEN_COUNT_REASONING] = usage.reasoning_tokens
            attributes[c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
        price = self.pricing.get(call.model) if self.pricing and call.model else None
        if price is not None:
            input_cost = prompt_cost(price, usage)  # cache reads and writes at their own rates
            completion_cost = usage.completion_tokens * price[1] / 1e6
            attributes[c.LLM_COST_PROMPT] = input_cost
            attributes[c.LLM_COST_COMPLETION] = completion_cost
            attributes[c.LLM_COST_TOTAL] = input_cost + completion_cost
        span.set_attributes(attributes)

    # ------------------------------------------------------------------ flattened lists

    def _messages(self, prefix: str, messages: Sequence[Any]) -> dict[str, Any]:
        enc = self.encoder
        out: dict[str, Any] = {}
        for i, message in enumerate(messages):
            head = f"{prefix}.{i}."
            role = getattr(message, "role", None)
            if role is not None:
                out[head + c.MESSAGE_ROLE] = str(getattr(role, "value", role))
            content = getattr(message, "content", None)
            if isinstance(content, str) and content:
                out[head + c.MESSAGE_CONTENT] = enc.text(content)
            tool_call_id = getattr(message, "tool_call_id", None)
            if tool_call_id:
                out[head + c.MESSAGE_TOOL_CALL_ID] = str(tool_call_id)
            for j, request in enumerate(getattr(message, "tool_calls", None) or ()):
                call_head = f"{head}{c.MESSAGE_TOOL_CALLS}.{j}."
                if request.id:
                    out[call_head + c.TOOL_CALL_ID] = str(request.id)
                out[call_head + c.TOOL_CALL_FUNCTION_NAME] = request.function.name
                out[call_head + c.TOOL_CALL_FUNCTION_ARGUMENTS] = enc.text(
                    request.function.arguments
                )
        return out

    def _documents(self, prefix: str, hits: Sequence[Any]) -> dict[str, Any]:
        enc = self.encoder
        out: dict[str, Any] = {}
        for i, hit in enumerate(list(hits)[:_MAX_LISTED]):
            head = f"{prefix}.{i}."
            out[head + c.DOCUMENT_ID] = str(hit.id)
            out[head + c.DOCUMENT_CONTENT] = enc.text(str(hit.document))
            out[head + c.DOCUMENT_SCORE] = float(hit.score)
            if hit.metadata:
                out[head + c.DOCUMENT_METADATA] = enc.json(hit.metadata)
        return out


# ---------------------------------------------------------------------- helpers

_KIND_BY_TYPE: dict[type, str] = {}


def _module_kind(module: Module) -> str:
    cls = type(module)
    kind = _KIND_BY_TYPE.get(cls)
    if kind is None:
        kind = getattr(cls, "span_kind", None)
        if kind not in c.SPAN_KINDS:
            kind = _builtin_kind(module)
        _KIND_BY_TYPE[cls] = kind
    return kind


def _builtin_kind(module: Module) -> str:
    from ..agents.base_agent import BaseAgent
    from ..modules.llm_reranker import LLMReranker
    from ..modules.retrieval import RetrievalModule
    from ..rerankers.rrf import RRFReranker
    from ..tools.tool import Tool

    if isinstance(module, Tool):
        return c.TOOL
    if isinstance(module, BaseAgent):
        return c.AGENT
    if isinstance(module, RetrievalModule):
        return c.RETRIEVER
    if isinstance(module, LLMReranker | RRFReranker):
        return c.RERANKER
    return c.CHAIN


def _call_input(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What a module was called with; arguments left at None are not shown."""
    while args and args[-1] is None:
        args = args[:-1]
    kwargs = {key: value for key, value in kwargs.items() if value is not None}
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args:
        return kwargs or None
    return {"args": list(args), "kwargs": kwargs} if kwargs else list(args)


def _is_hit_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(hasattr(item, "document") and hasattr(item, "score") for item in value)
    )


def _scalar(enc: ValueEncoder, value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return enc.text(value)
    return enc.json(value)


def _provider_secrets(provider: Any) -> Iterator[str]:
    """The credentials a provider holds, to keep them out of every attribute."""
    secrets = getattr(provider, "secrets", None)  # OpenAIEndpoint, OpenAILikeReranker
    if callable(secrets):
        try:
            values = tuple(secrets())
        except Exception:
            values = ()
        yield from (value for value in values if isinstance(value, str))
