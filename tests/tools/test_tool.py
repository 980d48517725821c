"""Calling tools: validation, execution, context injection, results, module tools, checkpoints."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, BeforeValidator

from promptimus.core import Module
from promptimus.dto import Message, MessageRole, ToolFunction, ToolRequest
from promptimus.errors import (
    DuplicateToolName,
    InvalidArgument,
    LLMNotSet,
    MaxIterExceeded,
    ToolArgumentsError,
    ToolError,
    ToolExecutionError,
)
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.memory import MemoryModule
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool, handoff_messages, snake_case, toolset


class Point(BaseModel):
    x: float
    y: float


def add(a: int, b: int = 10) -> int:
    """Add two numbers."""
    return a + b


# ---------------------------------------------------------------------------------- arguments


async def test_call_with_json_text_dict_and_lax_coercion() -> None:
    tool = Tool(add)
    assert await tool.call('{"a": 1, "b": 2}') == "3"
    assert await tool.call({"a": 1}) == "11"
    assert await tool.call('{"a": "5"}') == "15"  # pydantic lax mode: numeric string -> int


async def test_zero_arg_tool_accepts_empty_string_and_empty_object() -> None:
    tool = Tool.decorate(lambda: "pong", name="ping")
    assert await tool.call("") == "pong"
    assert await tool.call("{}") == "pong"
    assert await tool.call(None) == "pong"


async def test_bad_json_is_a_model_readable_arguments_error() -> None:
    with pytest.raises(ToolArgumentsError, match=r"'add' are not valid JSON .*JSON object"):
        await Tool(add).call('{"a": 1,')


async def test_non_object_json_is_refused() -> None:
    with pytest.raises(ToolArgumentsError, match="must be a JSON object, not \\[1, 2\\]"):
        await Tool(add).call("[1, 2]")


async def test_missing_invalid_and_unexpected_arguments_are_named() -> None:
    tool = Tool(add)
    with pytest.raises(ToolArgumentsError, match="a: missing required argument"):
        await tool.call("{}")
    with pytest.raises(ToolArgumentsError, match=r"b: Input should be a valid integer.*'ten'"):
        await tool.call('{"a": 1, "b": "ten"}')
    with pytest.raises(ToolArgumentsError, match="c: unexpected argument"):
        await tool.call('{"a": 1, "c": 3}')


async def test_arguments_error_does_not_run_the_function() -> None:
    calls: list[int] = []

    def record(a: int) -> None:
        calls.append(a)

    with pytest.raises(ToolArgumentsError):
        await Tool(record).call('{"a": "x"}')
    assert calls == []


async def test_nested_model_arguments_arrive_as_model_instances() -> None:
    seen: list[Point] = []

    def plot(p: Point, label: str = "") -> str:
        seen.append(p)
        return label

    await Tool(plot).call('{"p": {"x": 1, "y": "2.5"}}')
    assert seen == [Point(x=1, y=2.5)]
    with pytest.raises(ToolArgumentsError, match=r"p\.y: missing required argument"):
        await Tool(plot).call('{"p": {"x": 1}}')


async def test_function_defaults_apply_when_argument_omitted() -> None:
    sentinel = object()

    def f(a: Any = sentinel) -> bool:
        return a is sentinel

    assert await Tool(f).call("{}") == "true"


async def test_positional_only_parameters_are_passed_positionally() -> None:
    def f(a: int, /, b: int = 0) -> int:
        return a * 10 + b

    assert await Tool(f).call('{"a": 4, "b": 2}') == "42"


# ---------------------------------------------------------------------------------- execution


async def test_sync_function_runs_in_a_worker_thread_and_async_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}

    def sync_fn() -> None:
        threads["sync"] = threading.get_ident()

    async def async_fn() -> None:
        threads["async"] = threading.get_ident()

    await Tool(sync_fn).call("{}")
    await Tool(async_fn).call("{}")
    assert threads["sync"] != loop_thread
    assert threads["async"] == loop_thread


async def test_slow_sync_tools_do_not_block_each_other() -> None:
    barrier = threading.Barrier(2, timeout=30)  # generous: only a real deadlock reaches it

    def wait() -> str:
        barrier.wait()  # deadlocks (BrokenBarrierError) unless both run at the same time
        return "ok"

    tool = Tool(wait)
    assert await asyncio.gather(tool.call("{}"), tool.call("{}")) == ["ok", "ok"]


async def test_exception_in_tool_becomes_execution_error_with_cause() -> None:
    def divide(a: float, b: float) -> float:
        return a / b

    with pytest.raises(ToolExecutionError, match="'divide' failed: ZeroDivisionError") as info:
        await Tool(divide).call('{"a": 1, "b": 0}')
    assert isinstance(info.value.__cause__, ZeroDivisionError)


async def test_model_fixable_promptimus_errors_become_execution_errors() -> None:
    async def sub() -> None:
        raise MaxIterExceeded("sub-agent gave up")

    with pytest.raises(ToolExecutionError, match="sub-agent gave up"):
        await Tool(sub).call("{}")


async def test_user_fixable_errors_propagate_unchanged() -> None:
    class NeedsLLM(Module):
        async def forward(self, request: str | list[Message]) -> str:
            return (await self.llm.achat([])).content

    with pytest.raises(LLMNotSet):
        await Tool.from_module(NeedsLLM()).call('{"request": "hi"}')


async def test_calling_a_tool_calls_its_function_and_forward_is_the_module_path() -> None:
    tool = Tool(add)
    assert tool(2, b=3) == 5  # the function it wraps, as in the original promptimus
    assert await tool.forward(a=1) == 11


async def test_forward_hooks_see_the_validated_python_arguments() -> None:
    tool = Tool(add)
    seen: list[tuple[Any, Any, Any]] = []
    tool.register_forward_hook(lambda mod, args, kwargs, out: seen.append((args, kwargs, out)))
    await tool.call('{"a": "2"}')
    assert seen == [((), {"a": 2}, 12)]


# ---------------------------------------------------------------------------------- context


async def test_context_is_injected_and_hidden_from_the_model() -> None:
    @Tool.decorate
    def whoami(ctx: RunContext[dict[str, str]], greeting: str) -> str:
        return f"{greeting}, {ctx.deps['user']} (step {ctx.step}, call {ctx.tool_call_id})"

    assert "ctx" not in whoami.parameters_schema["properties"]
    ctx = RunContext(deps={"user": "ada"}, step=2).for_tool_call("call_7")
    assert await whoami.call('{"greeting": "hi"}', ctx) == "hi, ada (step 2, call call_7)"


async def test_context_sent_by_the_model_is_refused() -> None:
    def f(ctx: RunContext, a: int) -> int:
        return a

    with pytest.raises(ToolArgumentsError, match="ctx: unexpected argument"):
        await Tool(f).call('{"a": 1, "ctx": {}}', RunContext())


async def test_missing_context_gets_an_empty_one() -> None:
    def f(ctx: RunContext) -> str:
        return f"{ctx.deps}/{len(ctx.messages)}"

    assert await Tool(f).call("{}") == "None/0"


async def test_context_reaches_sync_tools_in_their_thread() -> None:
    def f(ctx: RunContext[int]) -> int:
        return ctx.deps * 2

    assert await Tool(f).call("{}", RunContext(deps=21)) == "42"


# ---------------------------------------------------------------------------------- results


@dataclasses.dataclass
class Forecast:
    city: str
    temps: list[float]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "OK"),
        ("plain ünïcode text", "plain ünïcode text"),
        (Message(role=MessageRole.ASSISTANT, content="from a module"), "from a module"),
        (Point(x=1, y=2), '{"x":1.0,"y":2.0}'),
        (Forecast("Oslo", [1.5]), '{"city":"Oslo","temps":[1.5]}'),
        ({"a": [1, "ü"]}, '{"a":[1,"ü"]}'),
        ([1, 2], "[1,2]"),
        (3, "3"),
        (True, "true"),
    ],
)
async def test_results_become_text(value: Any, text: str) -> None:
    async def produce() -> Any:
        return value

    assert await Tool(produce).call("{}") == text


# ---------------------------------------------------------------------------------- openai shape


def test_to_openai_and_prompt_description() -> None:
    tool = Tool(add)
    assert tool.to_openai() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 10}},
                "required": ["a"],
                "additionalProperties": False,
            },
        },
    }
    text = tool.describe_for_prompt()
    assert text.startswith("add: Add two numbers.\n")
    assert json.loads(text.split("Arguments (JSON schema): ", 1)[1]) == tool.parameters_schema


def test_description_is_tunable_and_shows_in_the_openai_entry() -> None:
    tool = Tool(add, description="Sum.")
    assert tool.to_openai()["function"]["description"] == "Sum."
    tool.description.value = "Adds integers."
    assert tool.to_openai()["function"]["description"] == "Adds integers."


def test_decorate_bare_and_with_arguments() -> None:
    @Tool.decorate
    def one() -> int:
        """One."""
        return 1

    @Tool.decorate(name="two_tool", description="Two.")
    def two() -> int:
        return 2

    assert isinstance(one, Tool) and (one.name, one.description.value) == ("one", "One.")
    assert (two.name, two.description.value) == ("two_tool", "Two.")


def test_handoff_options_only_apply_to_modules() -> None:
    with pytest.raises(ToolError, match="from_module"):
        Tool(add, handoff_history=True)


# ---------------------------------------------------------------------------------- modules


class WeatherAgent(MemoryModule):
    """Knows the weather anywhere."""


class Recorder(Module):
    """Records what it receives."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[Any] = []

    async def forward(
        self, request: str | Message | list[Message], deps: Any = None, **prompt_vars: Any
    ) -> str:
        self.received.append((request, deps))
        return "done"


