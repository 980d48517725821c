"""Prompt: template formatting rules, the exact messages sent, and errors that name the problem."""

import pytest

import promptimus as pm
from promptimus.errors import InvalidArgument, LLMNotSet, PromptFormatError
from promptimus.llms import ScriptedLLM
from promptimus.modules import Prompt
from promptimus.prompts import DynamicPrompt


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


# --- one interface for Prompt and DynamicPrompt -------------------------------------------------


async def test_a_prompt_renders_the_same_through_the_shared_interface():
    from promptimus.prompts import BasePrompt

    prompt = Prompt("Be {tone}.", demos=[["q", "a"]])
    history = [pm.Message(role="user", content="hi")]

    assert isinstance(prompt, BasePrompt)
    assert await prompt.arender(history, tone="kind") == prompt.render(history, tone="kind")
    prepared = await prompt.prepare()
    assert prepared.template == "Be {tone}."
    assert [m.content for m in prepared.render(None, tone="brief")] == ["Be brief.", "q", "a"]


async def test_a_dynamic_prompt_computes_once_and_renders_with_any_variables():
    from promptimus.prompts import BasePrompt, DynamicPrompt
    from promptimus.tools import RunContext

    steps: list[int] = []

    async def instructions(ctx: RunContext) -> str:
        steps.append(ctx.step)
        return f"Step {ctx.step}."

    prompt = DynamicPrompt(instructions, suffix="Tools: {tools}")
    assert isinstance(prompt, BasePrompt)

    prepared = await prompt.prepare(RunContext(step=3))
    first = prepared.render(None, tools="a, b")
    second = prepared.render([pm.Message(role="user", content="hi")], tools="a")

    assert steps == [3]  # the callable ran once for both renderings
    assert prepared.template is None
    assert [m.content for m in first] == ["Step 3.\n\nTools: a, b"]
    assert [m.content for m in second] == ["Step 3.\n\nTools: a", "hi"]
    assert await prompt.arender(None, RunContext(step=4), tools="c") == [
        pm.Message(role="system", content="Step 4.\n\nTools: c")
    ]


def test_check_variables_fails_as_rendering_would_without_computing_anything():
    from promptimus.prompts import DynamicPrompt

    calls: list[object] = []
    dynamic = DynamicPrompt(lambda ctx: calls.append(ctx) or "text", suffix="Use {tool_desc}")

    with pytest.raises(PromptFormatError, match="tool_desc"):
        dynamic.check_variables({})
    with pytest.raises(PromptFormatError, match="lang"):
        Prompt("Answer in {lang}.").check_variables({"tone": "kind"})
    dynamic.check_variables({"tool_desc": "x"})
    Prompt("Answer in {lang}.").check_variables({"lang": "French"})
    assert calls == []


@pytest.mark.parametrize("text", [123, 1.5, b"bytes", ["a list"], True])
def test_a_prompt_that_is_not_text_is_refused_where_given(text):
    with pytest.raises(InvalidArgument, match="Prompt text must be a str"):
        Prompt(text)


def test_a_prompt_may_be_left_unset_for_a_checkpoint_to_fill():
    assert not Prompt().prompt.is_set
    assert Prompt("Hi {name}").prompt.value == "Hi {name}"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"suffix": 5}, "suffix must be a str"),
        ({"suffix": ["a"]}, "suffix must be a str"),
        ({"role": "narrator"}, "role must be one of"),
    ],
)
def test_a_dynamic_prompt_refuses_bad_arguments_where_given(arguments, expected):
    with pytest.raises(InvalidArgument, match=expected):
        DynamicPrompt(lambda ctx: "Be brief.", **arguments)
