"""Prompt: template formatting rules, the exact messages sent, and errors that name the problem."""

import pytest

import promptimus as pm
from promptimus.errors import LLMNotSet, PromptFormatError
from promptimus.llms import ScriptedLLM
from promptimus.modules import Prompt


async def test_forward_sends_formatted_system_prompt_before_history():
    llm = ScriptedLLM(["hello"])
    prompt = Prompt("You are {persona}. Answer in {lang}.").with_llm(llm)
    history = [pm.Message(role=pm.MessageRole.USER, content="hi")]

    reply = await prompt(history, persona="a pirate", lang="English")

    assert reply.content == "hello"
    sent, _ = llm.requests[0]
    assert [(m.role, m.content) for m in sent] == [
        ("system", "You are a pirate. Answer in English."),
        ("user", "hi"),
    ]


async def test_render_returns_exactly_what_forward_sends():
    llm = ScriptedLLM(["ok"])
    prompt = Prompt("Be {tone}.", role="user").with_llm(llm)
    history = [pm.Message(role="assistant", content="earlier")]

    rendered = prompt.render(history, tone="kind")
    await prompt.forward(history, tone="kind")

    assert rendered == llm.requests[0][0]
    assert rendered[0].role == pm.MessageRole.USER


async def test_provider_kwargs_reach_the_llm():
    llm = ScriptedLLM(["ok"])
    prompt = Prompt("x").with_llm(llm)
    await prompt(provider_kwargs={"temperature": 0.1})
    assert llm.requests[0][1] == {"temperature": 0.1}


def test_missing_variable_is_named():
    prompt = Prompt("Hi {name}, today is {day}.")
    with pytest.raises(PromptFormatError) as err:
        prompt.render(name="Ann")
    assert "day" in str(err.value)
    assert "name" in str(err.value)  # lists what was given


@pytest.mark.parametrize(
    "template",
    ["{user.__class__}", "{items[0]}", "{0}", "{}", "{x!r}", "{x:>10}", "unbalanced {"],
)
def test_only_plain_fields_are_allowed(template):
    with pytest.raises(PromptFormatError):
        Prompt(template).render(x=1, user="u", items=[1])


def test_literal_braces_and_extra_variables():
    prompt = Prompt('Reply as JSON like {{"a": {n}}}.')
    assert prompt.render(n=1, unused="ignored")[0].content == 'Reply as JSON like {"a": 1}.'


def test_prompt_without_llm_names_the_module():
    class Agent(pm.Module):
        def __init__(self):
            super().__init__()
            self.system = Prompt("x")

        async def forward(self):
            return await self.system()

    with pytest.raises(LLMNotSet, match="system"):
        Agent().run_sync()


def test_prompt_checkpoint_round_trip(tmp_path):
    prompt = Prompt("Line one\nLine {two}\n", role="user")
    prompt.save(tmp_path / "p.toml")
    loaded = Prompt("other").load(tmp_path / "p.toml")
    assert loaded.prompt.value == "Line one\nLine {two}\n"
    assert loaded.role.value == "user"
    assert loaded.digest() == prompt.digest()
