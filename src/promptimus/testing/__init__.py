"""Test helpers: a real HTTP fake of the OpenAI API for the real ``openai`` SDK to talk to.

    from promptimus.testing import FakeOpenAIServer, Reply, ToolCall, Fault

The faults real servers produce are public so your tests can check your code against them too:
a 200 reply that is not a valid answer (``Fault.malformed(kind)``: HTML, a JSON list, ``{}``,
``choices: null``, wrongly typed fields, an empty answer...; ``MALFORMED_KINDS`` lists them), an
error that quotes the API key back (``Fault.echo_key``), a stream cut before its finish chunk
(``Fault.cut``), an error inside a stream
(``Fault.stream_error``), a context-window error as OpenAI, llama.cpp or vLLM send it
(``Fault.context_overflow``, or ``FakeOpenAIServer(context_window=N)``), a request that fails
the server's validation in its dialect (``Fault.request_rejected``, ``REJECTION_DIALECTS``:
llama-cpp-python's HTTP 500 among them, verbatim), a server that rejects
``response_format: json_schema`` (``FakeOpenAIServer(reject_response_format=...)``,
``ResponseFormatRejection.dialect(...)``), a 200 of exactly the bytes given (``Fault.raw``)
and a reply sent one byte at a time (``Fault.drip``).

``FakeAnthropicServer`` speaks Anthropic's Messages API the same way (``AnthropicReply``,
``Thinking``, ``anthropic_error``), for the ``anthropic`` SDK and ``promptimus.llms.Anthropic``.

Importing this package does not import ``openai`` (or any network library); the server itself
loads on first use of `FakeOpenAIServer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports
from promptimus.testing.fake_anthropic_script import AnthropicReply, Thinking, anthropic_error
from promptimus.testing.fake_openai_responses_script import ResponsesReply
from promptimus.testing.malformed import MALFORMED_KINDS
from promptimus.testing.script import (
    CONTEXT_DIALECTS,
    REJECTION_DIALECTS,
    Fault,
    RecordedRequest,
    Reply,
    ResponseFormatRejection,
    Route,
    ToolCall,
)

if TYPE_CHECKING:
    from promptimus.testing.fake_anthropic import FakeAnthropicServer
    from promptimus.testing.fake_gemini import FakeGeminiServer
    from promptimus.testing.fake_gemini_script import GeminiCall, GeminiFault, GeminiReply
    from promptimus.testing.fake_openai import FakeOpenAIServer, SpawnedServer
    from promptimus.testing.replay import replay

__all__ = [
    "CONTEXT_DIALECTS",
    "MALFORMED_KINDS",
    "REJECTION_DIALECTS",
    "AnthropicReply",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "Fault",
    "RecordedRequest",
    "Reply",
    "ResponseFormatRejection",
    "ResponsesReply",
    "Route",
    "SpawnedServer",
    "Thinking",
    "ToolCall",
    "anthropic_error",
    "replay",
]
__all__ += ["FakeGeminiServer", "GeminiCall", "GeminiFault", "GeminiReply"]


# Lazy so `python -m promptimus.testing.fake_openai` does not import that module twice.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "FakeOpenAIServer": "fake_openai",
        "SpawnedServer": "fake_openai",
        "FakeGeminiServer": "fake_gemini",
        "GeminiCall": "fake_gemini_script",
        "GeminiFault": "fake_gemini_script",
        "GeminiReply": "fake_gemini_script",
        "FakeAnthropicServer": "fake_anthropic",
        "replay": "replay",
    },
    globals(),
)
