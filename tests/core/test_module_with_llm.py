"""`with_llm` takes a model or a model string, and refuses anything else where it is given
(never at the first call, deep inside a run)."""

from __future__ import annotations

from typing import Any

import pytest

import promptimus as pm
from promptimus.errors import InvalidArgument, ModelResolutionError, NotAModel
from promptimus.llms import OpenAILike, ScriptedLLM
from promptimus.testing import FakeOpenAIServer


async def test_a_model_string_is_resolved_like_resolve_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAIServer() as server:
        server.chat.respond_with(lambda body: f"model {body['model']}")
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        prompt = pm.Prompt("You answer.").with_llm("openai:gpt-4o-mini")
        assert isinstance(prompt.llm, OpenAILike) and prompt.llm.model_name == "gpt-4o-mini"
        reply = await prompt.forward([pm.Message(role=pm.MessageRole.USER, content="hi")])
        assert reply.content == "model gpt-4o-mini"
        monkeypatch.setenv("PROMPTIMUS_MODEL_FAST", "openai:small-one")
        assert pm.Prompt("x").with_llm("fast").llm.model_name == "small-one"


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (5, "got int"),
        (None, "got NoneType"),
        ({"model": "gpt-4o-mini"}, "got dict"),
        (object(), "got object"),
        (ScriptedLLM, "got the class ScriptedLLM. Make an instance of it first."),
    ],
)
def test_anything_that_is_not_a_model_is_refused_at_once(bad: Any, named: str) -> None:
    prompt = pm.Prompt("x")
    with pytest.raises(NotAModel, match=named) as raised:
        prompt.with_llm(bad)
    assert isinstance(raised.value, InvalidArgument) and isinstance(raised.value, TypeError)
    assert "llm" not in prompt._providers  # nothing half applied


def test_an_unknown_model_string_is_refused_at_once() -> None:
    prompt = pm.Prompt("x")
    with pytest.raises(ModelResolutionError, match="Unknown provider 'nosuch'"):
        prompt.with_llm("nosuch:model")
    with pytest.raises(ModelResolutionError, match="neither"):
        prompt.with_llm("gpt-4o-mini")
    assert "llm" not in prompt._providers