class Translator(Module):
    async def forward(self, text: str, target: str = "fr") -> str:
        """Translate a text.

        Args:
            text: What to translate.
            target: The language code.
        """
        return f"[{target}] {text}"


@pytest.mark.parametrize(
    ("cls_name", "expected"),
    [
        ("WeatherAgent", "weather_agent"),
        ("RAGModule", "rag_module"),
        ("OpenaiToolCallingAgent", "openai_tool_calling_agent"),
        ("HTTPServer2", "http_server2"),
        ("Agent", "agent"),
    ],
)
def test_snake_case(cls_name: str, expected: str) -> None:
    assert snake_case(cls_name) == expected


def test_from_module_names_differ_per_class_and_description_comes_from_the_class() -> None:
    weather = Tool.from_module(WeatherAgent())
    recorder = Tool.from_module(Recorder())
    assert (weather.name, recorder.name) == ("weather_agent", "recorder")
    assert weather.description.value == "Knows the weather anywhere."
    assert recorder.description.value == "Records what it receives."


def test_prebuilt_module_gets_a_generic_description_not_the_class_docs() -> None:
    tool = Tool.from_module(MemoryModule(), description=None)
    assert tool.description.value == "Ask the memory_module agent."


def test_from_module_schema_shows_request_text_and_hides_deps_and_kwargs() -> None:
    tool = Tool.from_module(Recorder())
    schema = tool.parameters_schema
    assert list(schema["properties"]) == ["request"]
    assert schema["properties"]["request"]["type"] == "string"
    assert schema["required"] == ["request"]


