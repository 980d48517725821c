"""Memory, MemoryModule, sessions and ResetMemoryContext."""

import asyncio

import pytest

import promptimus as pm
from promptimus.dto import Message, MessageRole, ToolFunction, ToolRequest
from promptimus.errors import EmptyMemory, InvalidArgument
from promptimus.llms import ScriptedLLM
from promptimus.modules import Memory, MemoryModule, ResetMemoryContext


def user(text: str) -> Message:
    return Message(role=MessageRole.USER, content=text)


def test_memory_evicts_oldest_first():
    memory = Memory(3)
    for i in range(5):
        memory.add_message(user(str(i)))
    assert [m.content for m in memory.as_list()] == ["2", "3", "4"]


def test_eviction_never_leaves_an_orphaned_tool_result():
    call = ToolRequest(id="c1", function=ToolFunction(name="f", arguments="{}"))
    memory = Memory(2)
    memory.extend(
        [
            user("q"),
            Message(role=MessageRole.ASSISTANT, tool_calls=[call]),
            Message(role=MessageRole.TOOL, content="r", tool_call_id="c1"),
            Message(role=MessageRole.ASSISTANT, content="answer"),
        ]
    )
    # Keeping 2 would start with the tool result whose request was evicted: it goes too.
    assert [m.role for m in memory.as_list()] == [MessageRole.ASSISTANT]


def test_memory_manipulation_and_context_manager():
    memory = Memory(5).extend([user("a"), user("b"), user("c")])
    memory.replace_last(user("C"))
    memory.drop_last()
    assert [m.content for m in memory] == ["a", "b"]
    memory.drop_last(10)
    assert len(memory) == 0
    with memory:
        memory.add_message(user("inside"))
        assert len(memory) == 1
    assert len(memory) == 0
    memory.extend([user("1"), user("2"), user("3")])
    memory.size = 1
    assert [m.content for m in memory] == ["3"]
    with pytest.raises(InvalidArgument):
        Memory(-1)


def test_replace_last_on_empty_memory_is_a_clear_error():
    memory = Memory(3)
    with pytest.raises(EmptyMemory, match="add_message"):
        memory.replace_last(user("A"))
    assert memory.as_list() == []
    with pytest.raises(IndexError):  # still an IndexError for code that catches that
        MemoryModule(memory_size=3, system_prompt="s").replace_last(user("A"))


async def test_memory_module_keeps_the_conversation():
    llm = ScriptedLLM(["first", "second"])
    module = MemoryModule(memory_size=10, system_prompt="sys").with_llm(llm)
    await module("hello")
    await module("again")
    sent = llm.requests[1][0]
    assert [(m.role, m.content) for m in sent] == [
        ("system", "sys"),
        ("user", "hello"),
        ("assistant", "first"),
        ("user", "again"),
    ]
    assert [m.content for m in module.memory] == ["hello", "first", "again", "second"]


async def test_memory_window_bounds_the_request():
    llm = ScriptedLLM(lambda history, kwargs: f"seen {len(history)}")
    module = MemoryModule(memory_size=3, system_prompt="s").with_llm(llm)
    for i in range(4):
        await module(f"q{i}")
    # system prompt + at most 3 remembered messages
    assert all(len(history) <= 4 for history, _ in llm.requests)
    assert len(module.memory) == 3


async def test_failed_call_leaves_memory_unchanged():
    llm = ScriptedLLM(["ok", RuntimeError("server down")])
    module = MemoryModule(system_prompt="s").with_llm(llm)
    await module("one")
    with pytest.raises(RuntimeError):
        await module("two")
    assert [m.content for m in module.memory] == ["one", "ok"]


async def test_concurrent_calls_do_not_interleave_exchanges():
    async def slow_echo(history, kwargs):
        await asyncio.sleep(0.01 * (3 - len(history) % 3))
        return "re: " + history[-1].content

    module = MemoryModule(memory_size=100, system_prompt="s").with_llm(ScriptedLLM(slow_echo))
    await asyncio.gather(*(module(f"m{i}") for i in range(6)))

    contents = [m.content for m in module.memory]
    pairs = list(zip(contents[::2], contents[1::2], strict=True))
    assert sorted(pairs) == sorted((f"m{i}", f"re: m{i}") for i in range(6))


