"""Replay cassettes: provider calls recorded against the fake OpenAI server with the real SDK,
then answered from the file with the server stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.errors import CassetteError, ReplayMismatch
from promptimus.llms import OpenAILike
from promptimus.prompts import Prompt
from promptimus.testing import FakeOpenAIServer, Reply
from promptimus.testing.replay import replay
from promptimus.transport.retry import RetryPolicy

QUESTION = [Message(role=MessageRole.USER, content="What is 2+2?")]


def llm_at(base_url: str, api_key: str) -> OpenAILike:
    return OpenAILike(
        "fake-model",
        api_key=api_key,
        base_url=base_url,
        retry=RetryPolicy(max_retries=0),
        timeout=5,
        call_kwargs={"temperature": 0},
    )


def record_one(path: Path, system: str = "You are terse.") -> tuple[str, str]:
    """Records one plain and one streamed call; returns the server's address and key."""
    with FakeOpenAIServer() as srv:
        srv.chat.script(
            Reply("Four.", usage={"prompt_tokens": 9, "completion_tokens": 2}),
            Reply("Four, streamed."),
        )
        prompt = Prompt(system).with_llm(llm_at(srv.base_url, srv.api_key))
        with replay(path, mode="record"):
            plain = _run(prompt.forward(QUESTION))
            streamed = _run(prompt.forward_streamed([*QUESTION, QUESTION[0]], lambda d: None))
        assert plain.content == "Four."
        assert streamed.content == "Four, streamed."
        return srv.base_url, srv.api_key


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