def test_from_module_plain_signature_keeps_its_arguments_and_docs() -> None:
    tool = Tool.from_module(Translator())
    assert tool.description.value == "Translate a text."
    assert tool.parameters_schema["properties"] == {
        "text": {"type": "string", "description": "What to translate."},
        "target": {"type": "string", "default": "fr", "description": "The language code."},
    }


async def test_from_module_runs_with_text_request_and_inherits_deps() -> None:
    recorder = Recorder()
    tool = Tool.from_module(recorder)
    assert await tool.call('{"request": "check"}', RunContext(deps="db")) == "done"
    assert await tool.call('{"request": "again"}') == "done"
    assert recorder.received == [("check", "db"), ("again", None)]


async def test_module_accepting_only_messages_gets_a_user_message() -> None:
    seen: list[Any] = []

    class Chat(Module):
        async def forward(self, history: list[Message]) -> Message:
            seen.append(history)
            return Message(role=MessageRole.ASSISTANT, content="reply")

    assert await Tool.from_module(Chat()).call({"request": "hi"}) == "reply"
    assert seen == [[Message(role=MessageRole.USER, content="hi")]]


def test_same_class_twice_clashes_and_the_error_says_how_to_fix_it() -> None:
    a, b = Tool.from_module(WeatherAgent()), Tool.from_module(WeatherAgent())
    with pytest.raises(DuplicateToolName, match=r"'weather_agent'.*name="):
        toolset([a, b])
    named = toolset([a, Tool.from_module(WeatherAgent(), name="weather_backup")])
    assert list(named) == ["weather_agent", "weather_backup"]


