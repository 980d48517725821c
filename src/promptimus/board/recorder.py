"""`record(path)`: every module call, agent run and model call made after it, kept in one SQLite
file for the board (see `store.py` for the tables).

It plugs into the two seams tracing uses, patching nothing: the module call interceptor (a span
per module call; an outermost call is a run) and the provider call observers (a span per model,
embedding or rerank request, with its messages, reply, usage and cost). When a call ends, its
row is made on the calling thread (JSON text, secrets redacted: tens of microseconds) and put on
a queue; a background thread writes the rows in batches, one transaction per batch, within
`batch_seconds`. (Making the rows on that thread instead would hold the interpreter lock against
the runs.) `flush()`, `close()` (also at the end of `with record(...)`) and the interpreter's
exit write whatever is queued, so a run that finished is never lost.

Secrets: the keys every provider holds (`provider.secrets()`), and the values of environment
variables whose names say KEY, TOKEN, SECRET or PASSWORD, are replaced by `[REDACTED]` in every
text written, request options that carry credentials (headers, api_key) are dropped, and error
texts are scrubbed the way provider errors are (`transport.secret_scrub.redact_secrets`).
"""

from __future__ import annotations

import atexit
import contextvars
import json
import logging
import os
import queue
import re
import threading
import time
import traceback
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.hooks import CallNext, RemovableHandle, register_module_call_interceptor
from ..core.module import Module
from ..dto.message import History, Message
from ..errors import ApprovalRequired, InvalidArgument
from ..observe.module_path import absolute_path
from ..observe.pricing import Pricing, check_pricing, cost_of
from ..observe.provider_calls import ProviderCall, register_provider_call_observer
from ..sqlite_file import SQLiteFile
from ..tracing.attribute_values import ValueEncoder
from ..transport.secret_scrub import redact_secrets
from .store import SCHEMA

__all__ = ["Recording", "record"]

_log = logging.getLogger(__name__)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
_PROVIDER_KIND = {"llm": "LLM", "embedding": "EMBEDDING", "rerank": "RERANKER"}
_MAX_BATCH = 2000
_LEAN: Any = {"__all__": {"thinking"}}


class _Span:
    """One module or provider call while it runs; its row is made when it ends."""

    __slots__ = (
        "_root",
        "args",
        "completion_tokens",
        "cost",
        "ended",
        "error",
        "id",
        "kind",
        "model",
        "name",
        "output",
        "parent",
        "prompt_tokens",
        "started",
        "tokens",
    )

    def __init__(self, name: str, kind: str, parent: _Span | None, args: Any) -> None:
        self.id = uuid.uuid4().hex[:16]
        self.name = name
        self.kind = kind
        self.parent = parent
        self._root = None if parent is None else parent.run  # not `self`: no reference cycle
        self.args = args
        self.started = time.time()
        self.ended: float | None = None
        self.output: Any = None
        self.error: BaseException | None = None
        self.model: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cost: float | None = None
        self.tokens = 0  # on a run's root: the tokens of every model call in it

    @property
    def run(self) -> _Span:
        """The span of the run this one belongs to (itself for a run's outermost call)."""
        return self if self._root is None else self._root


_current: contextvars.ContextVar[_Span | None] = contextvars.ContextVar(
    "promptimus_board_span", default=None
)
_STOP = object()


