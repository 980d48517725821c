"""Code written for the original promptimus 0.1 runs unchanged: its paths, its import names and
its calling conventions (issue 8, sections 1-3), and what its own test suite exercised."""

from __future__ import annotations

import asyncio
import importlib
import io
import warnings
from pathlib import Path

import pytest
from module_box import Box

import promptimus as pm
from promptimus import Module, Parameter
from promptimus.core import ModuleDict, ModuleList
from promptimus.errors import (
    CheckpointMismatch,
    CheckpointReferenceError,
    EmbedderNotSet,
    InvalidArgument,
    LLMNotSet,
    ParamNotSet,
    RetryBudgetExhausted,
    ToolArgumentsError,
)
from promptimus.llms import ScriptedLLM


class Asks(Module):
    def __init__(self) -> None:
        super().__init__()
        self.prompt = Parameter()

    async def forward(self) -> str:
        return (await self.llm.achat([])).content


def tree() -> Box:
    root = Box()
    root.agent = Box()
    root.agent.predictor = Asks()
    root.tools = ModuleDict({"search": Asks()})
    root.layers = ModuleList([Box(), Asks()])
    return root


# ---------------------------------------------------------------------------------- 1. paths


def test_paths_are_absolute_from_root() -> None:
    root = tree()
    assert root.path == "root"
    assert root.agent.path == "root.agent"
    assert root.agent.predictor.path == "root.agent.predictor"
    assert root.agent.predictor.prompt.path == "root.agent.predictor.prompt"
    assert root.tools["search"].path == "root.tools.search"
    assert root.layers[1].path == "root.layers.1"


def test_pytorch_style_keys_stay_relative() -> None:
    root = tree()
    root.agent.predictor.prompt.value = "hi"
    assert list(root.state_dict()) == ["agent.predictor.prompt"]
    assert [name for name, _ in root.agent.named_parameters()] == ["predictor.prompt"]
    assert [name for name, _ in root.named_modules()][:3] == ["", "agent", "agent.predictor"]


def test_a_shared_module_answers_to_its_last_parent() -> None:
    root, shared = Box(), Box()
    root.first = shared
    root.second = shared
    assert shared.path == "root.second"
    del root.second
    assert shared.path == "root.first"


async def test_errors_name_modules_and_parameters_by_absolute_path() -> None:
    root = tree()
    with pytest.raises(LLMNotSet, match=r"'root\.agent\.predictor' \(Asks\)"):
        await root.agent.predictor()
    with pytest.raises(EmbedderNotSet, match=r"'root\.layers\.1' \(Asks\)"):
        _ = root.layers[1].embedder
    with pytest.raises(ParamNotSet, match=r"'root\.tools\.search\.prompt'"):
        _ = root.tools["search"].prompt.value
    with pytest.raises(CheckpointMismatch, match=r"root\.agent\.nope") as info:
        root.load_state_dict({"agent.nope": "x"})
    assert "unknown keys" in str(info.value)
    with pytest.raises(CheckpointMismatch, match=r"root\.agent\.predictor\.prompt: the param"):
        root.agent.predictor.prompt.value = "text"
        root.load_state_dict({"agent.predictor.prompt": 3}, strict=False)


def test_strict_false_still_reports_pytorch_keys() -> None:
    root = tree()
    root.agent.predictor.prompt.value = "hi"
    result = root.load_state_dict({"agent.extra": "x"}, strict=False)
    assert result.unexpected_keys == ["agent.extra"]
    assert result.missing_keys == ["agent.predictor.prompt"]


# ---------------------------------------------------------------------------------- 2. names

