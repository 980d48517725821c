"""Hostile request bodies against both served faces through a real uvicorn server: each is a 4xx
in the protocol's own error shape (OpenAI's `error` object, AG-UI's RUN_ERROR), never a 500,
and runs nothing."""

from __future__ import annotations

import json
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


def test_a_wrong_method_or_path_under_v1_is_an_error_the_openai_sdk_reads(
    server: Running,
) -> None:
    sdk = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.APIStatusError) as wrong_method:
        sdk.get("/chat/completions", cast_to=object)
    assert wrong_method.value.status_code == 405
    assert isinstance(wrong_method.value.body, dict)
    assert "POST" in wrong_method.value.body["message"]
    assert wrong_method.value.response.headers["allow"] == "POST"
    with pytest.raises(openai.NotFoundError) as unknown:
        sdk.embeddings.create(model="echo", input="hi")
    assert isinstance(unknown.value.body, dict) and unknown.value.body["code"] == "not_found"


def test_a_wrong_method_on_ag_ui_is_a_run_error(server: Running) -> None:
    reply = httpx.get(f"{server.url}/ag-ui", timeout=60.0)
    assert reply.status_code == 405
    error = RunErrorEvent.model_validate_json(reply.text)
    assert error.code == "method_not_allowed" and "POST" in error.message


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_or_infinity_is_not_json_on_either_face(server: Running, constant: bytes) -> None:
    chat = b'{"messages": [{"role": "user", "content": "hi"}], "temperature": ' + constant
    error = openai_error(server, chat + b"}")
    assert error.status_code == 400
    assert isinstance(error.body, dict) and error.body["code"] == "invalid_json"
    run = b'{"threadId": "t", "runId": "r", "messages": [], "state": {"x": ' + constant + b"}}"
    status, event = ag_ui_error(server, run)
    assert status == 400 and event.code == "invalid_json"
    assert constant.decode().lstrip("-") in event.message


@pytest.mark.parametrize("parameters", ["nope", 5, [1], True, {"type": "string"}])
def test_a_front_end_tool_whose_parameters_are_no_object_schema_is_refused(
    server: Running, parameters: object
) -> None:
    tool = {"name": "show_chart", "description": "Shows a chart.", "parameters": parameters}
    body = {
        "threadId": "tools",
        "runId": "r",
        "messages": [{"id": "1", "role": "user", "content": "chart it"}],
        "tools": [tool],
    }
    status, error = ag_ui_error(server, json.dumps(body).encode())
    assert status == 400 and error.code == "invalid_tools"
    assert "show_chart" in error.message and "parameters" in error.message
