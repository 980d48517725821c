"""`record(path)`: every module call, agent run and model call made after it, kept in one SQLite
file for the board (see `store.py` for the tables).

It plugs into the two seams tracing uses, patching nothing: the module call interceptor (a span
per module call; an outermost call is a run) and the provider call observers (a span per model,
embedding or rerank request, with its messages, reply, usage and cost). The calling thread only
notes what happened (references to the arguments, result or error, two clock readings: a few
microseconds a call) and puts it on a queue; a background thread names each span, turns its values
into JSON (a message once per batch, however many histories hold it) and writes the batch in one
transaction. It writes when the runs pause (`batch_seconds` after the first record of a batch,
once no call has ended for 5 ms: they wait for a model, so the work takes nothing from them),
and at least once a second when they never pause. Lists a call was
given or returned, dicts and pydantic models (not messages) are shallow-copied when it happens,
so a memory appending to a history, or a caller changing a dict or a model afterwards, does not
change what was recorded. `flush()`, `close()` (also at the end of `with record(...)`) and the
interpreter's exit write whatever is queued, so a run that finished is never lost. A forked
child (`os.fork`, multiprocessing) records its own runs, with a writer thread of its own.

What a tool reports while it runs (`ctx.progress(...)`, a "tool_progress" event to the provider
call observers) goes through the same queue: its run, tool call, message (cut at
`_PROGRESS_CHARS`) and fraction, written while the run runs, so a running run's page shows how
far its tools got; the latest `_MAX_PROGRESS` reports of each run are kept.

Secrets: the keys every provider holds (`provider.secrets()`: those of every provider in a
run's module tree, learnt before its first row is made, and of the providers a wrapper such as
`FallbackLLM` holds), and the values of environment variables whose names say KEY, TOKEN, SECRET
or PASSWORD (read again before each write), are replaced by `[REDACTED]` in every text written,
as are the passwords of URLs (`postgresql://user:password@host`); request options that carry
credentials (headers, api_key) are dropped, and error texts are scrubbed the way provider
errors are (`transport.secret_scrub.redact_secrets`).
"""

from __future__ import annotations

import atexit
import contextvars
import itertools
import logging
import math
import os
import queue
import sqlite3
import threading
import time
import traceback
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..agents.run_state import RunState, resuming
from ..argument_checks import finite_number, positive_int
from ..core.hooks import (
    CallNext,
    RemovableHandle,
    register_module_call_interceptor,
    revised_call_input,
)
from ..core.module import Module
from ..core.session import current_session
from ..dto.message import Message
from ..dto.usage import Usage
from ..errors import ApprovalRequired, GuardrailTripped, InvalidArgument
from ..guardrails.guardrail import Guardrail
from ..observe.module_path import absolute_path
from ..observe.pricing import Pricing, check_pricing, cost_of
from ..observe.provider_calls import ProviderCall, register_provider_call_observer
from ..sqlite_file import SQLiteFile
from ..tracing.attribute_values import ValueEncoder
from ..transport.secret_scrub import redact_secrets
from .redaction import BoardEncoder, secret_env_values
from .store import create

__all__ = ["Recording", "record"]

_log = logging.getLogger(__name__)
_PROVIDER_KIND = {"llm": "LLM", "embedding": "EMBEDDING", "rerank": "RERANKER"}
_MAX_BATCH = 2000
_QUIET = 0.005
_MAX_DELAY = 1.0
_MAX_PROGRESS = 200  # tool progress reports kept per run: a chatty tool cannot fill the file
_PROGRESS_CHARS = 500  # a progress message is a line, not a document


