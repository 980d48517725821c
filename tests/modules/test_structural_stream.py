"""StructuralOutput.stream and the agents' PartialOutput events: partial objects, in order, while
the reply streams from the fake server through the real SDK; the last is forward's result."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import FinalResult, OpenaiToolCallingAgent, PartialOutput
from promptimus.llms import OpenAILike
from promptimus.modules.partial_output import PartialReader, partial_model
from promptimus.modules.structural import StructuralOutput
from promptimus.testing import FakeOpenAIServer, Fault


class Address(BaseModel):
    city: str
    zip: int


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]
    address: Address


ANN = Person(name="Ann Lee", age=31, tags=["admin", "ops"], address=Address(city="Oslo", zip=150))
TEXT = json.dumps(ANN.model_dump(), indent=2)  # word-sized pieces on the wire


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


def in_order(snapshot: BaseModel) -> bool:
    """The fields set so far are a prefix of the model's fields."""
    fields = list(Person.model_fields)
    present = [name for name in fields if getattr(snapshot, name) is not None]
    return present == fields[: len(present)]


async def test_partials_arrive_in_order_and_the_last_is_forwards_result(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(TEXT, TEXT)
    extract = StructuralOutput(Person).with_llm(llm(srv))
    items = [item async for item in extract.stream("Who is Ann?")]
    *partials, last = items
    assert last == await extract.forward("Who is Ann?") == ANN
    assert isinstance(last, Person)
    assert len(partials) >= 5 and all(isinstance(p, partial_model(Person)) for p in partials)
    assert all(in_order(p) for p in partials)
    names = [p.name for p in partials if p.name is not None]
    assert names[0] != "Ann Lee" and names[-1] == "Ann Lee"  # the name grew as it streamed
    assert partials[-1].model_dump() == ANN.model_dump()
    assert srv.chat.requests[0]["stream"] is True
    assert srv.chat.requests[0]["response_format"]["type"] == "json_schema"


async def test_a_reply_that_fails_validation_is_retried_while_streaming(
    srv: FakeOpenAIServer,
) -> None:
    bad = json.dumps({"name": "Ann Lee", "age": "old", "tags": [], "address": None})
    srv.chat.script(bad, TEXT)
    extract = StructuralOutput(Person, n_retries=1).with_llm(llm(srv))
    items = [item async for item in extract.stream("Who is Ann?")]
    assert items[-1] == ANN and len(srv.chat.requests) == 2
    retry = srv.chat.requests[1]["messages"][-1]["content"]
    assert "age" in retry and "does not match" in retry


async def test_stopping_early_ends_the_call(srv: FakeOpenAIServer) -> None:
    srv.chat.script(TEXT)
    extract = StructuralOutput(Person).with_llm(llm(srv))
    stream = extract.stream("Who is Ann?")
    first = await stream.__anext__()
    await stream.aclose()
    assert first.model_dump(exclude_none=True) == {} or in_order(first)


async def test_a_caller_cancelled_while_waiting_leaves_no_task_behind(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.stall())  # the reply never comes: the caller waits until cancelled
    extract = StructuralOutput(Person).with_llm(llm(srv))

    async def read_all() -> None:
        async for _ in extract.stream("Who is Ann?"):
            pass

    reader = asyncio.ensure_future(read_all())
    for _ in range(500):  # bounded: 500 looks, 10 ms apart
        if srv.chat.requests:
            break
        await asyncio.sleep(0.01)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    await asyncio.sleep(0)
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []


async def test_an_agent_stream_carries_the_partials_of_a_structured_answer(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(TEXT)
    agent = OpenaiToolCallingAgent("Extract.", [], structural_output=Person).with_llm(llm(srv))
    with pm.Session():
        events = [event async for event in agent.stream("Who is Ann?")]
    partials = [e.output for e in events if isinstance(e, PartialOutput)]
    final = events[-1]
    assert isinstance(final, FinalResult) and final.output == ANN
    assert len(partials) >= 5 and all(in_order(p) for p in partials)
    assert partials[-1].model_dump() == ANN.model_dump()


def test_a_number_still_being_written_is_left_out() -> None:
    reader = PartialReader(Person)
    assert reader.feed('{"name": "A", "age": 3') is not None
    snapshot = reader.feed('{"name": "A", "age": 31,')
    assert snapshot is not None and snapshot.age == 31  # never the 3 of 31
    assert reader.feed('{"name": "A", "age": 31, ') is None  # nothing new
