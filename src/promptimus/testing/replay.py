"""Replay cassettes: record a run's model calls once, replay them offline (in CI) exactly.

    from promptimus.testing import replay

    with replay("tests/cassettes/qa.json", mode="strict"):
        report = await evaluate(agent, dataset, metric)

- ``mode="record"``: every request goes to the model; the file is rewritten with what was asked
  and answered.
- ``mode="replay"`` (the default): a recorded request is answered from the file; a new one goes
  to the model and is added to the file.
- ``mode="strict"``: a recorded request is answered from the file; a new one fails with
  `ReplayMismatch`, which shows its difference from the nearest recorded request. Nothing is
  sent, so a strict run needs no server, no network and no key.

The cassette watches the one seam every model call of a module passes through, the provider
call (`promptimus.observe.provider_calls`): OpenAI-compatible servers (chat completions and the
Responses API), Anthropic and Gemini alike, plain calls and streams (a replayed stream hands out
the recorded reply's deltas), and the embedding calls of retrieval modules (their texts are the
request, their vectors the reply). A
request is keyed as the response cache keys it (`promptimus.llms.cache_key`: the provider's
class, model and address, the options, the messages), and stored normalised as readable JSON
beside its key, so a changed cassette reads well in a review. A reply is stored as the provider
returned it (text, tool calls, thinking blocks, usage, finish reason). Secrets stay out: the key
covers no API key and no header, an address loses its password, and an option named like a
credential (``api_key``, ``authorization``, ...) is left out of the file.

A replayed reply carries ``Usage(cache_hit=True)`` (no token was spent); the recorded usage is
in the file. The pytest fixture ``replay_cassette`` (`promptimus.testing.pytest_plugin`) gives
each test its own cassette.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import sys
import threading
import types
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from promptimus.checkpoint.files import atomic_write_text, read_text
from promptimus.core.hooks import RemovableHandle
from promptimus.dto import Message, Usage
from promptimus.errors import CassetteError, ReplayMismatch
from promptimus.llms.cache_key import KEY_VERSION, provider_identity, request_options
from promptimus.observe.provider_calls import ProviderCall, register_provider_call_observer

__all__ = ["Cassette", "ReplayMode", "replay"]

ReplayMode = Literal["record", "replay", "strict"]

FORMAT = "promptimus-cassette/1"
_MAX_BYTES = 256 * 1024 * 1024
_SECRET_NAMES = frozenset(
    {"api_key", "apikey", "authorization", "x_api_key", "password", "secret", "token"}
    | {"access_token", "auth_token", "client_secret", "headers", "extra_headers"}
)
_STATE = "promptimus.testing.replay"  # this cassette's key in a call's `state`
_KINDS = frozenset({"llm", "embedding"})  # the calls a cassette records and answers


def replay(path: str | Path, mode: ReplayMode = "replay") -> Cassette:
    """A cassette at ``path``, used as ``with replay(path, mode): ...`` (see the module)."""
    return Cassette(path, mode)


class Cassette:
    """The recorded interactions of one file; active inside ``with``. ``hits`` counts requests
    answered from the file, ``misses`` the ones sent to the model."""

    def __init__(self, path: str | Path, mode: ReplayMode = "replay") -> None:
        if mode not in get_args(ReplayMode):
            raise CassetteError(
                f"replay mode {mode!r} is not one of 'record', 'replay', 'strict': record to "
                "write the file afresh, replay to answer what it holds and record the rest, "
                "strict to answer only what it holds (in CI)"
            )
        self.path = Path(path)
        self.mode: ReplayMode = mode
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._changed = False
        self._handle: RemovableHandle | None = None

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"

    # --- the file ----------------------------------------------------------------------------

    def _load(self) -> None:
        self._entries = {}
        if self.mode == "record":
            return
        if not self.path.exists():
            if self.mode == "strict":
                raise CassetteError(
                    f"the cassette {self.path} does not exist, so a strict replay can answer "
                    'nothing: record it first (mode="record", or pytest --replay-mode=record)'
                )
            return
        try:
            data = json.loads(read_text(self.path, _MAX_BYTES))
        except (OSError, ValueError) as exc:
            raise CassetteError(f"{self.path} cannot be read as a cassette ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise CassetteError(
                f"{self.path} is not a replay cassette (a JSON object with 'interactions'): "
                'record it again with mode="record"'
            )
        for entry in data["interactions"]:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self._entries[entry["key"]] = entry

    def _save(self) -> None:
        document = {"format": FORMAT, "interactions": list(self._entries.values())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")

    def __enter__(self) -> Cassette:
        self._load()
        self._changed = self.mode == "record"
        self._handle = register_provider_call_observer(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if self._changed:
            self._save()

    # --- the provider-call observer ------------------------------------------------------------

    def on_start(self, call: ProviderCall) -> None:
        if call.kind not in _KINDS:
            return
        request = normalised_request(call)
        call.state[_STATE] = (self, request, request_digest(request))

    def before_send(self, call: ProviderCall) -> None:
        """Answers a recorded request (the caller then sends nothing), or refuses a new one in
        strict mode."""
        mine = call.state.get(_STATE)
        if mine is None or mine[0] is not self:
            return
        _, request, key = mine
        if self.mode != "record":
            with self._lock:
                entry = self._entries.get(key)
            if entry is not None:
                call.output = self._recorded_reply(call.kind, entry)
                call.state[_STATE] = (self, request, None)  # answered here: nothing to record
                self.hits += 1
                return
        if self.mode == "strict":
            raise self._mismatch(request)
        self.misses += 1

    def _recorded_reply(self, kind: str, entry: dict[str, Any]) -> Any:
        """The reply ``entry`` holds: a `Message` (its usage a cache hit: no token was spent
        now), or an embedding call's vectors."""
        try:
            if kind == "embedding":
                vectors = entry["reply"]["embeddings"]
                if not isinstance(vectors, list) or not all(_is_vector(v) for v in vectors):
                    raise ValueError("the embeddings are not lists of numbers")
                return [[float(x) for x in vector] for vector in vectors]
            reply = Message.model_validate(entry["reply"])
        except (KeyError, TypeError, ValueError, ValidationError) as exc:
            raise CassetteError(
                f"the cassette {self.path} holds a reply that is not a {kind} reply ({exc}): "
                'record it again with mode="record"'
            ) from exc
        reply.usage = Usage(cache_hit=True)
        return reply

    def on_end(self, call: ProviderCall) -> None:
        mine = call.state.get(_STATE)
        if mine is None or mine[0] is not self or mine[2] is None or call.error is not None:
            return  # not a model call, answered from this file, or failed: nothing to record
        reply = call.output
        if call.kind == "embedding" and isinstance(reply, list):
            stored: dict[str, Any] = {"embeddings": [list(vector) for vector in reply]}
        elif isinstance(reply, Message):
            stored = reply.model_dump(mode="json", exclude_defaults=True)
        else:
            return
        _, request, key = mine
        with self._lock:
            self._entries[key] = {"key": key, "request": request, "reply": stored}
            self._changed = True

    def _mismatch(self, request: dict[str, Any]) -> ReplayMismatch:
        new = _lines(request)
        with self._lock:
            recorded = [entry.get("request", {}) for entry in self._entries.values()]
        if not recorded:
            return ReplayMismatch(
                f"the cassette {self.path} holds no request, and strict replay sends none. "
                'Record it with mode="record" (pytest --replay-mode=record). The request:\n'
                + "\n".join(new)
            )
        nearest = max(
            (_lines(old) for old in recorded),
            key=lambda old: difflib.SequenceMatcher(None, old, new).ratio(),
        )
        diff = "\n".join(
            difflib.unified_diff(nearest, new, "recorded", "requested", n=2, lineterm="")
        )
        return ReplayMismatch(
            f"a request not in the cassette {self.path} (strict replay sends nothing). "
            "Its difference from the nearest recorded request:\n"
            f"{diff}\n"
            'If the change is intended, record the cassette again (mode="record", or pytest '
            "--replay-mode=record).",
            diff=diff,
        )


