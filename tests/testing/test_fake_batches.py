"""The fake servers' batch endpoints, through the official SDKs: OpenAI's files and batches,
Anthropic's message batches; lines answered by the chat script, expiry, failures, cancel, list."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai

from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer, Fault


def _lines(*bodies: dict[str, Any]) -> bytes:
    return "".join(
        json.dumps(
            {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}
        )
        + "\n"
        for i, body in enumerate(bodies)
    ).encode()


def _chat(text: str, model: str = "fake-model") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


async def _openai_batch(client: openai.AsyncOpenAI, data: bytes) -> Any:
    uploaded = await client.files.create(file=("in.jsonl", data), purpose="batch")
    return await client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
    )


async def test_openai_batch_lines_are_answered_by_the_chat_script() -> None:
    with FakeOpenAIServer() as server:
        server.chat.script("first", Fault.status(500), "third")
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key)
        batch = await _openai_batch(client, _lines(_chat("a"), _chat("b"), _chat("c")))
        assert batch.status == "validating"
        assert server.chat.requests == []  # nothing is answered before the batch runs

        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "in_progress"
        batch = await client.batches.retrieve(batch.id)
        assert batch.status == "completed"
        assert batch.request_counts is not None
        assert (batch.request_counts.completed, batch.request_counts.failed) == (2, 1)

        assert batch.output_file_id is not None and batch.error_file_id is not None
        outputs = [
            json.loads(x)
            for x in (await client.files.content(batch.output_file_id)).text.splitlines()
        ]
        errors = [
            json.loads(x)
            for x in (await client.files.content(batch.error_file_id)).text.splitlines()
        ]
        answers = {
            line["custom_id"]: line["response"]["body"]["choices"][0]["message"]["content"]
            for line in outputs
        }
        assert answers == {"r0": "first", "r2": "third"}
        assert errors[0]["custom_id"] == "r1"
        assert errors[0]["response"]["status_code"] == 500
        listed = await client.batches.list()
        assert [item.id for item in listed.data] == [batch.id]


async def test_openai_batch_can_expire_fail_and_be_cancelled() -> None:
    with FakeOpenAIServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key)
        server.batches.expire = True
        server.batches.polls_before_done = 0
        expired = await client.batches.retrieve(
            (await _openai_batch(client, _lines(_chat("a")))).id
        )
        assert expired.status == "expired"
        assert expired.error_file_id is not None
        (line,) = (await client.files.content(expired.error_file_id)).text.splitlines()
        assert json.loads(line)["error"]["code"] == "batch_expired"

        server.batches.expire = False
        server.batches.fail = True
        failed = await _openai_batch(client, _lines(_chat("a")))
        assert failed.status == "failed"

        server.batches.fail = False
        mixed = await _openai_batch(client, _lines(_chat("a"), _chat("b", model="other")))
        assert mixed.status == "failed"
        assert mixed.errors is not None and mixed.errors.data
        assert mixed.errors.data[0].code == "mismatched_model"

        server.batches.polls_before_done = 5
        running = await _openai_batch(client, _lines(_chat("a")))
        cancelling = await client.batches.cancel(running.id)
        assert cancelling.status == "cancelling"
        assert (await client.batches.retrieve(running.id)).status == "cancelled"
        assert server.chat.requests == []  # no line of these batches was answered


async def test_openai_upload_needs_the_batch_purpose() -> None:
    with FakeOpenAIServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0)
        try:
            await client.files.create(file=("in.jsonl", b"{}\n"), purpose="fine-tune")
        except openai.BadRequestError as exc:
            assert "batch" in str(exc)
        else:  # pragma: no cover - the assertion names the failure
            raise AssertionError("a fine-tune upload was accepted")


def _message(text: str) -> dict[str, Any]:
    return {
        "model": "claude-fake",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
    }


async def test_anthropic_batch_requests_are_answered_by_the_messages_script() -> None:
    with FakeAnthropicServer() as server:
        server.messages.script("first", Fault.status(529))
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key=server.api_key)
        batches = client.messages.batches
        batch = await batches.create(
            requests=[
                {"custom_id": "r0", "params": _message("a")},  # type: ignore[typeddict-item]
                {"custom_id": "r1", "params": _message("b")},  # type: ignore[typeddict-item]
            ]
        )
        assert batch.processing_status == "in_progress"
        assert (await batches.retrieve(batch.id)).processing_status == "in_progress"
        ended = await batches.retrieve(batch.id)
        assert ended.processing_status == "ended"
        assert (ended.request_counts.succeeded, ended.request_counts.errored) == (1, 1)
        results = {entry.custom_id: entry.result async for entry in await batches.results(batch.id)}
        assert results["r0"].type == "succeeded"
        assert results["r0"].message.content[0].text == "first"  # type: ignore[union-attr]
        assert results["r1"].type == "errored"
        assert [item.id async for item in batches.list()] == [batch.id]


async def test_anthropic_batch_can_expire_be_refused_and_be_canceled() -> None:
    with FakeAnthropicServer() as server:
        client = anthropic.AsyncAnthropic(
            base_url=server.base_url, api_key=server.api_key, max_retries=0
        )
        batches = client.messages.batches
        one = [{"custom_id": "r0", "params": _message("a")}]
        server.batches.expire = True
        server.batches.polls_before_done = 0
        batch = await batches.create(requests=one)  # type: ignore[arg-type]
        assert (await batches.retrieve(batch.id)).request_counts.expired == 1
        assert [e.result.type async for e in await batches.results(batch.id)] == ["expired"]

        server.batches.expire = False
        server.batches.fail = True
        try:
            await batches.create(requests=one)  # type: ignore[arg-type]
        except anthropic.BadRequestError:
            pass
        else:  # pragma: no cover
            raise AssertionError("a refused batch was created")

        server.batches.fail = False
        server.batches.polls_before_done = 5
        batch = await batches.create(requests=one)  # type: ignore[arg-type]
        assert (await batches.cancel(batch.id)).processing_status == "canceling"
        ended = await batches.retrieve(batch.id)
        assert ended.request_counts.canceled == 1
        assert server.messages.requests == []