def test_toolset_wraps_functions_and_modules() -> None:
    tools = toolset([add, Translator()])
    assert list(tools) == ["add", "translator"]
    assert all(isinstance(t, Tool) for t in tools.values())


async def test_module_tool_runs_with_fresh_memory_on_every_call() -> None:
    llm = ScriptedLLM(["sunny", "rainy"])
    agent = WeatherAgent(system_prompt="You report weather.").with_llm(llm)
    tool = Tool.from_module(agent)
    assert await tool.call({"request": "Paris?"}) == "sunny"
    assert await tool.call({"request": "Oslo?"}) == "rainy"
    second_request = [(m.role, m.content) for m in llm.requests[1][0]]
    assert second_request == [("system", "You report weather."), ("user", "Oslo?")]
    assert len(agent.memory) == 0  # the module's own (session-less) memory was never touched


# ---------------------------------------------------------------------------------- handoff


def conversation() -> list[Message]:
    """A parent run in the middle of its tool loop: a finished call, then the handoff call."""
    return [
        Message(role=MessageRole.SYSTEM, content="parent system"),
        Message(role=MessageRole.USER, content="What should I wear in Oslo?"),
        Message(
            role=MessageRole.ASSISTANT,
            content="Checking the date.",
            tool_calls=[ToolRequest(id="c1", function=ToolFunction(name="today"))],
        ),
        Message(role=MessageRole.TOOL, content="2024-01-01", tool_call_id="c1"),
        Message(
            role=MessageRole.ASSISTANT,
            tool_calls=[
                ToolRequest(id="c2", function=ToolFunction(name="recorder", arguments="{}"))
            ],
        ),
    ]


def shape(messages: list[Message]) -> list[tuple[str, str, list[str] | None]]:
    return [
        (
            m.role.value,
            m.content,
            [c.id or "" for c in m.tool_calls] if m.tool_calls is not None else None,
        )
        for m in messages
    ]


async def test_handoff_with_history_without_tool_loop() -> None:
    recorder = Recorder()
    tool = Tool.from_module(recorder, handoff_history=True)
    request_doc = tool.parameters_schema["properties"]["request"]["description"]
    assert "conversation so far" in request_doc
    await tool.call(
        {"request": "Weather in Oslo on 2024-01-01?"}, RunContext(messages=conversation())
    )
    request, _ = recorder.received[0]
    assert shape(request) == [
        ("user", "What should I wear in Oslo?", None),
        ("assistant", "Checking the date.", None),
        ("user", "Weather in Oslo on 2024-01-01?", None),
    ]


async def test_handoff_with_history_and_tool_loop_drops_only_the_unanswered_call() -> None:
    recorder = Recorder()
    tool = Tool.from_module(recorder, handoff_history=True, handoff_include_tool_loop=True)
    await tool.call({"request": "Weather?"}, RunContext(messages=conversation()))
    request, _ = recorder.received[0]
    assert shape(request) == [
        ("user", "What should I wear in Oslo?", None),
        ("assistant", "Checking the date.", ["c1"]),
        ("tool", "2024-01-01", None),
        ("user", "Weather?", None),
    ]


async def test_handoff_without_context_sends_just_the_request() -> None:
    recorder = Recorder()
    await Tool.from_module(recorder, handoff_history=True).call({"request": "hi"})
    assert shape(recorder.received[0][0]) == [("user", "hi", None)]


def test_handoff_does_not_mutate_the_parent_messages() -> None:
    messages = conversation()
    before = [m.model_copy(deep=True) for m in messages]
    handoff_messages(messages, include_tool_loop=True)
    handoff_messages(messages, include_tool_loop=False)
    assert messages == before


def test_handoff_needs_a_message_parameter() -> None:
    with pytest.raises(ToolError, match=r"list\[Message\]"):
        Tool.from_module(Translator(), handoff_history=True)


async def test_handoff_history_reaches_a_real_memory_module() -> None:
    llm = ScriptedLLM(["wear a coat"])
    tool = Tool.from_module(
        WeatherAgent(system_prompt="child system").with_llm(llm), handoff_history=True
    )
    answer = await tool.call({"request": "Oslo now?"}, RunContext(messages=conversation()))
    assert answer == "wear a coat"
    sent = [(m.role.value, m.content) for m in llm.requests[0][0]]
    assert sent == [
        ("system", "child system"),
        ("user", "What should I wear in Oslo?"),
        ("assistant", "Checking the date."),
        ("user", "Oslo now?"),
    ]


