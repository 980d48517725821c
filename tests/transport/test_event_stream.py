"""The event-stream decoder: linear in a line's length, and a line too long is a named error.

Work is counted (the bytes the decoder searched for line ends), never timed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import EventLineTooLong, MalformedReply
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy, event_stream
from promptimus.transport.event_stream import SSEDecoder


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


@pytest.mark.parametrize("size", [1, 7, 1024])
def test_one_long_line_in_small_pieces_is_searched_once(size: int) -> None:
    line = b'data: {"image": "' + b"A" * 200_000 + b'"}'
    body = line + b"\r\n\r\n"
    decoder = SSEDecoder()
    events = [event for piece in pieces(body, size) for event in decoder.feed(piece)]
    assert events == [line[6:]]
    assert decoder.scanned <= 2 * len(body)  # each byte: one search for LF, one for CR


def test_many_short_lines_in_one_piece_are_searched_once() -> None:
    body = b"".join(b"data: %d\n\n" % i for i in range(20_000)) + b"data: x\r\r"
    decoder = SSEDecoder()
    events = decoder.feed(body)
    assert len(events) == 20_001 and events[-1] == b"x"
    assert decoder.scanned <= 2 * len(body)


def test_a_line_over_the_limit_is_refused_as_soon_as_it_is_that_long() -> None:
    decoder = SSEDecoder(max_line=1000)
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(EventLineTooLong, match="longer than 1000 bytes"):
        decoder.feed(b"x" * 200)  # no line end yet: refused without waiting for one
    with pytest.raises(EventLineTooLong):
        SSEDecoder(max_line=1000).feed(b"data: " + b"y" * 2000 + b"\n\n")
    assert SSEDecoder(max_line=1000).feed(b"data: " + b"z" * 900 + b"\n\n") == [b"z" * 900]


def test_a_crlf_split_between_pieces_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []
    assert decoder.feed(b"\r\n") == [b"a"]


async def test_a_streamed_line_over_the_limit_is_a_malformed_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_stream, "MAX_LINE_BYTES", 4096)
    with FakeOpenAIServer() as srv:
        llm = OpenAILike(
            "m", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
        )
        srv.chat.script(Fault.raw(b"<html>" + b"x" * 10_000 + b"</html>"))
        with pytest.raises(MalformedReply, match="longer than 4096 bytes") as raised:
            await aaccumulate(llm.astream([Message(role=MessageRole.USER, content="hi")]))
    assert isinstance(raised.value, MalformedReply)
