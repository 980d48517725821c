"""FakeGeminiServer as the raw google-genai SDK sees it: typed replies, streams, thought parts,
signatures, usage metadata, Google error bodies and faults."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

from promptimus.testing import FakeGeminiServer, GeminiCall, GeminiFault, GeminiReply

KEY = "fake-key-for-the-sdk"


@pytest.fixture
def srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(api_key=KEY, require_auth=True) as server:
        yield server


_CLIENTS: list[genai.Client] = []
"""Clients made by the tests: a client that goes unreferenced closes its HTTP client."""


def client(srv: FakeGeminiServer, key: str = KEY) -> genai.Client:
    made = genai.Client(
        api_key=key, http_options=types.HttpOptions(base_url=srv.base_url, timeout=10_000)
    )
    _CLIENTS[:] = [made]
    return made


def test_a_reply_has_thoughts_signatures_calls_and_usage(srv: FakeGeminiServer) -> None:
    signature = base64.b64encode(b"sig-one").decode()
    srv.generate.script(
        GeminiReply(
            text="Answer.",
            thought="pondering",
            thought_signature=signature,
            calls=[GeminiCall("lookup", {"q": "x"}, id="c9", signature=signature)],
            usage={"cachedContentTokenCount": 1},
        )
    )
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(include_thoughts=True),
        system_instruction="be kind",
    )

    reply = client(srv).models.generate_content(
        model="gemini-3-pro", contents="hello world", config=config
    )

    parts = reply.candidates[0].content.parts  # type: ignore[index, union-attr]
    assert parts is not None
    assert (parts[0].thought, parts[0].text) == (True, "pondering")
    assert parts[0].thought_signature == b"sig-one"
    assert parts[1].text == "Answer."
    assert parts[2].function_call is not None
    assert (parts[2].function_call.name, parts[2].function_call.args) == ("lookup", {"q": "x"})
    assert parts[2].function_call.id == "c9" and parts[2].thought_signature == b"sig-one"
    assert reply.candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    usage = reply.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (4, 4)
    assert (usage.thoughts_token_count, usage.cached_content_token_count) == (1, 1)
    assert usage.total_token_count == 9
    request = srv.requests[-1]
    assert request.path == "/v1beta/models/gemini-3-pro:generateContent"
    assert request.json["systemInstruction"]["parts"] == [{"text": "be kind"}]
    assert request.json["generationConfig"]["thinkingConfig"] == {"include_thoughts": True}


def test_thoughts_are_left_out_unless_asked_for(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(text="A.", thought="hidden"))
    reply = client(srv).models.generate_content(model="m", contents="q")
    assert reply.text == "A."
    assert all(not p.thought for p in reply.candidates[0].content.parts)  # type: ignore[index, union-attr]


def test_a_stream_sends_one_event_per_chunk(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(text="one two three four", chunks=2))
    chunks = list(client(srv).models.generate_content_stream(model="m", contents="q"))
    assert len(chunks) == 2 and "".join(c.text or "" for c in chunks) == "one two three four"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert chunks[-1].usage_metadata is not None
    assert srv.requests[-1].query == "alt=sse"


def test_with_nothing_scripted_it_echoes(srv: FakeGeminiServer) -> None:
    reply = client(srv).models.generate_content(model="m", contents="ping")
    assert reply.text == "echo: ping"


@pytest.mark.parametrize(
    ("fault", "code", "status"),
    [
        (GeminiFault.status(429, retry_delay=2), 429, "RESOURCE_EXHAUSTED"),
        (GeminiFault.status(503), 503, "UNAVAILABLE"),
        (GeminiFault.status(400, "bad"), 400, "INVALID_ARGUMENT"),
    ],
)
def test_errors_come_in_google_error_bodies(
    srv: FakeGeminiServer, fault: GeminiFault, code: int, status: str
) -> None:
    srv.generate.script(fault)
    with pytest.raises(errors.APIError) as info:
        client(srv).models.generate_content(model="m", contents="q")
    assert (info.value.code, info.value.status) == (code, status)
    if code == 429:
        detail = info.value.details["error"]["details"][0]
        assert detail == {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}


def test_retry_after_is_a_header() -> None:
    with FakeGeminiServer() as server:
        server.generate.script(GeminiFault.status(429, retry_after=2.2))
        response = httpx.post(
            f"{server.base_url}/v1beta/models/m:generateContent", json={"contents": []}
        )
    assert response.status_code == 429 and response.headers["retry-after"] == "3"
    assert response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"


@pytest.mark.parametrize(("key", "code"), [("wrong", 403), ("", 401)])
def test_the_key_is_checked(key: str, code: int) -> None:
    with FakeGeminiServer(api_key=KEY, require_auth=True) as server:
        headers = {"x-goog-api-key": key} if key else {}
        response = httpx.post(
            f"{server.base_url}/v1beta/models/m:generateContent",
            json={"contents": []},
            headers=headers,
        )
        assert response.status_code == code
        by_query = httpx.post(
            f"{server.base_url}/v1beta/models/m:generateContent?key={KEY}", json={"contents": []}
        )
        assert by_query.status_code == 200


def test_a_signed_call_sent_back_without_its_signature_is_refused(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(calls=[GeminiCall("f", {"x": 1})]))
    sdk = client(srv)
    first = sdk.models.generate_content(model="m", contents="q")
    call_part = first.candidates[0].content.parts[0]  # type: ignore[index, union-attr]
    assert call_part.thought_signature

    def history(part: types.Part) -> list[Any]:
        result = types.Part.from_function_response(name="f", response={"output": 1})
        return [
            types.Content(role="user", parts=[types.Part(text="q")]),
            types.Content(role="model", parts=[part]),
            types.Content(role="user", parts=[result]),
        ]

    unsigned = types.Part(function_call=call_part.function_call)
    with pytest.raises(errors.ClientError) as info:
        sdk.models.generate_content(model="m", contents=history(unsigned))
    assert info.value.code == 400 and "thought_signature" in (info.value.message or "")
    assert sdk.models.generate_content(model="m", contents=history(call_part)).text


def test_a_cut_stream_ends_without_a_finish_reason(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiFault.cut(after_chunks=1))
    chunks = list(client(srv).models.generate_content_stream(model="m", contents="a b c d"))
    assert len(chunks) == 1 and chunks[0].candidates[0].finish_reason is None  # type: ignore[index]


def test_structured_output_can_be_refused() -> None:
    with FakeGeminiServer(reject_response_schema=True) as server:
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            response_json_schema={"type": "object"},
        )
        with pytest.raises(errors.ClientError) as info:
            client(server).models.generate_content(model="m", contents="q", config=config)
    violation = info.value.details["error"]["details"][0]["fieldViolations"][0]
    assert violation["field"] == "generation_config.response_json_schema"


def test_a_prompt_over_the_window_is_refused_in_geminis_words() -> None:
    with FakeGeminiServer(context_window=2) as server:
        with pytest.raises(errors.ClientError, match="exceeds the maximum number of tokens"):
            client(server).models.generate_content(model="m", contents="one two three")
        assert len(server.generate.requests) == 1


def test_a_function_response_not_after_its_call_is_refused(srv: FakeGeminiServer) -> None:
    response = types.Part.from_function_response(name="add", response={"result": 3})
    orphan = [
        types.Content(role="user", parts=[types.Part.from_text(text="hi")]),
        types.Content(role="user", parts=[response]),
    ]
    with pytest.raises(errors.ClientError, match="immediately after a function call"):
        client(srv).models.generate_content(model="gemini-3-pro", contents=orphan)
    call = types.Part.from_function_call(name="add", args={})
    unanswered = [
        types.Content(role="user", parts=[types.Part.from_text(text="hi")]),
        types.Content(role="model", parts=[call, call]),
        types.Content(role="user", parts=[response]),
    ]
    with pytest.raises(errors.ClientError, match="number of function response parts"):
        client(srv).models.generate_content(model="gemini-3-pro", contents=unanswered)