class _Span:
    """One module or provider call. The calling thread only fills in what happened (references,
    times); the writer thread names it, gives it its id and turns it into a row."""

    __slots__ = (
        "_root",
        "args",
        "call_kind",
        "cost",
        "ended",
        "error",
        "id",
        "kind",
        "model",
        "module",
        "name",
        "output",
        "parent",
        "provider",
        "resumes",
        "session",
        "started",
        "tokens",
        "usage",
        "withheld",
    )

    def __init__(self, module: Module | None, kind: str | None, parent: _Span | None) -> None:
        self.module = module
        self.kind = kind  # a module call's is found by the writer
        self.parent = parent
        self._root = None if parent is None else parent.run  # not `self`: no reference cycle
        self.started = time.time()
        self.ended: float | None = None
        self.args: Any = None
        self.output: Any = None
        self.error: BaseException | None = None
        self.call_kind: str | None = None  # "llm", "embedding", "rerank" for a provider call
        self.provider: Any = None
        self.model: str | None = None
        self.usage: Usage | None = None
        self.resumes: RunState | None = None  # on a run's root: the paused run it goes on with
        self.session: str | None = None  # on a run's root: the conversation it was a turn of
        self.withheld = False  # on a run's root: its request is shown once the run has ended
        # set by the writer thread alone
        self.id: str | None = None
        self.name: str | None = None
        self.tokens = 0  # on a run's root: the tokens of every model call in it
        self.cost: float | None = None

    @property
    def run(self) -> _Span:
        """The span of the run this one belongs to (itself for a run's outermost call)."""
        return self if self._root is None else self._root


class _Progress:
    """One `ctx.progress(...)` report, as the calling thread noted it."""

    __slots__ = ("at", "fraction", "message", "run", "tool", "tool_call_id")

    def __init__(self, run: _Span, attributes: Mapping[str, Any]) -> None:
        self.run = run
        self.tool = str(attributes.get("tool") or "")
        self.tool_call_id = str(attributes.get("tool_call_id") or "")
        self.message = str(attributes.get("message") or "")
        fraction = attributes.get("fraction")
        self.fraction = (
            float(fraction)
            if isinstance(fraction, int | float)
            and not isinstance(fraction, bool)
            and math.isfinite(fraction)
            else None
        )
        self.at = time.time()


_STOP = object()


_open_recordings: weakref.WeakSet[Recording] = weakref.WeakSet()
_open_lock = threading.Lock()  # recordings open and close on any thread


def _open_now() -> list[Recording]:
    with _open_lock:
        return list(_open_recordings)