async def test_many_concurrent_sessions_stay_isolated():
    async def reply(history, kwargs):
        await asyncio.sleep(0.001)
        users = [m.content for m in history if m.role == MessageRole.USER]
        return "|".join(users)

    module = MemoryModule(memory_size=50, system_prompt="s").with_llm(ScriptedLLM(reply))
    sessions = [pm.Session(f"user{i}") for i in range(40)]

    async def converse(i: int, session: pm.Session) -> list[str]:
        answers = []
        with session:
            for turn in range(3):
                answer = await module(f"u{i}t{turn}")
                answers.append(answer.content)
        return answers

    results = await asyncio.gather(*(converse(i, s) for i, s in enumerate(sessions)))
    for i, answers in enumerate(results):
        assert answers[-1] == f"u{i}t0|u{i}t1|u{i}t2"  # only this user's turns
    assert len(module.memory) == 0  # no session touched the default memory
    with sessions[7]:
        assert len(module.memory) == 6


async def test_shared_memory_is_shared_between_modules_and_within_sessions():
    shared = Memory(10)
    llm = ScriptedLLM(lambda history, kwargs: "r")
    a = MemoryModule(shared_memory=shared, system_prompt="a").with_llm(llm)
    b = MemoryModule(shared_memory=shared, system_prompt="b").with_llm(llm)
    await a("to a")
    await b("to b")
    assert [m.content for m in shared] == ["to a", "r", "to b", "r"]
    with pm.Session():
        await a("x")
        assert [m.content for m in b.memory] == ["x", "r"]


class Tree(pm.Module):
    def __init__(self):
        super().__init__()
        shared = MemoryModule(system_prompt="shared")
        self.left = pm.ModuleDict({"agent": MemoryModule(system_prompt="l"), "s": shared})
        self.right = pm.ModuleList([MemoryModule(system_prompt="r"), shared])

    async def forward(self):
        return None


def test_reset_context_finds_nested_modules_once():
    tree = Tree()
    ctx = ResetMemoryContext(tree)
    assert len(ctx.memory_modules) == 3  # the diamond-shared one counted once
    with pytest.raises(InvalidArgument):
        ResetMemoryContext()


async def test_reset_context_clears_on_enter_exit_and_exception():
    tree = Tree()
    modules = ResetMemoryContext(tree).memory_modules
    for module in modules:
        module.add_message(user("stale"))
    llm = ScriptedLLM(lambda history, kwargs: "ok")
    tree.with_llm(llm)

    with pytest.raises(ValueError), ResetMemoryContext(tree) as ctx:
        assert all(len(m.memory) == 0 for m in modules)  # cleared on enter
        await tree.left["agent"]("hi")
        assert len(tree.left["agent"].memory) == 2
        ctx.reset()
        assert len(tree.left["agent"].memory) == 0
        await tree.left["agent"]("hi again")
        raise ValueError("boom")
    assert all(len(m.memory) == 0 for m in modules)  # cleared on exit, despite the error


def test_memory_module_checkpoint_is_the_prompt(tmp_path):
    module = MemoryModule(memory_size=4, system_prompt="You are terse.")
    assert module.serialize() == {
        "params": {},
        "submodules": {
            "prompt": {"params": {"prompt": "You are terse.", "role": "system"}, "submodules": {}}
        },
    }
    module.save(tmp_path / "m.toml")
    assert MemoryModule().load(tmp_path / "m.toml").prompt.prompt.value == "You are terse."


@pytest.mark.parametrize("size", ["10", 2.5, float("nan"), float("inf"), True, None, -1])
def test_a_memory_size_that_is_not_a_count_is_refused_where_given(size):
    with pytest.raises(InvalidArgument, match="memory_size"):
        MemoryModule(memory_size=size)
    with pytest.raises(InvalidArgument, match="Memory size"):
        Memory(size)
    memory = Memory(3)
    with pytest.raises(InvalidArgument, match="Memory size"):
        memory.size = size
    assert memory.size == 3


def test_zero_and_whole_memory_sizes_are_taken():
    assert MemoryModule(memory_size=0).memory.size == 0
    assert Memory(5).size == 5


def test_an_unknown_message_role_is_refused_with_the_roles():
    with pytest.raises(InvalidArgument, match="new_message_role must be one of"):
        MemoryModule(new_message_role="narrator")
