"""`KeyedClientFactory`: what every SDK client factory shares, whichever API it speaks.

It holds the connection settings (the key, or the environment variable that holds it; the base
URL; the timeout; options for the SDK's client) and hands out one connection per event loop,
built on first use (pooled HTTP connections cannot cross loops). The key is looked up when
needed, so a key set after the provider was made is found, and `repr` never shows it.
Subclasses say how a connection is built (`_build`) and what a missing key means (`api_key`).
"""

from __future__ import annotations

import os
from typing import Any, Generic, TypeVar

from promptimus.transport.per_loop import PerLoop
from promptimus.transport.secret_scrub import shown_url, url_password

__all__ = ["KeyedClientFactory"]

C = TypeVar("C")


class KeyedClientFactory(Generic[C]):
    """Connection settings and the running event loop's connection (see the module docstring)."""

    __slots__ = ("_api_key", "_clients", "api_key_env", "base_url", "client_kwargs", "timeout")

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None,
        *,
        api_key_env: str | None,
        timeout: float | None,
        client_kwargs: dict[str, Any] | None,
    ) -> None:
        self._api_key = api_key
        self.api_key_env = api_key_env
        self.base_url = base_url
        self.timeout = timeout
        self.client_kwargs = dict(client_kwargs or {})
        self._clients: PerLoop[C] = PerLoop(self._build)

    def _find_key(self) -> str | None:
        """The key given, else the environment variable's value, else None."""
        if self._api_key:
            return self._api_key
        if self.api_key_env is None:
            return None
        return os.environ.get(self.api_key_env) or None

    def api_key(self) -> str:
        """The key to send; a subclass says what a missing one means."""
        raise NotImplementedError

    def secrets(self) -> tuple[str, ...]:
        """Values that must be redacted from any error text."""
        key = self._find_key()
        password = url_password(self.base_url)
        return tuple(secret for secret in (key, password) if secret)

    def _sdk_kwargs(self, key: str) -> dict[str, Any]:
        """The SDK client's keyword arguments: the key, the SDK's own retries off (the
        provider's `RetryPolicy` is the one retry layer), the base URL and timeout when set,
        then the options the user gave."""
        kwargs: dict[str, Any] = {"api_key": key, "max_retries": 0, **self.client_kwargs}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return kwargs

    def _build(self) -> C:
        """A new connection for the running event loop."""
        raise NotImplementedError

    def connection(self) -> C:
        """The connection of the running event loop (made on first use)."""
        return self._clients.get()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={shown_url(self.base_url)!r})"