def test_a_recorded_run_replays_offline_call_for_call_and_stream_delta_for_delta(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    base_url, key = record_one(path)
    # the server is stopped: any request sent now would fail to connect
    prompt = Prompt("You are terse.").with_llm(llm_at(base_url, key))
    deltas: list[MessageDelta] = []
    with replay(path, mode="strict") as cassette:
        plain = _run(prompt.forward(QUESTION))
        streamed = _run(prompt.forward_streamed([*QUESTION, QUESTION[0]], deltas.append))
    assert plain.content == "Four."
    assert streamed.content == "Four, streamed."
    assert "".join(d.content or "" for d in deltas) == "Four, streamed."
    assert len(deltas) > 1
    assert cassette.hits == 2
    assert cassette.misses == 0


def test_the_cassette_holds_no_key_no_auth_header_and_no_url_password(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    _, key = record_one(path)
    text = path.read_text()
    assert key not in text
    assert "authorization" not in text.lower()
    assert "x-api-key" not in text.lower()
    # a provider whose address carries a password: the cassette keeps the host, not the password
    secret = tmp_path / "secret.json"
    with FakeOpenAIServer() as srv:
        srv.chat.script(Reply("ok"))
        llm = llm_at(srv.base_url, srv.api_key)
        prompt = Prompt("x").with_llm(_Renamed(llm, "http://alice:hunter2@example.test/v1"))
        with replay(secret, mode="record"):
            _run(prompt.forward(QUESTION))
    stored = secret.read_text()
    assert "hunter2" not in stored
    assert "example.test" in stored
    entries = json.loads(stored)["interactions"]
    assert entries[0]["reply"]["content"] == "ok"


class _Renamed:
    """A provider that reports another address than the one it calls (as one behind a proxy)."""

    def __init__(self, llm: OpenAILike, base_url: str) -> None:
        self.llm = llm
        self.base_url = base_url
        self.model_name = llm.model_name
        self.call_kwargs = dict(llm.call_kwargs)

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        return await self.llm.achat(history, **kwargs)

    def astream(self, history: list[Message], **kwargs: Any) -> Any:
        return self.llm.astream(history, **kwargs)


def test_strict_fails_a_changed_prompt_with_its_difference_and_sends_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    base_url, key = record_one(path)
    changed = Prompt("You are verbose.").with_llm(llm_at(base_url, key))
    with replay(path, mode="strict"), pytest.raises(ReplayMismatch) as caught:
        _run(changed.forward(QUESTION))
    message = str(caught.value)
    assert "-" in caught.value.diff and "You are terse." in caught.value.diff
    assert "+" in caught.value.diff and "You are verbose." in caught.value.diff
    assert "You are verbose." in message
    assert 'mode="record"' in message
    # the file is unchanged by a failed strict run
    assert len(json.loads(path.read_text())["interactions"]) == 2


def test_replay_answers_known_requests_and_records_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    with FakeOpenAIServer() as srv:
        srv.chat.script(Reply("Four."), Reply("Verbose four."))
        known = Prompt("You are terse.").with_llm(llm_at(srv.base_url, srv.api_key))
        new = Prompt("You are verbose.").with_llm(llm_at(srv.base_url, srv.api_key))
        with replay(path, mode="record"):
            _run(known.forward(QUESTION))
        with replay(path, mode="replay") as cassette:
            assert _run(known.forward(QUESTION)).content == "Four."
            assert _run(new.forward(QUESTION)).content == "Verbose four."
        assert len(srv.chat.requests) == 2  # the recorded request was not sent again
        assert (cassette.hits, cassette.misses) == (1, 1)
    assert len(json.loads(path.read_text())["interactions"]) == 2


def test_a_replayed_reply_costs_no_tokens_but_keeps_its_recorded_usage(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    base_url, key = record_one(path)
    prompt = Prompt("You are terse.").with_llm(llm_at(base_url, key))
    with replay(path, mode="strict"):
        reply = _run(prompt.forward(QUESTION))
    assert reply.usage is not None and reply.usage.cache_hit
    assert reply.usage.prompt_tokens == 0
    stored = json.loads(path.read_text())["interactions"][0]["reply"]
    assert stored["usage"]["prompt_tokens"] == 9


def test_bad_modes_and_missing_cassettes_are_named(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="record"):
        replay(tmp_path / "x.json", mode="playback")  # type: ignore[arg-type]
    with (
        pytest.raises(CassetteError, match="does not exist"),
        replay(tmp_path / "none.json", mode="strict"),
    ):
        pass
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(CassetteError, match="not a replay cassette"), replay(tmp_path / "bad.json"):
        pass


def test_the_pytest_fixture_records_once_then_replays_strictly_offline(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            import asyncio, os
            from promptimus.llms import OpenAILike
            from promptimus.prompts import Prompt
            from promptimus.transport.retry import RetryPolicy

            def test_answer(replay_cassette):
                llm = OpenAILike("fake-model", api_key=os.environ["K"], base_url=os.environ["U"],
                                 retry=RetryPolicy(max_retries=0), timeout=5)
                reply = asyncio.run(Prompt(os.environ["SYSTEM"]).with_llm(llm).forward([]))
                assert reply.content == "Recorded."
            """
        )
    )

    def run(mode: str, system: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--disable-plugin-autoload", "-p", "promptimus", f"--replay-mode={mode}",
             "test_user.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, **env, "SYSTEM": system},
        )  # fmt: skip

    with FakeOpenAIServer() as srv:
        srv.chat.script(Reply("Recorded."))
        env = {"K": srv.api_key, "U": srv.base_url}
        recorded = run("record", "Be brief.", env)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassettes = list((tmp_path / "cassettes").rglob("*.json"))
    assert [c.name for c in cassettes] == ["test_answer.json"]
    offline = run("strict", "Be brief.", env)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    changed = run("strict", "Be long.", env)
    assert changed.returncode == 1
    assert "ReplayMismatch" in changed.stdout and "Be long." in changed.stdout


def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


def test_an_anthropic_tool_loop_with_signed_thinking_replays_offline(tmp_path: Path) -> None:
    from promptimus.agents import OpenaiToolCallingAgent
    from promptimus.llms import Anthropic
    from promptimus.testing import AnthropicReply, FakeAnthropicServer, Thinking, ToolCall

    path = tmp_path / "claude.json"

    def agent_at(address: tuple[str, str]) -> Any:
        llm = Anthropic(
            "claude-test",
            api_key=address[0],
            base_url=address[1],
            thinking=2048,
            retry=RetryPolicy(max_retries=0),
            timeout=5,
        )
        return OpenaiToolCallingAgent("You add.", [add]).with_llm(llm)

    with FakeAnthropicServer() as srv:
        srv.messages.script(
            AnthropicReply(
                thinking=[Thinking("I should add.")], tool_calls=[ToolCall("add", {"a": 1, "b": 2})]
            ),
            "3.",
        )
        address = (srv.api_key, srv.base_url)
        agent = agent_at(address)
        with replay(path, mode="record"):
            assert _run(agent("add 1 and 2")).content == "3."
        assert len(srv.messages.requests) == 2
    text = path.read_text()
    assert srv.api_key not in text
    assert "sig_" in text  # the thinking block's signature, kept as the provider returned it
    fresh = agent_at(address)  # the server is stopped: only the file can answer
    with replay(path, mode="strict") as cassette:
        assert _run(fresh("add 1 and 2")).content == "3."
    assert (cassette.hits, cassette.misses) == (2, 0)
