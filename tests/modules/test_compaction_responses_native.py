"""`Compactor(native=True)` on the Responses API: the request carries
``context_management=[{"type": "compaction", "compact_threshold": N}]``, the server replaces
what it read by one encrypted ``compaction`` item once the input is over N, and that item goes
back in later requests in place of what it replaced. Through the official SDK against the fake
Responses server, which applies the compaction before sizing the input against its window,
verifies the compaction items it gets back and reports its usage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from long_conversation import lookup, responses_responder, turn_text

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import CompactionEvent, FinalResult
from promptimus.dto import Message, MessageRole
from promptimus.dto.run_record import RunRecord
from promptimus.errors import ContextWindowExceeded, MalformedReply
from promptimus.llms import OpenAIResponses
from promptimus.modules import ClearToolResults, Compactor, Summarize
from promptimus.testing import FakeOpenAIServer
from promptimus.transport import RetryPolicy

WINDOW = 1800
TURNS = 12
TRIGGER = 900
RETRY = RetryPolicy(max_retries=0)


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(context_window=WINDOW) as server:
        server.responses.respond_with(responses_responder)
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAIResponses:
    return OpenAIResponses("gpt-test", api_key=srv.api_key, base_url=srv.base_url, retry=RETRY)


def native() -> Compactor:
    return Compactor(
        ClearToolResults(keep=2), Summarize(), trigger_tokens=TRIGGER, keep_last=1, native=True
    )


def agent(model: Any, compactor: Compactor | None) -> OpenaiToolCallingAgent:
    made = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=10_000, compactor=compactor
    )
    return made.with_llm(model)


async def play(
    agent: OpenaiToolCallingAgent, turns: int = TURNS, stream: bool = True
) -> tuple[list[CompactionEvent], list[RunRecord]]:
    events: list[CompactionEvent] = []
    records: list[RunRecord] = []
    for n in range(1, turns + 1):
        if not stream:
            result = await agent.run(turn_text(n))
            records.append(result.record)
            continue
        async for event in agent.stream(turn_text(n)):
            if isinstance(event, CompactionEvent):
                events.append(event)
            elif isinstance(event, FinalResult):
                assert event.output.content
                records.append(event.record)
    return events, records


def compaction_items(items: list[Any]) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict) and i.get("type") == "compaction"]


async def test_without_a_compactor_the_conversation_overflows(srv: FakeOpenAIServer) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(llm(srv), None))


async def test_native_mode_asks_the_server_to_compact_at_the_trigger(
    srv: FakeOpenAIServer,
) -> None:
    await play(agent(llm(srv), native()), turns=1)
    body = srv.responses.requests[-1]
    assert body["context_management"] == [{"type": "compaction", "compact_threshold": TRIGGER}]
    # the server does it all: no summary request is made here
    assert all("tools" in b for b in srv.responses.requests)


@pytest.mark.parametrize("stream", [True, False])
async def test_native_mode_fits_the_window_with_the_servers_figures(
    srv: FakeOpenAIServer, stream: bool
) -> None:
    events, records = await play(agent(llm(srv), native()), stream=stream)

    compactions = [c for record in records for c in record.compactions]
    assert compactions, "the server's compaction was not recorded"
    if stream:
        assert [(e.step, e.tokens_before, e.tokens_after) for e in events] == [
            (c.step, c.tokens_before, c.tokens_after) for c in compactions
        ]
    for record in records:
        for c in record.compactions:
            assert c.steps == ("server_compaction",)
            reply = record.steps[c.step].reply
            assert reply.usage is not None
            assert c.tokens_after == reply.usage.prompt_tokens  # what the server read
            assert c.tokens_before > TRIGGER >= c.tokens_after


async def test_the_compaction_item_goes_back_in_place_of_what_it_replaced(
    srv: FakeOpenAIServer,
) -> None:
    await play(agent(llm(srv), native()))

    issued: list[dict[str, Any]] = []
    for body, response in zip(srv.responses.requests, _outputs(srv), strict=True):
        sent = compaction_items(body["input"])
        if issued:
            # the latest item the server issued, verbatim, and nothing it replaced before it
            assert sent and sent[0]["encrypted_content"] == issued[-1]["encrypted_content"]
            roles = [i.get("role") for i in body["input"][: body["input"].index(sent[0])]]
            assert roles == ["system"]
        issued.extend(compaction_items(response))
    assert len(issued) >= 2


def _outputs(srv: FakeOpenAIServer) -> list[list[dict[str, Any]]]:
    return [list(output) for output in srv.responses.outputs]


async def test_the_compaction_item_survives_a_stored_conversation(srv: FakeOpenAIServer) -> None:
    first = agent(llm(srv), native())
    await play(first, turns=6)
    history = [Message.model_validate_json(m.model_dump_json()) for m in first.memory.as_list()]
    assert any(m.context_edits for m in history)

    second = agent(llm(srv), native())
    second.memory.extend(history)
    await play_turn(second, 7)
    assert compaction_items(srv.responses.requests[-2]["input"])


async def play_turn(made: OpenaiToolCallingAgent, n: int) -> None:
    result = await made.run(turn_text(n))
    assert result.output.content == f"Done with turn {n}."


async def test_a_forged_compaction_item_is_refused(srv: FakeOpenAIServer) -> None:
    client = openai.AsyncOpenAI(api_key=srv.api_key, base_url=srv.base_url)
    forged = {"type": "compaction", "encrypted_content": "gAAAA-not-from-this-server"}
    with pytest.raises(openai.BadRequestError, match="compaction"):
        await client.responses.create(
            model="gpt-test", input=[forged, {"role": "user", "content": "Hi"}]
        )


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "truncate"},
        {"type": "compaction", "compact_threshold": -5},
        {"type": "compaction", "compact_threshold": "900"},
    ],
)
async def test_a_bad_context_management_entry_is_refused(
    srv: FakeOpenAIServer, entry: dict[str, Any]
) -> None:
    client = openai.AsyncOpenAI(api_key=srv.api_key, base_url=srv.base_url)
    with pytest.raises(openai.BadRequestError, match="context_management"):
        await client.responses.create(model="gpt-test", input="Hi", context_management=[entry])


@pytest.mark.parametrize("content", [None, "", 7])
async def test_a_compaction_item_without_its_content_is_refused(
    srv: FakeOpenAIServer, content: Any
) -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-test",
        "output": [
            {"id": "cmp_1", "type": "compaction", "encrypted_content": content},
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
            },
        ],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
    }
    srv.responses.respond_with(lambda _: body)
    with pytest.raises(MalformedReply, match="encrypted_content"):
        await llm(srv).achat([Message(role=MessageRole.USER, content="Hi")])


async def test_a_conversation_continued_by_response_id_fits_too(srv: FakeOpenAIServer) -> None:
    chained = OpenAIResponses(
        "gpt-test",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RETRY,
        store=True,
        conversation="previous_response_id",
    )
    _, records = await play(agent(chained, native()), stream=False)

    assert any(record.compactions for record in records)
    assert all("previous_response_id" in b for b in srv.responses.requests[1:])
