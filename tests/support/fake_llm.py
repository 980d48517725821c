"""The client most HTTP-level tests point at the fake OpenAI server: fast retries, a bound."""

from __future__ import annotations

from promptimus.llms.openai import OpenAILike
from promptimus.testing.fake_openai import FakeOpenAIServer
from promptimus.transport.retry import RetryPolicy


def make_llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike(
        "fake-model",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01),
        timeout=5.0,
    )
