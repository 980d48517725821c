"""A 200 reply that is not a valid answer is a named error, retried once, never a success.

Every reply shape comes from the fake server (`Fault.malformed(kind)`) through the real openai SDK
(or httpx for rerank); the tests count the requests the server saw: a malformed reply is retried
once, so a server that keeps answering that way sees exactly two requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.embedders.openai import OpenAILikeEmbedder
from promptimus.errors import EmptyReply, InvalidArgument, MalformedReply, ProviderResponseError
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.llms.openai_format import chunk_to_delta, completion_to_message
from promptimus.modules import MemoryModule
from promptimus.rerankers.openai import OpenAILikeReranker
from promptimus.testing import MALFORMED_KINDS, FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy
from promptimus.vector_stores.base import SearchHit

FAST = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.002)


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
    kwargs.setdefault("retry", FAST)
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=10.0, **kwargs)


def ask(text: str = "hello there") -> list[Message]:
    return [Message(role=MessageRole.USER, content=text)]


def kinds(route: str) -> list[str]:
    return [kind for kind, routes in MALFORMED_KINDS.items() if route in routes]


# What the error must name for each chat kind (plain requests).
CHAT_PROBLEMS = {
    "invalid_json": "not valid JSON",
    "empty_body": "not valid JSON",
    "html": "<!DOCTYPE html>",
    "text": "upstream connect error",
    "json_list": "JSON list",
    "empty_object": "choices is missing",
    "null_choices": "choices is null",
    "no_choices": "choices is an empty list",
    "choices_not_list": "choices is text ('abc')",
    "null_message": "choices[0].message is null",
    "wrong_types": "choices[0].message.content is a number (123)",
    "bad_tool_calls": "choices[0].message.tool_calls is text",
    "bad_usage": "usage.prompt_tokens is text ('many')",
    "empty_answer": "empty answer",
    "empty_length": "token budget",
}


def test_every_chat_kind_has_an_expected_problem() -> None:
    assert set(CHAT_PROBLEMS) == set(kinds("chat"))


# --- chat, plain requests ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(CHAT_PROBLEMS))
async def test_a_malformed_chat_reply_is_named_and_retried_once(
    srv: FakeOpenAIServer, kind: str
) -> None:
    srv.chat.script(*[Fault.malformed(kind)] * 3, "never reached")
    with pytest.raises(ProviderResponseError) as info:
        await llm(srv).achat(ask())
    error = info.value
    assert isinstance(error, MalformedReply)
    assert CHAT_PROBLEMS[kind] in str(error)
    assert "'m'" in str(error) and srv.base_url in str(error)  # says which request
    # an empty reply cut at the token limit would be cut again: not retried
    assert len(srv.chat.requests) == (1 if kind == "empty_length" else 2)


@pytest.mark.parametrize("kind", ["html", "null_choices", "empty_answer", "wrong_types"])
async def test_one_malformed_reply_then_a_good_one_succeeds(
    srv: FakeOpenAIServer, kind: str
) -> None:
    provider = llm(srv)
    srv.chat.script(Fault.malformed(kind), "the real answer")
    reply = await provider.achat(ask())
    assert reply.content == "the real answer"
    assert len(srv.chat.requests) == 2
    assert provider.request_count == 1


async def test_malformed_replies_count_against_the_retry_budget(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed("html"), "not reached")
    provider = llm(srv, retry=RetryPolicy(max_retries=0))
    with pytest.raises(MalformedReply, match="not a JSON object"):
        await provider.achat(ask())
    assert len(srv.chat.requests) == 1


async def test_a_5xx_then_malformed_replies_still_retries_the_malformed_one_once(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.status(503), *[Fault.malformed("no_choices")] * 3)
    with pytest.raises(MalformedReply, match="empty list"):
        await llm(srv).achat(ask())
    assert len(srv.chat.requests) == 3


async def test_an_empty_answer_is_not_stored_in_memory(srv: FakeOpenAIServer) -> None:
    chat = MemoryModule(memory_size=10, system_prompt="Answer.").with_llm(llm(srv))
    srv.chat.script(Fault.malformed("empty_answer"), Fault.malformed("empty_answer"))
    with pytest.raises(EmptyReply):
        await chat("first question")
    assert len(chat.memory) == 0
    srv.chat.script(Fault.malformed("no_choices"), Fault.malformed("null_choices"))
    with pytest.raises(MalformedReply):
        await chat("second question")
    assert len(chat.memory) == 0
    reply = await chat("third question")
    assert reply.content == "echo: third question"
    assert [m.content for m in chat.memory] == ["third question", "echo: third question"]


# --- chat, streams -----------------------------------------------------------------------------

# Kinds whose stream form is a malformed chunk, a page instead of the stream, or a stream that
# finishes with nothing in it: each is a MalformedReply before any output, retried once.
STREAM_RETRIED = [
    "invalid_json",
    "html",
    "text",
    "json_list",
    "empty_object",
    "null_choices",
    "choices_not_list",
    "null_message",
    "wrong_types",
    "bad_tool_calls",
    "bad_usage",
    "empty_answer",
]


@pytest.mark.parametrize("kind", STREAM_RETRIED)
async def test_a_malformed_stream_is_named_and_retried_once(
    srv: FakeOpenAIServer, kind: str
) -> None:
    srv.chat.script(*[Fault.malformed(kind)] * 3, "never reached")
    received: list[MessageDelta] = []
    with pytest.raises(MalformedReply) as info:
        async for delta in llm(srv).astream(ask()):
            received.append(delta)
    assert not received  # nothing was delivered before the failure
    assert srv.base_url in str(info.value)
    assert len(srv.chat.requests) == 2


async def test_a_stream_cut_at_the_token_limit_with_nothing_in_it_is_not_retried(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.malformed("empty_length"), "never reached")
    with pytest.raises(EmptyReply, match="token budget") as info:
        await aaccumulate(llm(srv).astream(ask()))
    assert info.value.finish_reason == "length"
    assert len(srv.chat.requests) == 1


async def test_a_stream_request_answered_with_html_says_so(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed("html"), Fault.malformed("html"))
    with pytest.raises(MalformedReply, match=r"text/html body instead of an event stream"):
        await aaccumulate(llm(srv).astream(ask()))


async def test_a_malformed_stream_once_then_a_good_one_streams(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed("choices_not_list"), "streamed after all")
    message = await aaccumulate(llm(srv).astream(ask()))
    assert message.content == "streamed after all"
    assert len(srv.chat.requests) == 2


@pytest.mark.parametrize("kind", ["invalid_json", "wrong_types", "null_choices", "json_list"])
async def test_a_malformed_chunk_after_output_is_raised_not_retried(
    srv: FakeOpenAIServer, kind: str
) -> None:
    srv.chat.script(Fault.malformed(kind, after_chunks=3), "never reached")
    received: list[MessageDelta] = []
    with pytest.raises(MalformedReply, match="stream interrupted"):
        async for delta in llm(srv).astream(ask("one two three four five")):
            received.append(delta)
    assert "".join(d.content or "" for d in received)  # output had started...
    assert len(srv.chat.requests) == 1  # ...so it was not sent again


async def test_a_stream_of_reasoning_only_is_an_empty_answer(srv: FakeOpenAIServer) -> None:
    from promptimus.testing import Reply

    srv.chat.script(Reply(reasoning="thinking hard about it", finish_reason="length"))
    with pytest.raises(EmptyReply, match="only reasoning"):
        await aaccumulate(llm(srv).astream(ask()))
    assert len(srv.chat.requests) == 1


# --- embeddings and rerank ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", kinds("embeddings"))
async def test_a_malformed_embeddings_reply_is_named_and_retried_once(
    srv: FakeOpenAIServer, kind: str
) -> None:
    srv.embeddings.script(*[Fault.malformed(kind)] * 3)
    embedder = OpenAILikeEmbedder("e", api_key=srv.api_key, base_url=srv.base_url, retry=FAST)
    with pytest.raises(MalformedReply) as info:
        await embedder.aembed_batch(["alpha beta", "gamma delta"])
    assert "embedding request" in str(info.value)
    assert len(srv.embeddings.requests) == 2
    assert embedder.request_count == 0


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("nan", "NaN"),
        ("ragged", "differ in length"),
        ("short_data", "1 embeddings for 2 inputs"),
        ("empty_embedding", "is empty"),
        ("null_data", "data is NoneType"),
    ],
)
async def test_embeddings_problems_are_named(
    srv: FakeOpenAIServer, kind: str, problem: str
) -> None:
    srv.embeddings.script(Fault.malformed(kind), Fault.malformed(kind))
    embedder = OpenAILikeEmbedder("e", api_key=srv.api_key, base_url=srv.base_url, retry=FAST)
    with pytest.raises(MalformedReply, match=problem):
        await embedder.aembed_batch(["alpha beta", "gamma delta"])


DOCS = [
    SearchHit(id=str(i), document=text, score=0.0)
    for i, text in enumerate(["cats purr", "dogs bark"])
]


@pytest.mark.parametrize("kind", kinds("rerank"))
async def test_a_malformed_rerank_reply_is_named_and_retried_once(
    srv: FakeOpenAIServer, kind: str
) -> None:
    srv.rerank.script(*[Fault.malformed(kind)] * 3)
    reranker = OpenAILikeReranker("r", base_url=srv.base_url, retry=FAST)
    with pytest.raises(MalformedReply, match="rerank with 'r'"):
        await reranker.rerank("cats", DOCS)
    assert len(srv.rerank.requests) == 2


# --- the fault itself and the reading rules ------------------------------------------------------


def test_an_unknown_malformed_kind_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="unknown malformed kind 'htlm'"):
        Fault.malformed("htlm")


def test_a_kind_for_another_route_is_refused_when_scripted(srv: FakeOpenAIServer) -> None:
    with pytest.raises(InvalidArgument, match="applies to embeddings, not to the chat route"):
        srv.chat.script("fine", Fault.malformed("nan"))
    assert srv.chat.pending == 0  # nothing of the script was queued


def _completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}


def test_a_refusal_is_the_answer_text() -> None:
    reply = completion_to_message(
        _completion({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    )
    assert reply.content == "I can't help with that."


def test_tool_calls_alone_are_an_answer_and_object_arguments_are_encoded() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": {"a": 1}}}
    reply = completion_to_message(
        _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
    )
    assert reply.tool_calls is not None
    assert reply.tool_calls[0].function.arguments == '{"a": 1}'


def test_a_tool_call_without_a_function_is_malformed() -> None:
    call = {"id": "c1", "type": "function", "function": None}
    with pytest.raises(MalformedReply, match=r"tool_calls\[0\]\.function is null"):
        completion_to_message(_completion({"role": "assistant", "tool_calls": [call]}))


def test_whitespace_only_text_is_an_empty_answer() -> None:
    with pytest.raises(EmptyReply):
        completion_to_message(_completion({"role": "assistant", "content": " \n "}))


def test_chunks_without_choices_pass_only_with_usage_and_azure_style_chunks_pass() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert chunk_to_delta({"usage": usage}).usage is not None
    with pytest.raises(MalformedReply, match="no usage"):
        chunk_to_delta({"id": "x"})
    # Azure's content-filter chunks carry a choice without a delta
    assert chunk_to_delta({"choices": [{"index": 0, "finish_reason": None}]}).content is None


def test_token_counts_pydantic_would_read_still_pass() -> None:
    message = {"role": "assistant", "content": "hi"}
    reply = completion_to_message(
        {**_completion(message), "usage": {"prompt_tokens": 12.0, "completion_tokens": "3"}}
    )
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    with pytest.raises(MalformedReply, match="completion_tokens is a number"):
        completion_to_message({**_completion(message), "usage": {"completion_tokens": -1}})
