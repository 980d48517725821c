"""The openai SDK's error classes, and the HTTP library's failures each stands for.

What the SDK raises for a request it sent, the transport raises for a request it sent directly:
a timeout as ``APITimeoutError``, any other transport failure as ``APIConnectionError``, a
stream chunk that carries an ``error`` as ``APIError``.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["SDKErrors"]


class SDKErrors:
    """The SDK's error classes and the HTTP library's failures they stand for."""

    __slots__ = (
        "APIConnectionError",
        "APIError",
        "APITimeoutError",
        "connection_errors",
        "timeouts",
    )

    def __init__(self, http_module: Any) -> None:
        import openai

        self.APIError = openai.APIError
        self.APITimeoutError = openai.APITimeoutError
        self.APIConnectionError = openai.APIConnectionError
        self.timeouts: tuple[type[BaseException], ...] = (http_module.TimeoutException,)
        connection: list[type[BaseException]] = [http_module.RequestError, ssl.SSLError]
        anyio = sys.modules.get("anyio")  # the SDK's async layer
        if anyio is not None:
            connection.append(anyio.EndOfStream)
        self.connection_errors = tuple(connection)

    def stream_error(self, error: Any, request: Any) -> Exception:
        """The SDK's error for a stream chunk that carries an ``error``."""
        message = error.get("message") if isinstance(error, Mapping) else None
        if not message or not isinstance(message, str):
            message = "An error occurred during streaming"
        return self.APIError(message=message, request=request, body=error)