PUBLIC_NAMES = {
    "promptimus": [
        "Prompt",
        "ImageContent",
        "Usage",
        "Message",
        "MessageRole",
        "Module",
        "Parameter",
        "llms",
        "embedders",
        "modules",
    ],
    "promptimus.dto": [
        "History",
        "ToolCalls",
        "Message",
        "MessageRole",
        "ImageContent",
        "ToolRequest",
        "ToolFunction",
        "Usage",
    ],
    "promptimus.dto.image": ["ImageContent"],
    "promptimus.dto.message": ["History", "Message", "MessageRole"],
    "promptimus.dto.tool": ["ToolCalls", "ToolFunction", "ToolRequest"],
    "promptimus.dto.usage": ["Usage"],
    "promptimus.llms.base": ["ProviderProtocol"],
    "promptimus.llms": ["LLMProtocol", "OpenAILike", "OllamaProvider"],
    "promptimus.llms.dummy": ["DummyLLm"],
    "promptimus.modules": [
        "RRFReranker",
        "RerankerProtocol",
        "SupportsHandoff",
        "MemoryModule",
        "ResetMemoryContext",
        "Prompt",
        "RAGModule",
        "RetrievalModule",
        "StructuralOutput",
        "Tool",
        "ToolCallingAgent",
        "OpenaiToolCallingAgent",
    ],
    "promptimus.modules.tool": [
        "Tool",
        "ToolCallingAgent",
        "OpenaiToolCallingAgent",
        "SupportsHandoff",
    ],
    "promptimus.common.rate_limiting": ["RateLimitedClient"],
    "promptimus.embedders": ["Embedding", "EmbedderProtocol", "OpenAILikeEmbedder", "ops", "base"],
    "promptimus.embedders.ops": ["cosine"],
    "promptimus.embedders.base": ["EmbedderProtocol", "Embedding"],
    "promptimus.vectore_store": ["BaseSearchResult", "VectorStoreProtocol", "TextStoreProtocol"],
    "promptimus.vectore_store.base": [
        "BaseSearchResult",
        "VectorStoreProtocol",
        "TextStoreProtocol",
    ],
    "promptimus.rerankers": ["RerankerProtocol", "RRFReranker", "OpenAILikeReranker"],
    "promptimus.core": ["Module", "Parameter"],
    "promptimus.core.module": ["Module", "ModuleDict"],
    "promptimus.core.checkpointing": ["module_dict_from_toml_str", "module_dict_to_toml_str"],
    "promptimus.errors": [
        "ProviderRetryExceded",
        "InvalidToolConfig",
        "RefResolutionError",
        "InvalidToolName",
        "LLMNotSet",
        "EmbedderNotSet",
        "RerankerNotSet",
        "VectorStoreNotSet",
        "ParamNotSet",
        "FailedToParseOutput",
        "MaxIterExceeded",
        "RecursiveModule",
        "PromptimusError",
    ],
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC_NAMES))
def test_every_public_name_of_the_original_imports(module_name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # old spellings warn, and still work
        module = importlib.import_module(module_name)
        for name in PUBLIC_NAMES[module_name]:
            assert getattr(module, name) is not None, f"{module_name}.{name}"


@pytest.mark.parametrize(
    ("module_name", "old", "new"),
    [
        ("promptimus.errors", "ProviderRetryExceded", "promptimus.errors.RetryBudgetExhausted"),
        ("promptimus.errors", "InvalidToolConfig", "promptimus.errors.ToolError"),
        ("promptimus.errors", "RefResolutionError", "promptimus.errors.CheckpointReferenceError"),
        ("promptimus.llms.base", "ProviderProtocol", "promptimus.llms.base.LLMProtocol"),
        ("promptimus.llms", "DummyLLm", "promptimus.llms.DummyLLM"),
        ("promptimus.llms.dummy", "DummyLLm", "promptimus.llms.dummy.DummyLLM"),
        ("promptimus.core.module", "ModuleDict", "promptimus.core.ModuleDict"),
        ("promptimus.modules.tool", "Tool", "promptimus.tools.Tool"),
        ("promptimus.modules.tool", "ToolCallingAgent", "promptimus.agents.ToolCallingAgent"),
        (
            "promptimus.modules.rag",
            "DEFAULT_SYSTEM_PROMPT",
            "promptimus.modules.rag.DEFAULT_RAG_SYSTEM_PROMPT",
        ),
        (
            "promptimus.modules.structural",
            "DEFAULT_SYSTEM_PROMPT_NO_SCHEMA",
            "promptimus.modules.structural.DEFAULT_SYSTEM_PROMPT",
        ),
        (
            "promptimus.modules.structural",
            "DEFAULT_RETRY_MESSAGE",
            "promptimus.modules.structural.DEFAULT_RETRY_TEMPLATE",
        ),
    ],
)
def test_old_names_warn_once_with_the_new_one(module_name: str, old: str, new: str) -> None:
    module = importlib.import_module(module_name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(module, old)
    assert [type(w.message) for w in caught] == [DeprecationWarning]
    assert new in str(caught[0].message)
    new_module, _, new_name = new.rpartition(".")
    assert value is getattr(importlib.import_module(new_module), new_name)
    assert caught[0].filename == __file__  # points at the caller's line


def test_current_names_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from promptimus.errors import InvalidToolName, ToolError  # noqa: F401
        from promptimus.modules import SupportsHandoff, Tool  # noqa: F401


def test_history_and_tool_calls_are_type_adapters() -> None:
    from promptimus.dto import History, Message, MessageRole, ToolCalls

    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    messages = History.validate_python(rows)
    assert messages == [
        Message(role=MessageRole.USER, content="hi"),
        Message(role=MessageRole.ASSISTANT, content="hello"),
    ]
    dumped = History.dump_python(messages, mode="json")
    assert [{"role": d["role"], "content": d["content"]} for d in dumped] == rows
    assert History.validate_json(History.dump_json(messages)) == messages
    calls = ToolCalls.validate_python([{"id": "c1", "function": {"name": "f", "arguments": "{}"}}])
    assert calls[0].function.name == "f" and calls[0].type == "function"


def test_except_clauses_with_the_original_names_catch_todays_errors() -> None:
    from promptimus.core import module_dict_from_toml_str
    from promptimus.tools.tool import Tool, check_tool_name

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from promptimus.errors import InvalidToolConfig, InvalidToolName, RefResolutionError

    with pytest.raises(InvalidToolName):
        check_tool_name("has space")
    with pytest.raises(InvalidToolConfig):
        Tool(lambda x: x, handoff_history=True)  # only a module's forward can take history
    with pytest.raises(RefResolutionError):
        module_dict_from_toml_str('x = "${pkg:no_such_package_here.sub.toml}"')
    assert issubclass(RefResolutionError, CheckpointReferenceError)


class Flaky(Exception):
    pass


def rate_limited_client(failures: int, limit: int, attempts: int):
    from promptimus.common.rate_limiting import RateLimitedClient

    class Client(RateLimitedClient[str]):
        RETRY_ERRORS = (Flaky,)

        def __init__(self) -> None:
            super().__init__(max_concurrency=limit, n_retries=attempts, base_wait=0.001)
            self.calls = 0
            self.in_flight = 0
            self.most_in_flight = 0

        async def _request(self, text: str) -> str:
            self.calls += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await asyncio.sleep(0.01)
                if self.calls <= failures:
                    raise Flaky(f"attempt {self.calls}")
                return text.upper()
            finally:
                self.in_flight -= 1

    return Client()


async def test_rate_limited_client_retries_its_declared_errors() -> None:
    client = rate_limited_client(failures=2, limit=10, attempts=3)
    assert await asyncio.wait_for(client.execute_request("ok"), 10) == "OK"
    assert client.calls == 3


async def test_rate_limited_client_caps_requests_in_flight() -> None:
    client = rate_limited_client(failures=0, limit=2, attempts=1)
    results = await asyncio.wait_for(
        asyncio.gather(*(client.execute_request(str(i)) for i in range(6))), 10
    )
    assert results == [str(i) for i in range(6)]
    assert client.most_in_flight == 2


async def test_rate_limited_client_gives_up_with_the_originals_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from promptimus.errors import ProviderRetryExceded

    client = rate_limited_client(failures=99, limit=1, attempts=3)
    with pytest.raises(ProviderRetryExceded) as info:
        await asyncio.wait_for(client.execute_request("x"), 10)
    assert isinstance(info.value, RetryBudgetExhausted)
    assert isinstance(info.value.__cause__, Flaky) and client.calls == 3


def test_supports_handoff_recognises_agents() -> None:
    from promptimus.modules import OpenaiToolCallingAgent, SupportsHandoff

    assert isinstance(OpenaiToolCallingAgent("p", []), SupportsHandoff)
    assert not isinstance(object(), SupportsHandoff)


def test_module_dict_takes_keyword_entries_like_the_original() -> None:
    root = Box()
    root.tools = ModuleDict(search=Asks(), fetch=Box())
    assert list(root.tools) == ["search", "fetch"]
    assert root.tools["search"].path == "root.tools.search"


def test_tool_to_openai_function_is_the_old_name_of_to_openai() -> None:
    from promptimus.modules import Tool

    tool = Tool(lambda a: a, name="echo", description="Echo.")
    with pytest.warns(DeprecationWarning, match=r"to_openai\(\)"):
        spec = tool.to_openai_function()
    assert spec == tool.to_openai()


def test_top_level_prompt_is_the_prompt_module() -> None:
    from promptimus.modules.prompt import Prompt

    assert pm.Prompt is Prompt


# ------------------------------------------------------------------------ 3. calling conventions

PNG = b"\x89PNG\r\n\x1a\n fake image"
PNG_URL = "data:image/png;base64,iVBORw0KGgogZmFrZSBpbWFnZQ=="


def test_image_from_a_file_like_buffer_bytes_or_an_open_file(tmp_path: Path) -> None:
    from promptimus import ImageContent

    buffer = io.BytesIO(PNG)
    buffer.seek(4)
    assert ImageContent.from_buffer(buffer, "image/png").url == PNG_URL
    assert buffer.tell() == 4  # the caller's position is kept
    assert ImageContent.from_buffer(PNG, "image/png").url == PNG_URL
    path = tmp_path / "x.png"
    path.write_bytes(PNG)
    with path.open("rb") as file:
        assert ImageContent.from_buffer(file, "image/png").url == PNG_URL
    with path.open("r", encoding="latin-1") as text, pytest.raises(InvalidArgument, match="'rb'"):
        ImageContent.from_buffer(text, "image/png")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="mime_type"):
        jpeg = ImageContent.from_buffer(PNG, mimetype="image/jpeg")
    assert jpeg.url.startswith("data:image/jpeg;base64,")


async def test_a_decorated_function_stays_callable_as_itself() -> None:
    from promptimus.modules import Tool

    @Tool.decorate
    def power(a: int, b: int) -> int:
        """Raise a to the power b."""
        return a**b

    @Tool.decorate
    async def apower(a: int, b: int) -> int:
        """Raise a to the power b, asynchronously."""
        return a**b

    assert power(2, 8) == 256
    pending = apower(2, 8)
    assert asyncio.iscoroutine(pending)
    assert await pending == 256
    assert await power.forward(a=2, b=8) == 256


async def test_forward_takes_the_originals_json_string_validated_like_the_model_calls() -> None:
    from promptimus.modules import Tool

    seen: list[tuple[object, ...]] = []

    @Tool.decorate
    def power(a: int, b: int = 2) -> int:
        """Raise a to the power b."""
        seen.append((a, b))
        return a**b

    assert await power.forward('{"a": 2, "b": 8}') == 256
    assert await power.forward('{"a": "3"}') == 9  # coerced by the schema, default applied
    assert seen == [(2, 8), (3, 2)]
    with pytest.raises(ToolArgumentsError, match="missing required argument"):
        await power.forward('{"b": 8}')
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        await power.forward('{"a": 2,')
    assert len(seen) == 2

    @Tool.decorate
    def echo(text: str) -> str:
        """Echo."""
        return text

    assert await echo.forward("plain text") == "plain text"  # not the JSON form
    assert await echo.forward(text='{"a": 1}') == '{"a": 1}'  # by keyword, never parsed


async def test_a_handoff_tool_can_be_called_with_no_arguments() -> None:
    from promptimus.modules import OpenaiToolCallingAgent, Tool

    S = ScriptedLLM
    sub_llm = S(["Paris."])
    expert = OpenaiToolCallingAgent("You know capitals.", []).with_llm(sub_llm)
    tool = Tool.from_module(expert, name="expert", handoff_history=True)
    assert "request" not in tool.parameters_schema.get("required", [])
    parent_llm = S([S.tool_call("expert", {}, id="e"), "It is Paris."])
    parent = OpenaiToolCallingAgent("You delegate.", [tool]).with_llm(parent_llm)

    answer = await asyncio.wait_for(parent("Capital of France?"), 10)

    assert answer.content == "It is Paris."
    sub_request = sub_llm.requests[0][0]
    assert [(m.role, m.content) for m in sub_request] == [
        ("system", "You know capitals."),
        ("user", "Capital of France?"),
    ]
    tool_result = parent_llm.requests[1][0][-1]
    assert (tool_result.tool_call_id, tool_result.content) == ("e", "Paris.")


async def test_a_handoff_tool_with_nothing_to_hand_off_asks_for_a_request() -> None:
    from promptimus.modules import OpenaiToolCallingAgent, Tool

    expert = OpenaiToolCallingAgent("You know capitals.", []).with_llm(ScriptedLLM(["x"]))
    tool = Tool.from_module(expert, name="expert", handoff_history=True)
    with pytest.raises(ToolArgumentsError, match="send a request"):
        await tool.call("{}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from promptimus.errors import InvalidToolConfig
    assert issubclass(ToolArgumentsError, InvalidToolConfig)  # a ToolError, as the original's


async def test_json_form_passes_the_originals_history_to_a_handoff_tool() -> None:
    from promptimus.dto import Message, MessageRole
    from promptimus.modules import OpenaiToolCallingAgent, Tool

    sub_llm = ScriptedLLM(["Berlin."])
    expert = OpenaiToolCallingAgent("You know capitals.", []).with_llm(sub_llm)
    tool = Tool.from_module(expert, name="expert", handoff_history=True)
    history = [Message(role=MessageRole.USER, content="Capital of Germany?")]
    reply = await asyncio.wait_for(tool.forward("{}", history=history), 10)
    assert reply.content == "Berlin."
    assert [m.content for m in sub_llm.requests[0][0]][1:] == ["Capital of Germany?"]


# ------------------------------------------------- what the original's own test suite exercised

ORIGINAL_LAYOUT = '''\
censor = """
Act as a censor.
"""


[chat]
chat = """
Act as an assistant
"""


[chat.memory]
memory = """
Store user messages
"""
'''


def test_module_dict_text_keeps_the_originals_layout() -> None:
    from promptimus.core.checkpointing import module_dict_from_toml_str, module_dict_to_toml_str

    data = {
        "params": {"censor": "Act as a censor."},
        "submodules": {
            "chat": {
                "params": {"chat": "Act as an assistant"},
                "submodules": {
                    "memory": {"params": {"memory": "Store user messages"}, "submodules": {}}
                },
            }
        },
    }
    text = module_dict_to_toml_str(data)
    assert text.strip("\n") == ORIGINAL_LAYOUT.strip("\n")
    assert module_dict_from_toml_str(text) == data


def test_file_and_pkg_references_compose_a_module_dict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from promptimus.core.checkpointing import module_dict_from_toml_str, module_dict_to_toml_str

    package = tmp_path / "compat_refs_pkg" / "fixtures"
    package.mkdir(parents=True)
    (package / "sub.toml").write_text('prompt = """\nYou are an analyst.\n"""\n\nrole = "system"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    expected = {"params": {"prompt": "You are an analyst.", "role": "system"}, "submodules": {}}

    by_file = module_dict_from_toml_str(
        'my_sub = "${file:./compat_refs_pkg/fixtures/sub.toml}"', base_path=tmp_path
    )
    assert by_file == {"params": {}, "submodules": {"my_sub": expected}}
    by_pkg = module_dict_from_toml_str('agent = "${pkg:compat_refs_pkg.fixtures.sub.toml}"')
    assert by_pkg == {"params": {}, "submodules": {"agent": expected}}
    saved = module_dict_to_toml_str(by_file)
    assert "${file:" not in saved and "You are an analyst." in saved


async def test_reset_memory_context_clears_every_memory_on_entry_and_exit() -> None:
    from promptimus import Message, MessageRole
    from promptimus.llms.dummy import DummyLLm
    from promptimus.modules import MemoryModule, ResetMemoryContext

    class Parent(Module):
        def __init__(self) -> None:
            super().__init__()
            self.child1 = MemoryModule(memory_size=10, system_prompt="").with_llm(DummyLLm(delay=0))
            self.child2 = MemoryModule(memory_size=10, system_prompt="").with_llm(DummyLLm(delay=0))

        async def forward(self, query: str) -> Message:
            return await self.child1.forward(query)

    parent, other = Parent(), MemoryModule(memory_size=10, system_prompt="")
    await parent.child1.forward("msg1")
    parent.child2.add_message(Message(role=MessageRole.USER, content="msg2"))
    other.add_message(Message(role=MessageRole.USER, content="msg3"))
    sizes = [len(m.memory.as_list()) for m in (parent.child1, parent.child2, other)]
    assert sizes == [2, 1, 1]
    with ResetMemoryContext(parent, other):
        assert [len(m.memory.as_list()) for m in (parent.child1, parent.child2, other)] == [0] * 3
        await parent.forward("test")
        assert len(parent.child1.memory.as_list()) == 2
    assert [len(m.memory.as_list()) for m in (parent.child1, parent.child2, other)] == [0] * 3