class Recording:
    """An active recording (see `record`): `flush()`, `close()`, or use it with `with`."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        pricing: Pricing | None = None,
        max_value_chars: int = 32_000,
        batch_seconds: float = 0.05,
    ) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidArgument(f"record(path) takes a file path, got {type(path).__name__}.")
        if not (isinstance(batch_seconds, int | float) and 0 <= batch_seconds <= 10):
            raise InvalidArgument(f"batch_seconds must be in [0, 10], got {batch_seconds!r}.")
        self.path = Path(path)
        if self.path.is_dir():
            raise InvalidArgument(f"{self.path} is a folder; record(path) takes a .sqlite file.")
        self.pricing = check_pricing(pricing)
        self.encoder = ValueEncoder(max_value_chars)
        self.encoder.add_secrets(
            value for name, value in os.environ.items() if _SECRET_ENV.search(name)
        )
        self.batch_seconds = float(batch_seconds)
        self.written = 0  # rows written so far (spans and runs)
        self._seen_providers: set[int] = set()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._hurry = threading.Event()  # set by flush and close: write now
        self._file = SQLiteFile(self.path, busy_timeout=30.0)
        with self._file.using() as db:
            db.executescript(SCHEMA)  # a bad path fails here, in the caller
        self._thread = threading.Thread(target=self._write_loop, name="promptimus-board-writer")
        self._thread.daemon = True
        self._thread.start()
        self._handles: list[RemovableHandle] = [
            register_module_call_interceptor(self._intercept),
            register_provider_call_observer(self),
        ]
        atexit.register(self.close)

    # ------------------------------------------------------------------ lifecycle

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything queued so far is written."""
        if not self._thread.is_alive():
            return
        done = threading.Event()
        self._queue.put(done)
        self._hurry.set()
        done.wait(timeout)

    def close(self) -> None:
        """Stop recording, write what is queued, close the file (idempotent)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._hurry.set()
            self._thread.join(60.0)
        atexit.unregister(self.close)

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Recording({str(self.path)!r}, active={self.active})"

    # ------------------------------------------------------------------ the seams

    async def _intercept(
        self, module: Module, call_next: CallNext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        parent = _current.get()
        for provider in module.own_providers().values():
            self._learn_secrets(provider)
        span = _Span(absolute_path(module), _module_kind(module), parent, (args, kwargs))
        if parent is None:
            self._put("run", span)
        token = _current.set(span)
        try:
            span.output = await call_next(args, kwargs)
            return span.output
        except BaseException as exc:
            span.error = exc
            raise
        finally:
            _current.reset(token)
            span.ended = time.time()
            self._put("span", span)
            if parent is None:
                self._put("run", span)

    def on_start(self, call: ProviderCall) -> None:
        self._learn_secrets(call.provider)
        parent = _current.get()
        where = absolute_path(call.module) if call.module is not None else "root"
        kind = _PROVIDER_KIND.get(call.kind, call.kind.upper())
        inputs = list(call.inputs) if call.kind != "rerank" else call.inputs
        span = _Span(f"{where}.{call.kind}", kind, parent, inputs)
        call.state[self] = span

    def on_end(self, call: ProviderCall) -> None:
        span = call.state.pop(self, None)
        if not isinstance(span, _Span):
            return
        span.ended = time.time()
        span.output, span.error, span.model = call.output, call.error, call.model
        usage = call.usage
        if usage is not None:
            span.prompt_tokens = usage.prompt_tokens
            span.completion_tokens = usage.completion_tokens if call.kind == "llm" else None
            span.cost = cost_of(self.pricing, call.model, usage)
            span.run.tokens += usage.total_tokens
            if span.cost is not None:
                span.run.cost = (span.run.cost or 0.0) + span.cost
        self._put("span", span)
        if span.parent is None:  # a model called outside any module: a run of its own
            self._put("run", span)

    def _put(self, kind: str, span: _Span) -> None:
        """Queue a span's or a run's row for the writer thread. The values are turned into
        text here, on the calling thread: a thread of pure Python work beside the runs would
        hold the interpreter lock against them, which costs them more than the work itself."""
        try:
            row = self._span_row(span) if kind == "span" else self._run_row(span)
        except Exception:  # recording must never break or change the user's call
            _log.debug("promptimus.board could not record %s", span.name, exc_info=True)
            return
        self._queue.put((kind, json.dumps(row, ensure_ascii=False)))

    def _learn_secrets(self, provider: Any) -> None:
        if id(provider) in self._seen_providers:
            return
        self._seen_providers.add(id(provider))
        secrets = getattr(provider, "secrets", None)
        if callable(secrets):
            try:
                self.encoder.add_secrets(value for value in secrets() if isinstance(value, str))
            except Exception:
                _log.debug("could not read a provider's secrets", exc_info=True)

    # ------------------------------------------------------------------ the writer thread

    def _write_loop(self) -> None:
        stop = False
        while not stop:
            batch = [self._queue.get()]
            if batch[0] is not _STOP and not isinstance(batch[0], threading.Event):
                self._hurry.wait(self.batch_seconds)  # let a batch gather, unless flushed
            self._hurry.clear()
            for _ in range(_MAX_BATCH):
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(item is _STOP for item in batch)
            try:
                self._write(batch)
            except Exception:  # a full disk must not break the user's runs
                _log.exception("promptimus.board could not write %d records", len(batch))
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
        self._file.close()

    def _write(self, batch: list[Any]) -> None:
        """One transaction for the batch, each table's rows passed as one JSON array: the
        thread takes the interpreter lock a few times per batch rather than twice a row (each
        time it does, a busy run may wait for it)."""
        spans: list[str] = []
        runs: list[str] = []
        for item in batch:
            if isinstance(item, tuple):
                (spans if item[0] == "span" else runs).append(item[1])
        if not spans and not runs:
            return
        with self._file.using() as db:
            self._file.begin(db)
            try:
                if spans:
                    db.execute(_INSERT_SPANS, ("[" + ",".join(spans) + "]",))
                if runs:
                    db.execute(_INSERT_RUNS, ("[" + ",".join(runs) + "]",))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self.written += len(spans) + len(runs)

    def _span_row(self, span: _Span) -> tuple[Any, ...]:
        enc = self.encoder
        inputs: str | None
        output: str | None
        if span.kind in _PROVIDER_KIND.values():
            inputs = _messages_json(enc, span.args) if span.kind == "LLM" else enc.json(span.args)
            output = None if span.output is None else _message_json(enc, span.output)
        else:
            args, kwargs = span.args
            inputs = _encode(enc, call_input(args, kwargs))
            output = None if span.output is None else _encode(enc, _plain_output(span.output))
        return (
            span.id,
            span.run.id,
            None if span.parent is None else span.parent.id,
            span.name,
            span.kind,
            span.started,
            span.ended,
            _status(span),
            self._error_text(span.error, full=True),
            inputs,
            output,
            span.model,
            span.prompt_tokens,
            span.completion_tokens,
            span.cost,
        )

    def _run_row(self, span: _Span) -> tuple[Any, ...]:
        enc = self.encoder
        ended = span.ended
        answer = None
        if ended is not None and span.error is None and span.output is not None:
            answer = _encode(enc, _answer(span.output))
        return (
            span.id,
            span.name,
            _request_text(enc, span),
            _status(span) if ended is not None else "running",
            span.started,
            ended,
            span.tokens,
            span.cost,
            self._error_text(span.error, full=False),
            answer,
        )

    def _error_text(self, error: BaseException | None, *, full: bool) -> str | None:
        if error is None or isinstance(error, ApprovalRequired):
            return None
        if full:
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            text = f"{type(error).__name__}: {error}"
        return self.encoder.text(redact_secrets(text, self.encoder.secrets))


def record(
    path: str | os.PathLike[str],
    *,
    pricing: Pricing | None = None,
    max_value_chars: int = 32_000,
    batch_seconds: float = 0.05,
) -> Recording:
    """Record every module call, agent run and model call made from now on into the SQLite file
    `path` (created if missing; runs already in it stay), for `promptimus board path`.

    - `pricing`: `{model: (input, output[, cached_input])}` per million tokens: each model
      call's cost, and each run's, is kept too.
    - `max_value_chars`: longer texts (inputs, outputs, messages) are cut, saying how much.
    - `batch_seconds`: how long the writer thread lets records gather before a write.

    Returns the `Recording`: `close()` it (or use `with record(path):`) to stop; what was
    queued is written then, and at the interpreter's exit.
    """
    return Recording(
        path, pricing=pricing, max_value_chars=max_value_chars, batch_seconds=batch_seconds
    )


# ---------------------------------------------------------------------- value helpers

_KIND_BY_TYPE: dict[type, str] = {}
_SPAN_KINDS = {"AGENT", "CHAIN", "TOOL", "RETRIEVER", "RERANKER", "LLM", "EMBEDDING"}


def _module_kind(module: Module) -> str:
    cls = type(module)
    kind = _KIND_BY_TYPE.get(cls)
    if kind is None:
        chosen = getattr(cls, "span_kind", None)
        kind = chosen if chosen in _SPAN_KINDS else _builtin_kind(module)
        _KIND_BY_TYPE[cls] = kind
    return kind


def _builtin_kind(module: Module) -> str:
    from ..agents.base_agent import BaseAgent
    from ..tools.tool import Tool

    if isinstance(module, Tool):
        return "TOOL"
    if isinstance(module, BaseAgent):
        return "AGENT"
    return "CHAIN"


def call_input(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """What a module was called with; arguments left at None are not shown."""
    while args and args[-1] is None:
        args = args[:-1]
    shown = {key: value for key, value in kwargs.items() if value is not None}
    if len(args) == 1 and not shown:
        return args[0]
    if not args:
        return shown or None
    return {"args": list(args), "kwargs": shown} if shown else list(args)


def _encode(enc: ValueEncoder, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Message):
        return _message_json(enc, value)
    return enc.json(value)


def _message_json(enc: ValueEncoder, message: Any) -> str:
    if isinstance(message, Message):
        raw = message.model_dump_json(
            exclude_none=True, exclude_defaults=True, exclude={"thinking"}
        )
        return enc.text(raw)
    return enc.json(message)


def _messages_json(enc: ValueEncoder, messages: Any) -> str:
    """Messages as JSON in one pass of pydantic's serializer: fields left at their defaults,
    and the raw thinking blocks only the provider needs back, are left out."""
    if isinstance(messages, list) and all(isinstance(m, Message) for m in messages):
        raw = History.dump_json(
            messages, exclude_none=True, exclude_defaults=True, exclude=_LEAN
        ).decode()
        return enc.text(raw)
    return enc.json(messages)


def _plain_output(output: Any) -> Any:
    status = getattr(output, "status", None)
    if isinstance(status, str) and hasattr(output, "pending") and hasattr(output, "record"):
        if status == "completed":
            return output.output
        return {"status": status, "pending": [vars_of(call) for call in output.pending]}
    return output


def vars_of(value: Any) -> dict[str, Any]:
    """A slotted dataclass (a pending tool call) as a dict."""
    names = getattr(value, "__slots__", None) or getattr(value, "__dict__", {})
    return {name: getattr(value, name, None) for name in names}


def _answer(output: Any) -> Any:
    plain = _plain_output(output)
    content = getattr(plain, "content", None)
    return content if isinstance(content, str) else plain


def _status(span: _Span) -> str:
    if isinstance(span.error, ApprovalRequired):  # a run paused for a person's decision
        return "needs_approval"
    if span.error is not None:
        return "error"
    status = getattr(span.output, "status", None)
    if status == "needs_approval":
        return "needs_approval"
    return "ok"


def _request_text(enc: ValueEncoder, span: _Span) -> str:
    if span.kind in _PROVIDER_KIND.values():
        messages = span.args if isinstance(span.args, list) else []
    else:
        value = call_input(*span.args)
        messages = value if isinstance(value, list) else [value]
    for message in reversed(messages):
        if isinstance(message, str):
            return enc.text(message)
        role = str(getattr(getattr(message, "role", None), "value", ""))
        content = getattr(message, "content", None)
        if role == "user" and isinstance(content, str):
            return enc.text(content)
    value = messages[-1] if messages else None
    return "" if value is None else (enc.json(value) if not isinstance(value, str) else value)


def _insert_from_json(table: str, columns: int) -> str:
    values = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(columns))
    return f"INSERT OR REPLACE INTO {table} SELECT {values} FROM json_each(?)"


_INSERT_SPANS = _insert_from_json("spans", 15)
_INSERT_RUNS = _insert_from_json("runs", 10)