# ---------------------------------------------------------------------------------- checkpoints


def test_checkpoint_holds_the_description_and_the_wrapped_modules_prompts(tmp_path: Path) -> None:
    tool = Tool.from_module(WeatherAgent(system_prompt="Be brief."), description="Weather.")
    assert tool.state_dict() == {
        "description": "Weather.",
        "module.prompt.prompt": "Be brief.",
        "module.prompt.role": "system",
    }
    tool.description.value = 'Tuned """ description\nwith a newline\\'
    tool.module.prompt.prompt.value = "Be very brief."
    tool.save(tmp_path / "tool.toml")

    fresh = Tool.from_module(WeatherAgent(system_prompt="Be brief."), description="Weather.")
    fresh.load(tmp_path / "tool.toml")
    assert fresh.description.value == 'Tuned """ description\nwith a newline\\'
    assert fresh.module.prompt.prompt.value == "Be very brief."
    assert fresh.to_openai()["function"]["description"] == fresh.description.value


def test_function_tool_checkpoints_only_its_description() -> None:
    assert Tool(add).state_dict() == {"description": "Add two numbers."}


# --- one validation path: keyword arguments and the JSON-object string ---------------------


def power(a: int, b: int = 2) -> int:
    """a to the power b."""
    return a**b


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (('{"a": "2", "b": 8}',), {}),
        ((), {"a": "2", "b": 8}),
        (("2",), {"b": 8}),
        (("2", "8"), {}),
    ],
)
async def test_forward_validates_and_coerces_every_spelling_alike(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert await Tool(power).forward(*args, **kwargs) == 256


@pytest.mark.parametrize(("args", "kwargs"), [((), {"a": "two"}), (("two",), {})])
async def test_forward_refuses_bad_arguments_with_the_same_error(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(ToolArgumentsError) as by_json:
        await Tool(power).forward('{"a": "two"}')
    with pytest.raises(ToolArgumentsError) as caught:
        await Tool(power).forward(*args, **kwargs)
    assert type(caught.value) is type(by_json.value)
    assert str(caught.value) == str(by_json.value)
    assert "'power'" in str(caught.value) and "valid integer" in str(caught.value)


async def test_forward_errors_for_missing_and_unknown_arguments_match_the_json_form() -> None:
    tool = Tool(power)
    for python, text in [({"b": 3}, '{"b": 3}'), ({"a": 1, "c": 3}, '{"a": 1, "c": 3}')]:
        with pytest.raises(ToolArgumentsError) as by_keyword:
            await tool.forward(**python)
        with pytest.raises(ToolArgumentsError) as by_json:
            await tool.forward(text)
        assert str(by_keyword.value) == str(by_json.value)


async def test_forward_passes_context_and_variadic_arguments_through() -> None:
    seen: list[Any] = []

    def tagged(ctx: RunContext[Any], count: int, *extra: Any, **more: Any) -> int:
        seen.append((ctx, extra, more))
        return count * 2

    tool = Tool(tagged)
    ctx = RunContext(deps="d")
    assert await tool.forward(ctx, "4", "x", y=1) == 8
    assert seen == [(ctx, ("x",), {"y": 1})]


async def test_a_call_from_the_model_is_validated_once() -> None:
    seen: list[Any] = []

    def note(value: Any) -> Any:
        seen.append(value)
        return value

    def square(a: Annotated[int, BeforeValidator(note)]) -> int:
        return a * a

    tool = Tool(square)
    assert await tool.call('{"a": "3"}') == "9"
    assert seen == ["3"]
    assert await tool.forward(a="4") == 16
    assert seen == ["3", "4"]


def test_tools_are_idempotent_unless_marked_otherwise() -> None:
    assert Tool(power).idempotent is True
    assert Tool(power, idempotent=False).idempotent is False

    @Tool.decorate(idempotent=False)
    def send_mail(to: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    assert send_mail.idempotent is False
    assert "idempotent=False" in repr(send_mail)
    assert Tool.decorate(power).idempotent is True

    class Echo(Module):
        async def forward(self, request: str) -> str:
            return request

    assert Tool.from_module(Echo(), idempotent=False).idempotent is False
    with pytest.raises(InvalidArgument, match="idempotent"):
        Tool(power, idempotent="no")  # type: ignore[arg-type]
