"""The fake OpenAI server, exercised through the real openai SDK over real sockets."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from promptimus.embedders.hashing import hashed_embedding, tokenize
from promptimus.errors import FakeServerError, InvalidEmbeddingDimensions
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall

try:
    import httpx
except ImportError:  # newer openai releases ship httpx as `httpx2`
    import httpx2 as httpx  # type: ignore[no-redef]

USER = [{"role": "user", "content": "what is the weather"}]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(srv: Any, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key=srv.api_key, max_retries=0, **kw)


def aclient(srv: Any, **kw: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=srv.base_url, api_key=srv.api_key, max_retries=0, **kw)


def chat(c: openai.OpenAI, messages: list[dict[str, Any]] = USER, **kw: Any) -> Any:
    return c.chat.completions.create(model="fake-model", messages=messages, **kw)  # type: ignore[arg-type]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# --- chat ------------------------------------------------------------------------------------


async def test_default_reply_echoes_the_last_user_message(srv: FakeOpenAIServer) -> None:
    async with aclient(srv) as c:
        done = await c.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "second question"}]},
            ],
        )
    assert done.choices[0].message.content == "echo: second question"
    assert done.choices[0].finish_reason == "stop"
    assert done.model == "gpt-test"


def test_scripted_replies_are_consumed_in_order_then_default(srv: FakeOpenAIServer) -> None:
    srv.chat.script("one", Reply(content="two", model="other-model"))
    assert srv.chat.pending == 2
    c = client(srv)
    assert chat(c).choices[0].message.content == "one"
    second = chat(c)
    assert (second.choices[0].message.content, second.model) == ("two", "other-model")
    assert chat(c).choices[0].message.content == "echo: what is the weather"
    assert srv.chat.pending == 0


def test_tool_calls_are_parsed_by_the_sdk(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("weather", {"city": "Paris"}), ToolCall("now", "{}", id="x9")]),
        Reply(tool_calls=[ToolCall("again", {})]),
    )
    c = client(srv)
    done = chat(c, tools=[{"type": "function", "function": {"name": "weather"}}])
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None
    assert [(t.id, t.function.name) for t in calls] == [("call_1", "weather"), ("x9", "now")]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}
    assert calls[1].function.arguments == "{}"
    assert chat(c).choices[0].message.tool_calls[0].id == "call_2"  # type: ignore[index]


def test_reasoning_and_usage_details(srv: FakeOpenAIServer) -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 7, "cached_tokens": 5, "reasoning_tokens": 3}
    srv.chat.script(Reply(content="sunny", reasoning="check the sky", usage=usage))
    srv.chat.script(Reply(content="a b c", reasoning="x y", finish_reason="length"))
    c = client(srv)
    done = chat(c)
    assert done.choices[0].message.model_extra == {"reasoning_content": "check the sky"}
    u = done.usage
    assert u is not None and u.prompt_tokens_details and u.completion_tokens_details
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (20, 7, 27)
    assert u.prompt_tokens_details.cached_tokens == 5
    assert u.completion_tokens_details.reasoning_tokens == 3
    computed = chat(c)  # whitespace tokens: prompt 4 words, completion 3 + 2 reasoning
    assert computed.choices[0].finish_reason == "length"
    u = computed.usage
    assert u is not None and u.completion_tokens_details
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (4, 5, 9)
    assert u.completion_tokens_details.reasoning_tokens == 2


async def test_streaming_text_and_reasoning_arrive_in_pieces(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(content="The sky is blue today.", reasoning="Look  up.\nThen say"))
    async with aclient(srv) as c:
        stream = await c.chat.completions.create(
            model="fake-model", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    deltas = [ch.choices[0].delta for ch in chunks if ch.choices]
    content = [d.content for d in deltas if d.content]
    reasoning = [d.model_extra.get("reasoning_content") for d in deltas if d.model_extra]
    assert len(content) == 5 and "".join(content) == "The sky is blue today."
    assert len(reasoning) == 4 and "".join(reasoning) == "Look  up.\nThen say"  # type: ignore[arg-type]
    assert deltas[0].role == "assistant"
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens == 5 + 4
    assert all(ch.usage is None for ch in chunks[:-1])


def test_streamed_tool_call_fragments_reassemble(srv: FakeOpenAIServer) -> None:
    args = {"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}
    srv.chat.script(Reply(tool_calls=[ToolCall("weather", args), ToolCall("clock", "{}")]))
    calls: dict[int, dict[str, Any]] = {}
    fragments = 0
    with client(srv) as c:
        for chunk in chat(c, stream=True):
            assert chunk.usage is None  # no include_usage: no usage chunk
            for tc in chunk.choices[0].delta.tool_calls or ():
                fragments += 1
                slot = calls.setdefault(tc.index, {"id": None, "name": None, "args": ""})
                if tc.id is not None:
                    assert slot["id"] is None  # id and name come once, on the first fragment
                    slot["id"], slot["name"] = tc.id, tc.function.name  # type: ignore[union-attr]
                slot["args"] += tc.function.arguments or ""  # type: ignore[union-attr]
            finish = chunk.choices[0].finish_reason
    assert finish == "tool_calls"
    assert fragments > 2
    assert calls[0] == {"id": "call_1", "name": "weather", "args": json.dumps(args)}
    assert calls[1] == {"id": "call_2", "name": "clock", "args": "{}"}


def test_responders_sync_async_and_fallthrough(srv: FakeOpenAIServer) -> None:
    seen: list[str] = []

    def sync_fn(body: dict[str, Any]) -> str | None:
        seen.append(body["messages"][-1]["content"])
        return None if body["messages"][-1]["content"] == "skip" else "from sync"

    async def async_fn(body: dict[str, Any]) -> Reply:
        await asyncio.sleep(0.01)
        return Reply(content=f"async saw {len(body['messages'])}")

    c = client(srv)
    srv.chat.respond_with(sync_fn).script("scripted wins first")
    assert chat(c).choices[0].message.content == "scripted wins first"
    assert chat(c).choices[0].message.content == "from sync"
    skipped = chat(c, [{"role": "user", "content": "skip"}]).choices[0].message.content
    assert skipped == "echo: skip"  # a responder returning None gets the default
    assert seen == ["what is the weather", "skip"]
    srv.chat.respond_with(async_fn)
    assert chat(c).choices[0].message.content == "async saw 1"


def test_a_failing_responder_becomes_a_500_naming_the_error(srv: FakeOpenAIServer) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("oops")

    srv.chat.respond_with(broken)
    with pytest.raises(openai.InternalServerError, match="KeyError"):
        chat(client(srv))


def test_requests_are_recorded_and_cleared(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    chat(c, extra_headers={"X-Trace": "abc"})
    c.embeddings.create(model="emb", input="hello")
    assert [(r.method, r.path) for r in srv.requests] == [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/embeddings"),
    ]
    first = srv.requests[0]
    assert first.headers["x-trace"] == "abc"
    assert first.headers["authorization"] == f"Bearer {srv.api_key}"
    assert first.json["messages"] == USER
    assert srv.chat.requests == [first.json]
    assert srv.embeddings.requests[0]["input"] == "hello"
    srv.chat.script("left over")
    srv.clear()
    assert srv.requests == [] and srv.chat.requests == [] and srv.chat.pending == 0
    assert chat(c).choices[0].message.content.startswith("echo:")  # type: ignore[union-attr]


# --- embeddings, models, rerank ---------------------------------------------------------------


def test_embeddings_are_deterministic_and_sized(srv: FakeOpenAIServer) -> None:
    c = client(srv)
    texts = ["the cat sat", "a dog barked", "the cat sat"]
    batch = c.embeddings.create(model="emb", input=texts)
    vectors = [d.embedding for d in batch.data]
    assert [d.index for d in batch.data] == [0, 1, 2]
    assert all(len(v) == 64 for v in vectors)
    assert vectors[0] == vectors[2] != vectors[1]
    single = c.embeddings.create(model="emb", input="a dog barked").data[0].embedding
    assert single == vectors[1]  # batch order kept
    as_floats = c.embeddings.create(model="emb", input="a dog barked", encoding_format="float")
    assert as_floats.data[0].embedding == pytest.approx(hashed_embedding("a dog barked", 64))
    small = c.embeddings.create(model="emb", input="the cat sat", dimensions=8)
    assert len(small.data[0].embedding) == 8
    assert math.isclose(sum(x * x for x in small.data[0].embedding), 1.0, rel_tol=1e-5)


def test_embeddings_route_scripts_vectors_dicts_and_faults(srv: FakeOpenAIServer) -> None:
    srv.embeddings.script(
        [[1.0, 0.0], [0.0, 1.0]],
        {"object": "list", "data": [], "model": "raw", "usage": {"prompt_tokens": 0}},
        Fault.status(503),
    )
    with httpx.Client(base_url=srv.base_url) as h:
        body = {"model": "e", "input": ["x", "y"], "encoding_format": "float"}
        assert [d["embedding"] for d in h.post("/embeddings", json=body).json()["data"]] == [
            [1.0, 0.0],
            [0.0, 1.0],
        ]
        assert h.post("/embeddings", json=body).json()["model"] == "raw"
        assert h.post("/embeddings", json=body).status_code == 503
        raw = h.post("/embeddings", json={"input": "x", "encoding_format": "base64"}).json()
        packed = base64.b64decode(raw["data"][0]["embedding"])
        assert list(struct.unpack("<64f", packed)) == pytest.approx(hashed_embedding("x", 64))
        assert h.post("/embeddings", json={"input": "x", "dimensions": 0}).status_code == 400


def test_models_lists_configured_and_requested_models() -> None:
    with FakeOpenAIServer(models=["alpha"]) as srv:
        c = client(srv)
        assert [m.id for m in c.models.list()] == ["alpha"]
        chat(c)
        assert [m.id for m in c.models.list()] == ["alpha", "fake-model"]
        assert c.models.retrieve("alpha").id == "alpha"
        with pytest.raises(openai.NotFoundError):
            c.models.retrieve("nope")


def test_rerank_orders_by_overlap_and_honours_top_n(srv: FakeOpenAIServer) -> None:
    docs = ["bananas are yellow", {"text": "the cat sat on the mat"}, "a cat and a mat"]
    with httpx.Client(base_url=srv.base_url) as h:
        body = {"model": "rr", "query": "cat on a mat", "documents": docs}
        results = h.post("/rerank", json=body).json()["results"]
        assert [r["index"] for r in results] == [2, 1, 0]
        assert results[0]["document"] == {"text": "a cat and a mat"}
        scores = [r["relevance_score"] for r in results]
        assert scores == sorted(scores, reverse=True) and scores[-1] == 0.0
        top = h.post("/rerank", json={**body, "top_n": 1}).json()["results"]
        assert [r["index"] for r in top] == [2]
        srv.rerank.script([0.1, 0.9, 0.5], Fault.status(429, retry_after=1))
        assert [r["index"] for r in h.post("/rerank", json=body).json()["results"]] == [1, 2, 0]
        assert h.post("/rerank", json=body).status_code == 429
        assert h.post("/rerank", json={"query": "q"}).status_code == 400
    assert srv.rerank.requests[0]["query"] == "cat on a mat"


def test_http_errors_have_the_openai_shape(srv: FakeOpenAIServer) -> None:
    with httpx.Client(base_url=srv.base_url) as h:
        missing = h.get("/nowhere")
        assert missing.status_code == 404
        assert set(missing.json()["error"]) >= {"message", "type", "code"}
        bad = h.post("/chat/completions", content=b"{not json")
        assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]
        assert h.get("/chat/completions").status_code == 405
    assert srv.requests[1].json is None  # the unreadable body is still recorded


# --- faults ------------------------------------------------------------------------------------


def test_status_faults_carry_retry_after_and_bodies(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Fault.status(429, retry_after=2.5),
        Fault.status(500),
        Fault.status(400, body={"error": {"message": "custom", "type": "t", "code": "c"}}),
    )
    c = client(srv)
    with pytest.raises(openai.RateLimitError) as limited:
        chat(c)
    headers = limited.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("3", "2500")
    with pytest.raises(openai.InternalServerError):
        chat(c)
    with pytest.raises(openai.BadRequestError, match="custom") as bad:
        chat(c)
    assert bad.value.code == "c"
    assert chat(c).choices[0].message.content == "echo: what is the weather"


async def test_delay_then_reply(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.delay(0.2, then="late"), Fault.delay(0.01))
    async with aclient(srv) as c:
        start = time.perf_counter()
        done = await c.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert time.perf_counter() - start >= 0.2
        assert done.choices[0].message.content == "late"
        after = await c.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert after.choices[0].message.content == "echo: what is the weather"


def test_stall_before_answer_and_mid_stream_time_out(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.stall(), Fault.stall(after_chunks=2))
    # The timeout must fire on the stalls, yet let the first chunks through on a loaded machine.
    c = client(srv, timeout=1.0)
    with pytest.raises(openai.APITimeoutError):
        chat(c)
    received = []
    with pytest.raises(openai.APITimeoutError):
        for chunk in chat(c, stream=True):
            received.append(chunk)
    assert len(received) == 2
    healthy = chat(c.with_options(timeout=30)).choices[0].message.content
    assert healthy.startswith("echo")


def test_malformed_bodies_fail_to_parse(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed(), Fault.malformed())
    c = client(srv)
    with pytest.raises(ValueError):
        chat(c)
    with pytest.raises(ValueError):
        list(chat(c, stream=True))


def test_drop_closes_the_connection(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.drop(), Fault.drop(after_chunks=3))
    c = client(srv)
    with pytest.raises(openai.APIConnectionError):
        chat(c)
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in chat(c, stream=True):
            received.append(chunk)
    assert len(received) == 3
    assert chat(c).choices[0].message.content.startswith("echo")  # type: ignore[union-attr]


def test_require_auth_rejects_a_wrong_key() -> None:
    with FakeOpenAIServer(require_auth=True, api_key="sk-right") as srv:
        with pytest.raises(openai.AuthenticationError):
            chat(openai.OpenAI(base_url=srv.base_url, api_key="sk-wrong", max_retries=0))
        assert chat(client(srv)).choices[0].message.content.startswith("echo")  # type: ignore[union-attr]


# --- lifecycle and load ------------------------------------------------------------------------


async def test_256_concurrent_clients_are_all_answered() -> None:
    async with FakeOpenAIServer() as srv:
        assert srv.running
        # 256 connections opened at once: the SDK's 5 s connect timeout fired once under full
        # CPU load, so the bound is generous (a hung server still fails, it does not hang).
        async with aclient(srv, timeout=120) as c:

            async def ask(i: int) -> str | None:
                messages = [{"role": "user", "content": f"question {i}"}]
                done = await c.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
                return done.choices[0].message.content

            answers = await asyncio.gather(*(ask(i) for i in range(256)))
        assert answers == [f"echo: question {i}" for i in range(256)]
        assert len(srv.chat.requests) == 256
    assert not srv.running


def test_shutdown_is_prompt_even_with_a_stalled_client() -> None:
    srv = FakeOpenAIServer().start()
    srv.chat.script(Fault.stall(after_chunks=1), Fault.stall())
    errors: list[BaseException] = []

    def stalled(stream: bool) -> None:
        try:
            list(chat(client(srv, timeout=30), stream=stream))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=stalled, args=(s,)) for s in (True, False)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(srv.chat.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(srv.chat.requests) == 2
    port = srv.port
    srv.stop()
    # The clients would wait 30 s for a stalled reply: they end well before only because `stop`
    # closed their connections (checked by outcome, with no upper bound on how long it took).
    for t in threads:
        t.join(20)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 2 and all(isinstance(e, openai.APIConnectionError) for e in errors)
    with socket.socket() as probe:  # the port is closed
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_subprocess_mode_serves_the_same_api() -> None:
    with FakeOpenAIServer.spawn(reply="pong", latency_ms=1) as child:
        c = client(child)
        assert chat(c).choices[0].message.content == "pong"
        vec = c.embeddings.create(model="e", input="stable across processes").data[0].embedding
        assert vec == pytest.approx(hashed_embedding("stable across processes", 64))
        process = child.process
    assert process.poll() is not None


def test_command_line_prints_ready_with_the_base_url() -> None:
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    cmd = [sys.executable, "-m", "promptimus.testing.fake_openai", "--port", "0", "--reply", "hi"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:") and line.rstrip().endswith("/v1")
        with httpx.Client() as h:
            answer = h.post(line.split()[1] + "/chat/completions", json={"messages": []}).json()
        assert answer["choices"][0]["message"]["content"] == "hi"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=5)
    assert "Traceback" not in err and "RuntimeWarning" not in err


def test_importing_promptimus_testing_stays_light() -> None:
    code = (
        "import sys, promptimus.testing as t; t.Reply; "
        "print(any(m.split('.')[0] in {'openai', 'httpx', 'httpx2'} for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_pytest_plugin_env_fixture(fake_openai_env: FakeOpenAIServer) -> None:
    assert os.environ["OPENAI_BASE_URL"] == fake_openai_env.base_url
    fake_openai_env.chat.script("configured from env")
    c = openai.OpenAI(max_retries=0)  # picks up OPENAI_API_KEY and OPENAI_BASE_URL
    assert chat(c).choices[0].message.content == "configured from env"


def test_lifecycle_errors_explain_what_to_do(srv: FakeOpenAIServer) -> None:
    with pytest.raises(FakeServerError, match="not running"):
        _ = FakeOpenAIServer().base_url
    with pytest.raises(FakeServerError, match="port=0"):
        FakeOpenAIServer(port=srv.port).start()


# --- hashing embedder ---------------------------------------------------------------------------


def test_hashed_embedding_is_normalised_and_lexical() -> None:
    cat = hashed_embedding("The cat sat on the mat")
    cats = hashed_embedding("A cat sits on a mat!")
    stocks = hashed_embedding("Quarterly earnings beat analyst forecasts")
    assert len(cat) == 256
    assert math.isclose(math.sqrt(sum(x * x for x in cat)), 1.0, rel_tol=1e-9)
    assert cosine(cat, cats) > 0.3 > 0.1 > cosine(cat, stocks)
    assert cosine(hashed_embedding("embedding"), hashed_embedding("embeddings")) > 0.5
    assert hashed_embedding("CAT, cat!") == hashed_embedding("cat cat")
    assert hashed_embedding("") == [0.0] * 256 == hashed_embedding("  ...  ")
    assert len(hashed_embedding("x", dimensions=3)) == 3
    with pytest.raises(InvalidEmbeddingDimensions):
        hashed_embedding("x", dimensions=0)


def test_tokenize_is_unicode_and_case_folded() -> None:
    assert tokenize("Straße, CAFÉ-au_lait 42!") == ["strasse", "café", "au_lait", "42"]
    assert tokenize("   ") == []


# --- tool calls and their results travel together -------------------------------------------


_CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "call_1", "content": "3"},
            ],
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [_CALL]},
                {"role": "user", "content": "and?"},
            ],
            "did not have response messages: call_1",
        ),
        (
            [
                {"role": "assistant", "tool_calls": [_CALL]},
                {"role": "tool", "tool_call_id": "call_2", "content": "3"},
            ],
            "must be a response to a preceeding message",
        ),
    ],
)
def test_a_tool_result_without_its_call_or_a_call_without_result_is_refused(
    srv: FakeOpenAIServer, messages: list[dict[str, Any]], says: str
) -> None:
    sdk = openai.OpenAI(base_url=srv.base_url, api_key=srv.api_key, max_retries=0)
    with pytest.raises(openai.BadRequestError, match=says):
        sdk.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
    paired = [
        {"role": "assistant", "tool_calls": [_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
    ]
    sdk.chat.completions.create(model="fake-model", messages=paired)  # type: ignore[arg-type]
    srv.reject_orphans = False
    sdk.chat.completions.create(model="fake-model", messages=messages)  # type: ignore[arg-type]
