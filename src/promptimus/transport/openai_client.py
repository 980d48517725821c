"""Lazy construction of the official ``openai.AsyncOpenAI`` client, shared by chat and embeddings.

The client is built on first use (so ``import promptimus`` never imports ``openai``), with the SDK's
own retries off (``RetryPolicy`` is the one retry layer), and one per event loop because pooled
HTTP connections cannot cross loops. Each loop's client comes in an `OpenAIConnection`, which
sends request bodies without the SDK's per-call transform (see `promptimus.transport.openai_wire`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from promptimus.errors import ProviderConfigError
from promptimus.transport.keyed_client import KeyedClientFactory
from promptimus.transport.openai_wire import STATIC_CLIENT_OPTIONS, OpenAIConnection
from promptimus.transport.redirect_guard import guard_redirects
from promptimus.transport.secret_scrub import shown_url

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["NO_KEY", "OpenAIClientFactory"]

NO_KEY = "no-key"
"""The key a client holds when none is set and none is required (never sent)."""


class OpenAIClientFactory(KeyedClientFactory[OpenAIConnection]):
    """Holds connection settings and hands out the client for the running event loop.

    ``api_key`` falls back to the environment variable ``api_key_env`` when the client is first
    needed; a missing key raises ``ProviderConfigError`` naming that variable, unless
    ``key_required`` is False (a local server that takes no key): the client then holds the
    placeholder `NO_KEY`, which the SDK requires and requests must not send. The key is never
    shown by ``repr``. ``timeout`` bounds each read of the HTTP client and, as a total deadline,
    each whole request (see `promptimus.transport.openai_wire`).
    """

    __slots__ = ("key_required",)

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float | None = 60.0,
        client_kwargs: dict[str, Any] | None = None,
        key_required: bool = True,
    ) -> None:
        self.key_required = key_required
        super().__init__(
            api_key,
            base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            client_kwargs=client_kwargs,
        )

    def api_key(self) -> str:
        key = self._find_key()
        if key is None and not self.key_required:
            return NO_KEY
        if not key:
            where = f" for {shown_url(self.base_url)}" if self.base_url else ""
            raise ProviderConfigError(
                f"No API key{where}: set the {self.api_key_env} environment variable or pass "
                "api_key=... to the provider (servers that need no key, like a local vLLM, "
                'accept any placeholder such as api_key="none").'
            )
        return key

    def _build(self) -> OpenAIConnection:
        key = self.api_key()
        from openai import AsyncOpenAI

        kwargs = self._sdk_kwargs(key)
        if "http_client" not in kwargs:
            # the SDK's own default HTTP client, without the wrapper it would make: that one,
            # dropped unclosed while another event loop runs (a provider made inside one
            # `asyncio.run()` and collected during the next), schedules its close on the new
            # loop, where it fails on the old loop's sockets and prints "Task exception was
            # never retrieved ... Event loop is closed". Each loop's client is dropped with it.
            from openai import DefaultAsyncHttpxClient

            kwargs["http_client"] = DefaultAsyncHttpxClient()
        guard_redirects(kwargs["http_client"])
        # a request built once may be reused only if nothing makes the SDK build it differently
        direct = isinstance(key, str) and self.client_kwargs.keys() <= STATIC_CLIENT_OPTIONS
        sent = self.key_required or self._find_key() is not None  # not the placeholder
        return OpenAIConnection(
            AsyncOpenAI(**kwargs),
            kwargs["http_client"],
            direct=direct,
            send_key=sent,
            timeout=self.timeout,
        )

    def get(self) -> AsyncOpenAI:
        """The SDK client for the running event loop (created on first use)."""
        return self._clients.get().client