def normalised_request(call: ProviderCall) -> dict[str, Any]:
    """What identifies a model request, as readable JSON without secrets: the provider, the
    options it is sent with and the messages (reply metadata left out); for an embedding call,
    the provider and the texts."""
    provider = call.provider
    if call.kind == "embedding":
        return {
            "version": KEY_VERSION,
            "kind": "embedding",
            "provider": _scrub(_json(provider_identity(provider))),
            "texts": [str(text) for text in call.inputs],
        }
    options = request_options(provider, dict(call.params))
    messages = [
        message.model_dump(
            mode="json", exclude={"usage", "finish_reason", "model_name"}, exclude_defaults=True
        )
        for message in call.inputs
    ]
    return {
        "version": KEY_VERSION,
        "provider": _scrub(_json(provider_identity(provider))),
        "options": _scrub(_json(options)),
        "messages": messages,
    }


def request_digest(request: dict[str, Any]) -> str:
    """The key of a normalised request: the SHA-256 of its canonical JSON."""
    text = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _json(value: Any) -> Any:
    """``value`` as JSON data (pydantic models and model classes dumped, the rest by repr)."""
    return json.loads(json.dumps(value, sort_keys=True, default=_json_default))


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema):
        return {"pydantic_model": f"{value.__module__}.{value.__qualname__}", "schema": schema()}
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return repr(value)


def _scrub(value: Any) -> Any:
    """``value`` without credentials: no key named like one, no password in an address."""
    if isinstance(value, dict):
        return {
            key: _scrub(item)
            for key, item in value.items()
            if str(key).lower().replace("-", "_") not in _SECRET_NAMES
        }
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, str) and "@" in value and "://" in value:
        return _without_password(value)
    return value


def _without_password(url: str) -> str:
    try:
        parts = urlsplit(url)
        if parts.password is None and parts.username is None:
            return url
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port is not None else host
    except ValueError:
        return url
    return urlunsplit(parts._replace(netloc=netloc))


def _is_vector(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    )


def _lines(request: Any) -> list[str]:
    return json.dumps(request, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


class _CallableModule(types.ModuleType):
    """This module, callable as `replay`: importing ``promptimus.testing.replay`` makes the
    package's ``replay`` attribute this module, and ``from promptimus.testing import replay``
    must still give something that records and replays."""

    def __call__(self, path: str | Path, mode: ReplayMode = "replay") -> Cassette:
        return replay(path, mode)


sys.modules[__name__].__class__ = _CallableModule
