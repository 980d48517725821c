"""Hostile request bodies against both served faces through a real uvicorn server: each is a 4xx
in the protocol's own error shape (OpenAI's `error` object, AG-UI's RUN_ERROR), never a 500,
and runs nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from ag_ui.core import RunErrorEvent
from serve_support import Running, serving
from test_openai_compatible import echo_agent

from promptimus.serve import app

HUGE = b"1" * 5000  # more digits than Python converts to an int by default


@pytest.fixture
def server() -> Iterator[Running]:
    with serving(app(echo_agent(), name="echo")) as running:
        yield running


def openai_error(running: Running, body: bytes) -> openai.APIStatusError:
    sdk = openai.OpenAI(base_url=f"{running.url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.APIStatusError) as raised:
        sdk.post(
            "/chat/completions",
            cast_to=object,
            content=body,
            options={"headers": {"content-type": "application/json"}},
        )
    return raised.value


def ag_ui_error(running: Running, body: bytes) -> tuple[int, RunErrorEvent]:
    reply = httpx.post(
        f"{running.url}/ag-ui",
        content=body,
        headers={"content-type": "application/json"},
        timeout=60.0,
    )
    return reply.status_code, RunErrorEvent.model_validate_json(reply.text)


def test_a_number_too_long_to_read_is_a_400_in_openais_shape(server: Running) -> None:
    body = b'{"model": "echo", "messages": [{"role": "user", "content": "hi"}], "seed": ' + HUGE
    error = openai_error(server, body + b"}")
    assert error.status_code == 400
    assert isinstance(error.body, dict) and error.body["code"] == "invalid_json"


def test_a_number_too_long_to_read_is_a_400_run_error_on_ag_ui(server: Running) -> None:
    body = b'{"threadId": "t", "runId": "r", "messages": [], "state": {"n": ' + HUGE + b"}}"
    status, error = ag_ui_error(server, body)
    assert status == 400
    assert error.code == "invalid_json"