def _after_fork_in_child() -> None:
    global _open_lock
    _open_lock = threading.Lock()  # another thread may have held it: the child has one thread
    for recording in list(_open_recordings):
        recording._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _close_at_process_exit(recording: Recording) -> None:
    from multiprocessing import util as mp_util

    if recording.active:
        mp_util.Finalize(None, recording.close, exitpriority=100)


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
        if finite_number(batch_seconds, "batch_seconds") > 10:
            raise InvalidArgument(f"batch_seconds must be in [0, 10], got {batch_seconds!r}.")
        if positive_int(max_value_chars, "max_value_chars") < 64:
            raise InvalidArgument(f"max_value_chars must be >= 64, got {max_value_chars!r}.")
        self.path = Path(path)
        if self.path.is_dir():
            raise InvalidArgument(f"{self.path} is a folder; record(path) takes a .sqlite file.")
        self.pricing = check_pricing(pricing)
        self.encoder = BoardEncoder(int(max_value_chars))
        self.encoder.add_secrets(secret_env_values())
        self.batch_seconds = float(batch_seconds)
        self.written = 0  # rows written so far (spans and runs)
        # span ids: unique across the processes writing one file, cheap to make. 64 random
        # bits: with 32, a file recorded into by ten thousand processes over its life had a
        # one in a hundred chance that two shared a prefix, and the later one's rows replaced
        # the earlier one's
        self._id_prefix = uuid.uuid4().hex[:16]
        self._ids = itertools.count(1)
        # the span under way, this recording's own: two recordings at once (two files, or one
        # file twice) each keep their own trees
        self._current: contextvars.ContextVar[_Span | None] = contextvars.ContextVar(
            f"promptimus_board_span_{self._id_prefix}", default=None
        )
        self._start_writer()
        self._opened.wait()
        if self._open_error is not None:  # a bad path fails here, in the caller
            self._thread.join()
            raise InvalidArgument(
                f"record({str(self.path)!r}) cannot open that file ({self._open_error}); give "
                "a .sqlite file in a folder that exists and that you may write to."
            ) from self._open_error
        where = self.path.resolve()
        for other in _open_now():  # one recording per file: the new one takes over
            if other.path.resolve() == where:
                other.close()
        self._handles: list[RemovableHandle] = [
            register_module_call_interceptor(self._intercept),
            register_provider_call_observer(self),
        ]
        atexit.register(self.close)
        with _open_lock:
            _open_recordings.add(self)
        from multiprocessing import util as mp_util

        # a multiprocessing child ends with os._exit, after its own exit handlers, not atexit
        mp_util.register_after_fork(self, _close_at_process_exit)

    def _start_writer(self) -> None:
        """A queue and the writer thread; the thread opens the file (its connection is its
        own), then sets `_opened`."""
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._hurry = threading.Event()  # set by flush and close: write now
        self._file = SQLiteFile(self.path, busy_timeout=30.0)
        self._opened = threading.Event()
        self._open_error: BaseException | None = None
        self._running: dict[int, _Span] = {}  # runs started and not ended (writer's own)
        self._thread = threading.Thread(target=self._write_loop, name="promptimus-board-writer")
        self._thread.daemon = True
        self._thread.start()

    def _after_fork(self) -> None:
        """In a forked child, which has none of its parent's threads: a writer of its own, with
        span ids of its own (the parent's counter would make the same ones, and the rows would
        replace each other). What the parent had queued is the parent's to write."""
        self._id_prefix = uuid.uuid4().hex[:16]
        self._ids = itertools.count(1)
        self._start_writer()

    # ------------------------------------------------------------------ lifecycle

    @property
    def active(self) -> bool:
        return bool(self._handles)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until everything queued so far is written."""
        self._written(timeout)

    def close(self) -> None:
        """Stop recording, write what is queued, close the file (idempotent). A run under way
        is still kept as it ends (its calls made from now on are not): the file is closed once
        the last of them has ended."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._written(60.0)
            if not self._running:
                self._thread.join(60.0)
        atexit.unregister(self.close)
        with _open_lock:
            _open_recordings.discard(self)

    def _written(self, timeout: float) -> None:
        """Wait until what is queued now is written (not past the writer thread's end)."""
        if not self._thread.is_alive():
            return
        done = threading.Event()
        self._queue.put(done)
        self._hurry.set()
        deadline = time.monotonic() + timeout
        while not done.wait(min(0.25, max(0.0, deadline - time.monotonic()))):
            if not self._thread.is_alive() or time.monotonic() >= deadline:
                return

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Recording({str(self.path)!r}, active={self.active})"

    # ------------------------------------------------------------------ the seams
    # On the calling thread: a few attribute writes and a queue put per call. Lists, dicts and
    # models are copied (a memory appends to the list a prompt was called with, after the call).

    async def _intercept(
        self, module: Module, call_next: CallNext, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        current = self._current
        parent = current.get()
        span = _Span(module, None, parent)
        span.args = (_copied(args), _copied_kwargs(kwargs))
        put = self._queue.put
        if parent is None:
            # a run whose input guardrails may redact it shows its request once they decided
            span.withheld = "guardrails" in module._submodules
            span.resumes = resuming()
            session = current_session()
            span.session = None if session is None else session.name
            put(("run", span))  # shown as running until it ends
        token = current.set(span)
        try:
            output = await call_next(args, kwargs)
        except BaseException as exc:
            span.error = exc
            raise
        else:
            span.output = _copy(output)
            return output
        finally:
            current.reset(token)
            revised = revised_call_input()  # an input guardrail redacted the request
            if revised is not None:
                span.args = (_copied(revised[0]), _copied_kwargs(revised[1]))
            span.ended = time.time()  # last: the writer reads a span as ended once this is set
            put(("end", span))

    def on_start(self, call: ProviderCall) -> None:
        kind = _PROVIDER_KIND.get(call.kind) or call.kind.upper()
        span = _Span(call.module, kind, self._current.get())
        span.call_kind = call.kind
        span.provider = call.provider
        span.args = list(call.inputs) if call.kind != "rerank" else call.inputs
        call.state[self] = span

    def on_end(self, call: ProviderCall) -> None:
        span = call.state.pop(self, None)
        if not isinstance(span, _Span):
            return
        span.output, span.error, span.model, span.usage = (
            call.output,
            call.error,
            call.model,
            call.usage,
        )
        span.ended = time.time()
        self._queue.put(("end", span))

    def on_event(self, module: Module, name: str, attributes: Mapping[str, Any]) -> None:
        """A tool's progress report, kept with the run under way (none: not recorded)."""
        if name != "tool_progress":
            return
        span = self._current.get()
        if span is not None:
            self._queue.put(("progress", _Progress(span.run, attributes)))

    # ------------------------------------------------------------------ the writer thread

    def _wait_for_a_pause(self) -> None:
        """Until the runs pause (no call ended for `_QUIET` seconds: they wait for a model, and
        the writing takes nothing from them), a flush or close hurries, or `_MAX_DELAY` has
        passed (runs that never pause are written that often)."""
        deadline = time.monotonic() + _MAX_DELAY
        seen = self._queue.qsize()
        while not self._hurry.wait(_QUIET) and time.monotonic() < deadline:
            now = self._queue.qsize()
            if now == seen:
                return
            seen = now

    def _write_loop(self) -> None:
        try:
            with self._file.using() as db:
                create(db)
        except BaseException as exc:
            self._open_error = exc
            self._file.close()
            return
        finally:
            self._opened.set()
        stopping = False
        while not stopping or self._running:  # once stopped, until the runs under way end
            batch = [self._queue.get()]
            if batch[0] is not _STOP and not isinstance(batch[0], threading.Event):
                self._hurry.wait(self.batch_seconds)  # let a batch gather, unless flushed
                self._wait_for_a_pause()
            self._hurry.clear()
            for _ in range(_MAX_BATCH):
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stopping = stopping or any(item is _STOP for item in batch)
            self._note_running(batch)
            try:
                self._write(batch)
            except BaseException:  # a full disk must not break the user's runs (nor a value
                # raising what is not an Exception, CancelledError, stop this thread)
                _log.exception("promptimus.board could not write %d records", len(batch))
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
        self._file.close()

    def _note_running(self, batch: list[Any]) -> None:
        for item in batch:
            if type(item) is tuple:
                tag, span = item
                if tag == "progress":
                    continue
                if tag == "run":
                    self._running[id(span)] = span
                elif span.parent is None:
                    self._running.pop(id(span), None)

    def _write(self, batch: list[Any]) -> None:
        """Turn the batch's spans into rows and write them in one transaction."""
        items = [item for item in batch if isinstance(item, tuple) and item[0] != "progress"]
        reports = [item[1] for item in batch if isinstance(item, tuple) and item[0] == "progress"]
        if not items and not reports:
            return
        self._learn_secrets(items)
        rows = _Rows(self, self.encoder)
        spans: list[tuple[Any, ...]] = []
        runs: dict[int, _Span] = {}  # each run's row once per batch, made after its spans
        paths: dict[int, str] = {}
        for tag, span in items:
            try:
                self._name(span, paths)
                if span.parent is None:
                    runs[id(span)] = span
                if tag == "end":
                    run = self._count(span)
                    if run is not None and run.ended is not None:  # a straggler (gather)
                        runs[id(run)] = run  # its run's row again, with these tokens
                    spans.append(rows.span(span))
            except BaseException:  # a value that cannot be read must not cost the others
                _log.debug("promptimus.board could not record %s", span.name, exc_info=True)
        run_rows: list[tuple[Any, ...]] = []
        for span in runs.values():
            try:
                run_rows.append(rows.run(span))
            except BaseException:  # its values cannot be read: still kept, and shown as ended
                _log.debug("promptimus.board could not record run %s", span.name, exc_info=True)
                run_rows.append(rows.bare_run(span))
        progress = self._progress_rows(reports)
        if not spans and not run_rows and not progress:
            return
        with self._file.using() as db:
            self._file.begin(db)
            try:
                kept = _insert(db, _INSERT_SPANS, spans) + _insert(db, _INSERT_RUNS, run_rows)
                _insert(db, _INSERT_PROGRESS, progress)
                for run_id in {row[0] for row in progress}:  # the latest of each run kept
                    db.execute(_TRIM_PROGRESS, (run_id, run_id, _MAX_PROGRESS))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self.written += kept

    def _progress_rows(self, reports: list[_Progress]) -> list[tuple[Any, ...]]:
        """The rows of the batch's progress reports, the latest `_MAX_PROGRESS` of each run,
        secrets redacted and messages cut."""
        latest: dict[int, list[_Progress]] = {}
        for report in reports:
            latest.setdefault(id(report.run), []).append(report)
        enc = self.encoder
        if reports:
            enc.add_secrets(secret_env_values())
        found = []
        for kept in latest.values():
            for report in kept[-_MAX_PROGRESS:]:
                message = enc.redact(report.message)
                if len(message) > _PROGRESS_CHARS:
                    dropped = len(message) - _PROGRESS_CHARS
                    message = f"{message[:_PROGRESS_CHARS]}… [truncated {dropped} characters]"
                found.append(
                    (
                        self.span_id(report.run),
                        enc.redact(report.tool_call_id[:200]),
                        enc.redact(report.tool[:200]),
                        message,
                        report.fraction,
                        report.at,
                    )
                )
        return found

    def span_id(self, span: _Span | None) -> str | None:
        if span is None:
            return None
        if span.id is None:
            span.id = f"{self._id_prefix}{next(self._ids):08x}"
        return span.id

    def _name(self, span: _Span, paths: dict[int, str]) -> None:
        """The span's name (its module's path) and kind; `paths` holds the batch's paths, by
        module (the batch holds the modules, so no id is reused while it is written)."""
        if span.name is not None:
            return
        module = span.module
        where = "root"
        if module is not None:
            known = paths.get(id(module))
            where = paths[id(module)] = absolute_path(module) if known is None else known
        if span.call_kind is None:
            assert module is not None
            span.kind = _module_kind(module)
            if isinstance(module, Guardrail):  # by its name, not its place in a list
                where = f"{where.rpartition('.')[0] or where}.{module.name}"
            span.name = where
        else:
            span.name = f"{where}.{span.call_kind}"

    def _count(self, span: _Span) -> _Span | None:
        """Add a model call's tokens and cost to its run's; the run, if it had any."""
        usage = span.usage
        if usage is None or span.call_kind is None:
            return None
        span.cost = cost_of(self.pricing, span.model, usage)
        run = span.run
        run.tokens += usage.total_tokens
        if span.cost is not None:
            run.cost = (run.cost or 0.0) + span.cost
        return run

    def _learn_secrets(self, items: list[tuple[str, _Span]]) -> None:
        """Before any of the batch's rows is made: the secret environment variables as they are
        now (a `.env` file may be read after `record()`), and the keys of every provider the
        batch's calls used or could use. A run's start teaches the keys of every provider in
        its module's tree (its request is written before any of them is called), a wrapper's
        those of the providers it wraps."""
        enc = self.encoder
        enc.add_secrets(secret_env_values())
        providers: dict[int, Any] = {}  # held here, so no id is reused while this runs
        modules: dict[int, Module] = {}  # the trees of the runs that start
        for tag, span in items:
            try:
                if span.provider is not None:
                    _add_providers(providers, span.provider)
                elif tag == "run" and span.module is not None:
                    _tree_of(span.module, modules)
                elif span.module is not None:
                    for provider in span.module.own_providers().values():
                        _add_providers(providers, provider)
            except BaseException:  # a tree changed while it was read: its next call teaches it
                _log.debug("could not read a module's providers", exc_info=True)
        for module in modules.values():
            for provider in module.own_providers().values():
                _add_providers(providers, provider)
        for provider in providers.values():
            secrets = getattr(provider, "secrets", None)
            if callable(secrets):
                try:
                    enc.add_secrets(v for v in secrets() if isinstance(v, str))
                except BaseException:
                    _log.debug("could not read a provider's secrets", exc_info=True)


def _add_providers(found: dict[int, Any], provider: Any) -> None:
    """`provider`, and those it wraps (a `FallbackLLM`'s chain, a `CachedLLM`'s model)."""
    todo = [provider]
    while todo:
        one = todo.pop()
        if one is None or id(one) in found or len(found) > 10_000:
            continue
        found[id(one)] = one
        inner = getattr(one, "providers", None)
        if isinstance(inner, list | tuple):
            todo.extend(inner)
        todo.append(getattr(one, "llm", None))


def _tree_of(module: Module, seen: dict[int, Module]) -> None:
    """Every module of the trees `module` is in, from each root above it down, into `seen`
    (by id; a tree already there is not walked again)."""
    if id(module) in seen:
        return
    roots: list[Module] = []
    todo, above = [module], {id(module)}
    while todo:
        node = todo.pop()
        owners = list(node._live_owners())
        if not owners:
            roots.append(node)
        for owner in owners:
            if id(owner) not in above:
                above.add(id(owner))
                todo.append(owner)
    for root in roots:
        if id(root) not in seen:
            seen.update((id(node), node) for node in root.modules())


class _Rows:
    """Makes one batch's rows. A message is turned into JSON once per batch, however many
    histories hold it (a tool loop sends the same messages with every call)."""

    __slots__ = ("_messages", "enc", "recording")

    def __init__(self, recording: Recording, enc: ValueEncoder) -> None:
        self.recording = recording
        self.enc = enc
        self._messages: dict[int, tuple[Message, str]] = {}

    def message(self, message: Message) -> str:
        """The message as JSON, secrets redacted, not cut. Fields left at their defaults, and
        the raw thinking blocks only the provider needs back, are left out."""
        known = self._messages.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        raw = message.model_dump_json(
            exclude_none=True, exclude_defaults=True, exclude={"thinking"}
        )
        text = self.enc.redact(raw)
        self._messages[id(message)] = (message, text)
        return text

    def value(self, value: Any) -> str | None:
        """Any value as JSON text, messages and lists of messages through `message`."""
        if value is None:
            return None
        if isinstance(value, Message):
            return self.enc.cut(self.message(value))
        if type(value) is list and value and all(isinstance(m, Message) for m in value):
            return self.enc.cut("[" + ",".join(self.message(m) for m in value) + "]")
        return self.enc.json(value)

    def span(self, span: _Span) -> tuple[Any, ...]:
        ids = self.recording.span_id
        inputs: str | None
        if span.call_kind is not None:
            inputs = self.value(span.args)
            output = self.value(span.output)
        else:
            args, kwargs = span.args
            inputs = self.value(call_input(args, kwargs))
            output = self.value(_plain_output(span.output))
        usage = span.usage
        return (
            ids(span),
            ids(span.run),
            ids(span.parent),
            span.name,
            span.kind,
            span.started,
            span.ended,
            _status(span),
            self.error(span, full=True),
            inputs,
            output,
            span.model,
            None if usage is None else usage.prompt_tokens,
            usage.completion_tokens if usage is not None and span.call_kind == "llm" else None,
            span.cost,
        )

    def run(self, span: _Span) -> tuple[Any, ...]:
        ended = span.ended
        answer = None
        if ended is not None and span.error is None and span.output is not None:
            answer = self.value(_answer(span.output))
        paused = getattr(getattr(span.error, "result", None), "state", None)
        return (
            self.recording.span_id(span),
            span.name,
            "" if ended is None and span.withheld else _request_text(self.enc, span),
            _status(span) if ended is not None else "running",
            span.started,
            ended,
            span.tokens,
            span.cost,
            self.error(span, full=False),
            answer,
            getattr(paused, "id", None) if isinstance(span.error, ApprovalRequired) else None,
            None if span.resumes is None else span.resumes.id,
            span.session,
        )

    def bare_run(self, span: _Span) -> tuple[Any, ...]:
        """A run's row with what can be read of it: at least its status and times."""
        ended = span.ended
        try:
            status = _status(span) if ended is not None else "running"
        except BaseException:
            status = "error" if span.error is not None else "ok"
        try:
            request = _request_text(self.enc, span)
        except BaseException:
            request = ""
        return (
            self.recording.span_id(span),
            str(span.name),
            request,
            status,
            span.started,
            ended,
            span.tokens,
            span.cost,
            None,
            None,
            None,
            None,
            span.session,
        )

    def error(self, span: _Span, *, full: bool) -> str | None:
        error = span.error
        if span.ended is None or error is None or isinstance(error, ApprovalRequired):
            return None
        if full and not isinstance(error, GuardrailTripped):  # a verdict, not a failure
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        else:
            try:
                shown = str(error)
            except BaseException:  # an error whose text fails: the run is kept all the same
                shown = "<its text could not be made>"
            text = f"{type(error).__name__}: {shown}"
        return self.enc.text(redact_secrets(text, self.enc.secrets))


# values kept as they are: immutable, or (a message) not changed once made
_KEPT: frozenset[type] = frozenset({str, int, float, bool, type(None), bytes, tuple, Message})


def _copy(value: Any) -> Any:
    """What is recorded of a value the call was given or returned, taken when it happens: a
    list or dict shallow-copied, a pydantic model (a structured output) too, so a change made
    after the call (a history appended to, a dict or a field set) does not change the record."""
    kind = type(value)
    if kind is list:
        return list(value)
    if kind is dict:
        return dict(value)
    if kind in _KEPT or not isinstance(value, BaseModel):
        return value
    try:
        return value.model_copy()
    except Exception:  # recording must never break the call
        return value


def _copied_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    for value in kwargs.values():
        if type(value) not in _KEPT:
            return {key: _copy(v) for key, v in kwargs.items()}
    return kwargs  # made for this call alone: nothing changes it afterwards


def _copied(args: tuple[Any, ...]) -> tuple[Any, ...]:
    for value in args:
        if type(value) not in _KEPT:
            return tuple(_copy(v) for v in args)
    return args


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
    - `batch_seconds`: how long the writer thread lets records gather before a write; it then
      writes at the runs' next pause (5 ms without a call ending), within a second at most.

    Returns the `Recording`: `close()` it (or use `with record(path):`) to stop; what was
    queued is written then, and at the interpreter's exit. Recording a file this process
    already records closes that recording first (each run is kept once).
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


def _plain_output(output: Any) -> Any:
    if output is None or isinstance(output, str | Message):
        return output
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
    if isinstance(span.error, GuardrailTripped):  # a guardrail's verdict, not a failure
        return "blocked"
    if span.error is not None:
        return "error"
    if span.output is None or isinstance(span.output, str | Message):
        return "ok"
    status = getattr(span.output, "status", None)
    if status == "needs_approval":
        return "needs_approval"
    return "ok"


def _request_text(enc: ValueEncoder, span: _Span) -> str:
    if span.resumes is not None:  # no request: the one of the run that paused
        messages: list[Any] = list(span.resumes.conversation)
    elif span.call_kind is not None:
        messages = span.args if isinstance(span.args, list) else []
    else:
        value = call_input(*span.args)
        if isinstance(value, dict) and len(value) == 1:  # one keyword (`evaluate`'s `text=`)
            only = next(iter(value.values()))
            value = only if isinstance(only, str) else value
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


# by column name: a file a newer version wrote (a column more) takes these rows as well
_INSERT_SPANS = (
    "INSERT OR REPLACE INTO spans (id, run_id, parent_id, name, kind, started, ended, status, "
    "error, input, output, model, prompt_tokens, completion_tokens, cost) "
    f"VALUES ({', '.join('?' * 15)})"
)
_INSERT_RUNS = (
    "INSERT OR REPLACE INTO runs (id, name, request, status, started, ended, tokens, cost, "
    "error, answer, paused_state, resumes, session) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

_INSERT_PROGRESS = (
    "INSERT INTO tool_progress (run_id, tool_call_id, tool, message, fraction, at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
# all but the latest `?` reports of a run
_TRIM_PROGRESS = (
    "DELETE FROM tool_progress WHERE run_id = ? AND id <= (SELECT id FROM tool_progress "
    "WHERE run_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)"
)


def _insert(db: Any, statement: str, rows: list[tuple[Any, ...]]) -> int:
    """Write `rows`, all at once; if the file refuses one (a constraint or trigger of a newer
    version's file), each on its own, so only the refused rows are lost (a failed statement
    is undone alone, the transaction goes on). The number of rows written."""
    if not rows:
        return 0
    try:
        db.executemany(statement, rows)
        return len(rows)
    except sqlite3.DatabaseError:
        _log.debug("promptimus.board: a row was refused; writing them one by one", exc_info=True)
    kept = 0
    for row in rows:
        try:
            db.execute(statement, row)
            kept += 1
        except sqlite3.DatabaseError:
            _log.warning("promptimus.board could not write a row (%s)", row[:2], exc_info=True)
    return kept
