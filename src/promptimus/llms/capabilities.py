"""What a provider has shown it supports, learned from the server's answers and kept on the
provider object (so each provider instance learns once, and nothing is global).

It records which kind of structured output the server accepts, whether it demands `content` on
tool-call messages, and whether it takes images. OpenAI takes
``response_format: {"type": "json_schema", ...}``; llama-cpp-python's server only
``{"type": "json_object", "schema": ...}``; some servers neither. ``StructuralOutput`` tries them
in that order and records here the first one the server did not reject.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RESPONSE_FORMAT_MODES", "ProviderCapabilities", "ResponseFormatMode", "capabilities"]

ResponseFormatMode = Literal["json_schema", "json_object", "prompted"]

RESPONSE_FORMAT_MODES: tuple[ResponseFormatMode, ...] = ("json_schema", "json_object", "prompted")
"""From strongest to weakest: the order structured output degrades in."""


@dataclass(slots=True)
class ProviderCapabilities:
    """A provider's learned capabilities. ``response_format`` is the structured-output mode
    the server accepted (None: not tried yet); ``tool_call_content`` is True once the server
    refused an assistant tool-call message without ``content``."""

    response_format: ResponseFormatMode | None = None
    tool_call_content: bool = False
    """The server demands `content` on assistant messages that only call tools (sent as ``""``)."""
    images: bool | None = None
    """Whether the model takes images in messages: None (not known: they are sent), False
    once the server refused a request that carried some, or when set for a model without
    vision (`capabilities(llm).images = False`); agents then describe each image in text."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def learn_response_format(self, mode: ResponseFormatMode) -> bool:
        """Record that the server accepted ``mode``; True if this changed the record."""
        with self._lock:
            if self.response_format == mode:
                return False
            self.response_format = mode
            return True


def capabilities(provider: Any) -> ProviderCapabilities:
    """The capability record held by ``provider`` (its ``capabilities`` attribute), attached on
    first use when the provider has none. A provider that cannot hold one (``__slots__``) gets a
    fresh record each time: it then re-learns on every call, which is correct, only slower."""
    record = getattr(provider, "capabilities", None)
    if isinstance(record, ProviderCapabilities):
        return record
    record = ProviderCapabilities()
    with contextlib.suppress(AttributeError, TypeError):
        provider.capabilities = record
    return record
