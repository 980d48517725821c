"""promptimus against a real llama-cpp-python server running SmolLM2-135M-Instruct.

A 135M model answers badly, so these tests assert what does not depend on its quality: every
call ends (a bound on each await fails the test instead of hanging), with a reply that is not
empty or with a named error; a deterministic rejection is sent once, never retried; structured
output degrades to what the server takes and remembers it. Every HTTP request is counted on the
client's transport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import (
    ContextWindowExceeded,
    FailedToParseOutput,
    MaxIterExceeded,
    OutputTruncated,
    ProviderUnavailable,
    ReactParseError,
    RequestRejected,
)
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.modules import MemoryModule, StructuralOutput
from promptimus.transport import RetryPolicy

BOUND = 300.0  # per awaited call; a 135M model on 2 busy cores writes ~20+ tokens a second
MAX_TOKENS = 48


class City(BaseModel):
    name: str
    population: int


class Counted:
    """The chat requests the client sent, by the `response_format` type each carried."""

    def __init__(self) -> None:
        self.formats: list[str | None] = []
        self.retry_waits: list[float] = []

    async def on_request(self, request: Any) -> None:
        if request.url.path.endswith("/chat/completions"):
            body = json.loads(request.content or b"{}")
            self.formats.append((body.get("response_format") or {}).get("type"))

    async def sleep(self, seconds: float) -> None:  # a retry would wait here first
        self.retry_waits.append(seconds)


@pytest.fixture
def counted() -> Counted:
    return Counted()


@pytest.fixture
def llm(llama_server: Any, counted: Counted) -> Iterator[OpenAILike]:
    client = openai.DefaultAsyncHttpxClient(event_hooks={"request": [counted.on_request]})
    yield OpenAILike(
        llama_server.model_path,
        api_key="sk-local",
        base_url=llama_server.base_url,
        timeout=BOUND,
        retry=RetryPolicy(max_retries=4, base_delay=0.01, max_delay=0.05, sleep=counted.sleep),
        call_kwargs={"max_tokens": MAX_TOKENS, "temperature": 0.0},
        http_client=client,
    )


def user(text: str) -> Message:
    return Message(role=MessageRole.USER, content=text)


async def test_chat_answers_once_with_text(llm: OpenAILike, counted: Counted) -> None:
    reply = await asyncio.wait_for(llm.achat([user("Say hello in one word.")]), BOUND)
    assert reply.content.strip()
    assert reply.finish_reason in ("stop", "length")
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    assert counted.formats == [None] and counted.retry_waits == []


async def test_stream_ends_with_a_finish_reason(llm: OpenAILike, counted: Counted) -> None:
    deltas = [d async for d in llm.astream([user("Count from one to five.")])]
    whole = await asyncio.wait_for(aaccumulate(_replay(deltas)), BOUND)
    assert whole.content.strip()
    assert whole.content == "".join(d.content or "" for d in deltas)
    assert whole.finish_reason in ("stop", "length")
    assert counted.formats == [None] and counted.retry_waits == []


async def _replay(items: list[Any]) -> Any:
    for item in items:
        yield item


async def test_memory_sends_the_earlier_turn(llm: OpenAILike, counted: Counted) -> None:
    chat = MemoryModule(4, system_prompt="You are brief.").with_llm(llm)
    first = await asyncio.wait_for(chat.forward("My name is Ada."), BOUND)
    second = await asyncio.wait_for(chat.forward("What is my name?"), BOUND)
    assert first.content.strip() and second.content.strip()
    assert [m.role for m in chat.memory.data] == ["user", "assistant"] * 2
    assert len(counted.formats) == 2 and counted.retry_waits == []


async def test_native_structured_output_degrades_to_json_object_and_remembers(
    llm: OpenAILike, counted: Counted
) -> None:
    extract = StructuralOutput(City, n_retries=1).with_llm(llm)
    for question in ("Oslo has 709000 people. Give the city.", "Paris has 2 million people."):
        try:
            city = await asyncio.wait_for(extract(question), BOUND)
        except FailedToParseOutput as exc:  # a weak model's JSON: named, never an empty success
            assert exc.raw and all(isinstance(raw, str) for raw in exc.raw)
        except OutputTruncated:  # rambled past max_tokens: named at once, not retried
            pass
        else:
            assert isinstance(city, City)
        if question.startswith("Oslo"):
            # the server's 500 for json_schema was a rejection: sent once, then json_object
            assert counted.formats[:2] == ["json_schema", "json_object"]
            first_call = len(counted.formats)
    assert llm.capabilities.response_format == "json_object"
    assert "json_schema" not in counted.formats[first_call:]  # remembered
    assert counted.retry_waits == []


async def test_the_500_body_is_what_the_fake_server_sends(llm: OpenAILike) -> None:
    from promptimus.testing import Fault

    with pytest.raises(RequestRejected) as caught:
        await asyncio.wait_for(
            llm.achat(
                [user("x")],
                response_format=StructuralOutput(City).response_format,
            ),
            BOUND,
        )
    assert caught.value.status == 500
    assert caught.value.rejected_fields == ("response_format.type",)
    expected = Fault.request_rejected().body["error"]["message"]
    said = caught.value.server_message
    # the same report; only the traceback's path differs (shortened in the fake)
    assert said.split("File ")[0] == expected.split("File ")[0]
    assert said.rsplit("app.py", 1)[1] == expected.rsplit("app.py", 1)[1]


async def test_prompted_structured_output_sends_no_response_format(
    llm: OpenAILike, counted: Counted
) -> None:
    extract = StructuralOutput(City, n_retries=1, native=False).with_llm(llm)
    try:
        city = await asyncio.wait_for(extract("Oslo has 709000 people."), BOUND)
    except FailedToParseOutput as exc:
        assert exc.raw and len(exc.raw) == len(counted.formats)
    except OutputTruncated:
        assert len(counted.formats) <= 2
    else:
        assert isinstance(city, City)
    assert set(counted.formats) == {None} and 1 <= len(counted.formats) <= 2
    assert counted.retry_waits == []


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_tool_calling_agent_ends_with_an_answer_or_a_named_error(
    llm: OpenAILike, counted: Counted
) -> None:
    agent = OpenaiToolCallingAgent("Use the add tool for sums.", [add], max_steps=3).with_llm(llm)
    try:
        output, record = await asyncio.wait_for(agent.run("What is 2 + 3?"), BOUND)
    except MaxIterExceeded:
        assert len(counted.formats) == 3
    else:
        assert output.content.strip() or output.tool_calls
        assert 1 <= len(record.steps) == len(counted.formats) <= 3
    assert counted.retry_waits == []


ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


async def test_a_forced_tool_call_and_its_result_go_back_to_the_server(
    llm: OpenAILike, counted: Counted
) -> None:
    """A small model calls a tool only when told to: ``tool_choice`` forces the call, so the
    next request carries the assistant turn that only calls a tool, which this server's chat
    template refuses without ``content`` (learnt once, not retried)."""
    history = [user("What is 2 + 3? Use the add tool.")]
    forced = {"type": "function", "function": {"name": "add"}}
    call = await asyncio.wait_for(llm.achat(history, tools=[ADD_TOOL], tool_choice=forced), BOUND)
    assert call.tool_calls and call.tool_calls[0].function.name == "add"
    history += [
        call,
        Message(role=MessageRole.TOOL, content="5", tool_call_id=call.tool_calls[0].id),
    ]
    try:
        answer = await asyncio.wait_for(llm.achat(history, tools=[ADD_TOOL]), BOUND)
    except OutputTruncated:
        pass
    else:
        assert answer.content.strip() or answer.tool_calls
    assert counted.retry_waits == []


async def test_react_agent_ends_with_an_answer_or_a_named_error(
    llm: OpenAILike, counted: Counted
) -> None:
    agent = ToolCallingAgent([add], max_steps=3).with_llm(llm)
    try:
        reply = await asyncio.wait_for(agent.forward("What is 2 + 3?"), BOUND)
    except (MaxIterExceeded, ReactParseError):
        assert 1 <= len(counted.formats) <= 3 + 3  # steps plus format retries, all bounded
    else:
        assert reply.content.strip()
    assert counted.retry_waits == []


async def test_context_overflow_is_named_and_sent_once(
    llm: OpenAILike, counted: Counted, llama_server: Any
) -> None:
    long = "word " * (llama_server.context_window + 500)
    with pytest.raises(ContextWindowExceeded) as caught:
        await asyncio.wait_for(llm.achat([user(long)]), BOUND)
    assert caught.value.context_window == llama_server.context_window
    assert caught.value.prompt_tokens is not None
    assert caught.value.prompt_tokens > llama_server.context_window
    assert counted.formats == [None] and counted.retry_waits == []


async def test_an_unreachable_server_is_named_not_hung(counted: Counted) -> None:
    dead = OpenAILike(
        "m",
        api_key="sk-local",
        base_url="http://127.0.0.1:9/v1",
        retry=RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02, sleep=counted.sleep),
    )
    with pytest.raises(ProviderUnavailable):
        await asyncio.wait_for(dead.achat([user("x")]), BOUND)


async def test_a_text_model_gets_images_described(llm: OpenAILike, counted: Counted) -> None:
    # llama-cpp-python serving a text-only model answers an image part with HTTP 500 (a
    # TypeError inside its chat template), which cannot be told from an overload: a text-only
    # model is declared so, and the agent describes each image instead.
    from promptimus.dto import ImageContent
    from promptimus.llms.capabilities import capabilities
    from promptimus.tools.tool import Tool

    def look() -> Message:
        """Take a picture."""
        pixel = ImageContent(url="data:image/png;base64,iVBORw0KGgo=")
        return Message(role=MessageRole.TOOL, content="[image 1 (image/png)]", images=[pixel])

    capabilities(llm).images = False
    agent = OpenaiToolCallingAgent("Answer briefly.", [Tool(look)], max_steps=2).with_llm(llm)
    agent.memory.extend(
        [
            user("Look."),
            Message(role=MessageRole.USER, content="Here:", images=list(look().images or [])),
        ]
    )
    output = await asyncio.wait_for(agent.forward("What did you see?"), BOUND)
    assert output.content.strip() or output.tool_calls
    assert counted.retry_waits == [] and 1 <= len(counted.formats) <= 2


SENTIMENTS = [
    ("I loved this film, it was wonderful.", "positive"),
    ("What a terrible, boring waste of time.", "negative"),
    ("The food was delicious and the staff were kind.", "positive"),
    ("The room was dirty and the bed was broken.", "negative"),
    ("Best concert I have ever been to!", "positive"),
    ("I want my money back, it broke in a day.", "negative"),
    ("A beautiful, moving story.", "positive"),
    ("The worst service I have ever had.", "negative"),
    ("Great value and fast delivery.", "positive"),
    ("It smelled awful and tasted worse.", "negative"),
    ("My kids had a fantastic day here.", "positive"),
    ("Rude people and a cold meal.", "negative"),
]


async def test_fewshot_trains_a_model_that_starts_from_zero(llm: OpenAILike) -> None:
    from promptimus.core import Module
    from promptimus.evals import Example, Score
    from promptimus.modules.prompt import Prompt
    from promptimus.optim import FewShot, fit

    class Sentiment(Module):
        def __init__(self) -> None:
            super().__init__()
            self.classify = Prompt("Is this review positive or negative?\n{text}")

        async def forward(self, text: str) -> Message:
            return await self.classify(text=text)  # type: ignore[no-any-return]

    def first_word(example: Example, output: Message) -> Score:
        words = output.content.strip().lower().split()
        got = words[0].strip(".,!:*\"'") if words else ""
        return Score(1.0, None) if got == example.expected else Score(0.0, f"said {got!r}")

    data = [Example({"text": text}, expected=label) for text, label in SENTIMENTS]
    task = Sentiment().with_llm(llm)
    result = await asyncio.wait_for(
        fit(
            task,
            data[:6],
            first_word,
            optimizer=FewShot(k=4, candidates=2, seed=0),
            valset=data[6:],
            budget=6 + 6 + 2 * 6,
            progress=False,
        ),
        BOUND * 4,
    )
    boot = result.history[1]
    successes = boot["demos_bootstrapped"]
    assert boot["demos_labelled"] == (6 - successes if successes < 4 else 0)
    tried = [e for e in result.history if e["candidate"] not in (None, 0)]
    assert tried and all(e["demos_bootstrapped"] + e["demos_labelled"] == 4 for e in tried)
    assert result.best_score >= result.baseline_score  # kept only if it validated better
    print(f"FewShot on SmolLM2: {result.baseline_score:.2f} -> {result.best_score:.2f}")
