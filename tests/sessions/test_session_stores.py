"""One behavioural suite, run against each session store on a real database: an SQLite file, the
test run's PostgreSQL server and its Redis server (see tests/support/servers.py and
tests/support/store_backends.py).

The agents here run on `ScriptedLLM` (in process); tests/sessions/test_session_store_workers.py
runs real worker processes against the fake OpenAI server over HTTP.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import ImageContent, Message, MessageRole
from promptimus.errors import (
    InvalidSessionId,
    SessionStateError,
    SessionStoreCorrupt,
    SessionStoreError,
)
from promptimus.llms import CachedLLM, ScriptedLLM
from promptimus.modules import MemoryModule, Prompt
from promptimus.modules.memory import Memory

S = ScriptedLLM


def seen(history: list[Message], kwargs: dict[str, Any]) -> str:
    """A reply naming every user message the model was sent: what the history held."""
    return "seen: " + " | ".join(m.content for m in history if m.role == MessageRole.USER)


def chat_agent(llm: Any = None) -> OpenaiToolCallingAgent:
    return OpenaiToolCallingAgent("You help.").with_llm(llm or S(seen))


@pytest.fixture
async def make_store(backend: Any) -> AsyncIterator[Callable[..., Any]]:
    """Build stores of this test's kind; each is closed after the test."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        store = backend.make(**options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


def user_texts(turn_payload: str) -> list[str]:
    changes = json.loads(turn_payload)["changes"]
    return [
        message["content"]
        for _, (op, *args) in changes
        if op == "extend"
        for message in args[0]
        if message["role"] == "user"
    ]


# --- a conversation outlives its Session, its agent and its process ---------------------------


async def test_a_conversation_continues_in_a_new_session_with_a_new_agent(make_store: Any) -> None:
    store = make_store()
    async with pm.Session("alice", store=store):
        await chat_agent()("hi, I'm Alice")
    with pm.Session("bob", store=store):
        await chat_agent()("I'm Bob")

    later = chat_agent()  # a fresh tree, as after a restart
    async with pm.Session("alice", store=store):
        reply = await later("what is my name?")
    assert reply.content == "seen: hi, I'm Alice | what is my name?"
    assert await store.list_sessions() == ["alice", "bob"]
    assert [t.seq for t in await store.load_turns("alice")] == [1, 2]


async def test_turns_keep_tool_calls_results_reasoning_and_images(make_store: Any) -> None:
    picture = ImageContent(url="data:image/png;base64,iVBORw0KGgo=", detail="low")

    def snapshot(name: str) -> Message:
        """Return a chart."""
        return Message(role=MessageRole.TOOL, content=f"chart of {name}", images=[picture])

    def script() -> ScriptedLLM:
        return S(
            [
                S.tool_call("snapshot", {"name": "sales"}, id="c1", reasoning="need the chart"),
                Message(role=MessageRole.ASSISTANT, content="Sales rose.", reasoning="looked"),
            ]
        )

    question = Message(role=MessageRole.USER, content="what changed?", images=[picture])
    plain = OpenaiToolCallingAgent("You help.", tools=[snapshot]).with_llm(script())
    with pm.Session("reference"):
        await plain(question)
        expected = plain.memory.as_list()

    store = make_store()
    agent = OpenaiToolCallingAgent("You help.", tools=[snapshot]).with_llm(script())
    async with pm.Session("carol", store=store):
        await agent(question)

    reread = pm.Session("carol", store=store)
    await reread.load()
    fresh = OpenaiToolCallingAgent("You help.", tools=[snapshot])
    with reread:
        stored = fresh.memory.as_list()
    assert [m.model_dump() for m in stored] == [m.model_dump() for m in expected]
    assert [m.role for m in stored] == ["user", "assistant", "tool", "user", "assistant"]
    assert stored[1].tool_calls and stored[1].reasoning == "need the chart"
    assert stored[3].images == [picture]


async def test_two_memory_modules_are_kept_under_their_paths_in_one_turn(
    make_store: Any,
) -> None:
    class Pair(pm.Module):
        def __init__(self) -> None:
            super().__init__()
            self.left = MemoryModule(memory_size=10, system_prompt="You help.")
            self.right = MemoryModule(memory_size=10, system_prompt="You help.")

        async def forward(self, text: str) -> str:
            a = await self.left(f"L {text}")
            b = await self.right(f"R {text}")
            return f"{a.content} / {b.content}"

    store = make_store()
    pair = Pair().with_llm(S(seen))
    async with pm.Session("dan", store=store):
        await pair("one")
    async with pm.Session("dan", store=store):
        answer = await Pair().with_llm(S(seen))("two")
    assert answer == "seen: L one | L two / seen: R one | R two"
    turn_1, _ = await store.load_turns("dan")
    keys = [key for key, _ in json.loads(turn_1.payload)["changes"]]
    assert keys == ["root.left", "root.right"]  # one turn holds both memories' changes


async def test_a_rag_module_keeps_its_conversation_in_the_store(make_store: Any) -> None:
    from promptimus.embedders import HashingEmbedder
    from promptimus.modules.rag import RAGModule
    from promptimus.vector_stores import InMemoryVectorStore

    async def rag(llm: ScriptedLLM) -> RAGModule:
        module = RAGModule(
            system_prompt="Answer briefly.",
            query_template="{context}\nQ: {question}",
            vector_store=InMemoryVectorStore(),
            embedder=HashingEmbedder(64),
        ).with_llm(llm)
        await module.retrieval.insert(["The Eiffel Tower is 330 metres tall."])
        return module

    store = make_store()
    async with pm.Session("tom", store=store):
        await (await rag(S(["330 metres."])))("How tall is the Eiffel Tower?")
    later = S(["In Paris."])
    async with pm.Session("tom", store=store):
        await (await rag(later))("Where is it?")
    ((sent, _),) = later.requests
    assert [m.content for m in sent[1:3]] == ["How tall is the Eiffel Tower?", "330 metres."]


async def test_sessions_never_see_each_other(make_store: Any) -> None:
    store = make_store()
    agent = chat_agent()

    async def talk(user: str) -> str:
        async with pm.Session(user, store=store):
            await agent(f"I am {user}")
            return (await agent("who am I?")).content

    answers = await asyncio.gather(*(talk(f"user{n}") for n in range(8)))
    assert answers == [f"seen: I am user{n} | who am I?" for n in range(8)]


async def test_a_session_without_a_store_writes_nothing(make_store: Any, backend: Any) -> None:
    await make_store().list_sessions()  # creates the tables
    async with pm.Session("alone"):
        await chat_agent()("hello")
    assert backend.keys_or_rows() == 0


# --- a turn is one unit ------------------------------------------------------------------------


async def test_a_failed_turn_writes_nothing(make_store: Any) -> None:
    store = make_store()
    agent = chat_agent(S(["first answer", RuntimeError("model down"), "third answer"]))
    async with pm.Session("eve", store=store):
        await agent("one")
        with pytest.raises(RuntimeError, match="model down"):
            await agent("two")
        await agent("three")
    turns = await store.load_turns("eve")
    assert [user_texts(t.payload) for t in turns] == [["one"], ["three"]]


async def test_a_turn_that_changes_nothing_is_not_written(make_store: Any) -> None:
    store = make_store()
    prompt = Prompt("Say hi.").with_llm(S(["hi"]))
    async with pm.Session("frank", store=store):
        await prompt.forward([Message(role=MessageRole.USER, content="x")])
    assert await store.list_sessions() == []


async def test_a_stream_is_written_when_it_ends_and_not_when_left_early(make_store: Any) -> None:
    never = asyncio.Event()

    async def wait() -> str:
        """Wait for something that never comes."""
        await never.wait()
        return "never"

    store = make_store()
    llm = S(["a streamed answer", S.tool_call("wait", {})])
    agent = OpenaiToolCallingAgent("You help.", tools=[wait]).with_llm(llm)
    async with pm.Session("gina", store=store):
        async for _ in agent.stream("first"):
            pass
        events = agent.stream("second")
        async for event in events:
            if isinstance(event, pm.agents.events.ToolCallEvent):
                break  # leave while the tool runs: the run is cancelled
        await events.aclose()
    assert [user_texts(t.payload) for t in await store.load_turns("gina")] == [["first"]]


async def test_concurrent_turns_on_one_conversation_are_all_kept_whole(make_store: Any) -> None:
    store = make_store()
    agent = chat_agent()

    async def turn(n: int) -> None:
        async with pm.Session("shared", store=store):
            await agent(f"message {n}")

    await asyncio.gather(*(turn(n) for n in range(20)))
    turns = await store.load_turns("shared")
    assert [t.seq for t in turns] == list(range(1, 21))
    texts = [user_texts(t.payload) for t in turns]
    assert all(len(t) == 1 for t in texts)  # one whole exchange per turn
    assert sorted(t[0] for t in texts) == sorted(f"message {n}" for n in range(20))


async def test_each_worker_sees_the_turns_other_workers_finished(make_store: Any) -> None:
    first, second = make_store(), make_store()  # two workers: two stores, two trees
    agent_1, agent_2 = chat_agent(), chat_agent()
    session_1 = pm.Session("hana", store=first)
    session_2 = pm.Session("hana", store=second)
    async with session_1:
        await agent_1("from worker 1")
    async with session_2:
        await agent_2("from worker 2")
    async with session_1:  # the same Session object catches up with worker 2's turn
        reply = await agent_1("and again")
    assert reply.content == "seen: from worker 1 | from worker 2 | and again"


# --- outside a turn ----------------------------------------------------------------------------


async def test_state_is_read_after_load_and_changed_only_inside_a_turn(make_store: Any) -> None:
    store = make_store()
    agent = chat_agent()
    session = pm.Session("ivan", store=store)
    with session, pytest.raises(SessionStateError, match=r"await session\.load\(\)"):
        agent.memory.as_list()
    await session.load()
    with session:
        assert agent.memory.as_list() == []
        with pytest.raises(SessionStateError, match=r"session\.turn\(\)"):
            agent.memory.add_message(Message(role=MessageRole.USER, content="lost"))
    async with session.turn():
        agent.memory.add_message(Message(role=MessageRole.USER, content="a note"))
    async with session:
        reply = await agent("go on")
    assert reply.content == "seen: a note | go on"


async def test_a_memory_shared_by_two_modules_is_refused(make_store: Any) -> None:
    shared = Memory(10)
    first = MemoryModule(shared_memory=shared, system_prompt="You help.")
    second = MemoryModule(shared_memory=shared, system_prompt="You help.")

    class Both(pm.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.second = first, second

        async def forward(self) -> None:
            await self.first("a")
            await self.second("b")

    both = Both().with_llm(S(seen))
    with pytest.raises(SessionStateError, match="shared_memory"):
        async with pm.Session("judy", store=make_store()):
            await both()


# --- sizes and lifetimes ------------------------------------------------------------------------


async def test_max_turns_keeps_the_newest_turns(make_store: Any) -> None:
    store = make_store(max_turns=2)
    agent = chat_agent()
    for n in range(5):
        async with pm.Session("kim", store=store):
            await agent(f"m{n}")
    assert [t.seq for t in await store.load_turns("kim")] == [4, 5]
    async with pm.Session("kim", store=make_store(max_turns=2)):  # a worker reading it anew
        reply = await chat_agent()("next")
    assert reply.content == "seen: m3 | m4 | next"
    async with pm.Session("kim", store=store):
        reply = await chat_agent()("last")
    # the last turn this worker read (m3's) was trimmed meanwhile, so it cannot tell the
    # conversation from a new one under the same id: it reads it anew, as every worker sees it
    assert reply.content == "seen: m4 | next | last"


async def test_a_new_session_per_request_reads_only_what_is_new(make_store: Any) -> None:
    store = make_store()
    reads: list[int] = []
    load_turns = store.load_turns

    async def counting(session_id: str, since: int = 0) -> Any:
        turns = await load_turns(session_id, since)
        reads.append(len(turns))
        return turns

    store.load_turns = counting
    agent = chat_agent()
    for n in range(4):
        async with pm.Session("rob", store=store):  # a new Session each request, as a handler does
            await agent(f"m{n}")
    # after the first, only the last turn read (to check it is still the same one) and the
    # turns after it come back: here the last read turn and this worker's own last turn
    assert reads == [0, 1, 2, 2]
    assert (await agent_reply(store, "rob", "x")).content == "seen: m0 | m1 | m2 | m3 | x"


async def agent_reply(store: Any, session_id: str, text: str) -> Message:
    async with pm.Session(session_id, store=store):
        return await chat_agent()(text)  # type: ignore[no-any-return]


async def test_memory_size_still_bounds_what_is_sent(make_store: Any) -> None:
    store = make_store()
    agent = OpenaiToolCallingAgent("You help.", memory_size=4).with_llm(S(seen))
    for n in range(4):
        async with pm.Session("lee", store=store):
            await agent(f"m{n}")
    assert len(await store.load_turns("lee")) == 4  # the store keeps everything
    async with pm.Session("lee", store=store):
        reply = await OpenaiToolCallingAgent("You help.", memory_size=4).with_llm(S(seen))("x")
    assert reply.content == "seen: m2 | m3 | x"


async def test_an_idle_conversation_expires_after_ttl(make_store: Any, backend: Any) -> None:
    store = make_store(ttl=0.5)
    agent = chat_agent()
    async with pm.Session("old", store=store):
        await agent("remember me")
    assert await store.list_sessions() == ["old"]
    await asyncio.sleep(0.7)  # past the ttl (a lower bound on the wait, never an upper one)
    assert await store.load_turns("old") == []
    assert await store.list_sessions() == []
    assert await store.prune() == 1
    assert backend.leftovers("old") == 0
    async with pm.Session("old", store=store):
        reply = await agent("hello again")
    assert reply.content == "seen: hello again"


async def test_a_live_session_starts_over_after_its_conversation_is_deleted(
    make_store: Any,
) -> None:
    store = make_store()
    agent = chat_agent()
    session = pm.Session("mia", store=store)
    async with session:
        await agent("one")
        await agent("two")
    assert await store.delete("mia") is True
    async with session:
        reply = await agent("three")
    assert reply.content == "seen: three"
    assert [user_texts(t.payload) for t in await store.load_turns("mia")] == [["three"]]


# --- deleting, and ids that are data ------------------------------------------------------------


async def test_delete_leaves_nothing_of_the_conversation(make_store: Any, backend: Any) -> None:
    store = make_store()
    agent = chat_agent()
    for user in ("nina", "omar"):
        async with pm.Session(user, store=store):
            await agent("hello")
            await agent("again")
    assert backend.leftovers("nina") > 0
    assert await store.delete("nina") is True
    assert backend.leftovers("nina") == 0
    assert await store.delete("nina") is False
    assert await store.list_sessions() == ["omar"]
    assert len(await store.load_turns("omar")) == 2


ODD_IDS = [
    "o'brien\"; DROP TABLE promptimus_turns; --",
    "100%_done",
    "*",
    "user:42:chat",
    "line\nbreak\r\n",
    "ünïcødé ✓ 漢字 🙂",
    "x" * 256,
]
REFUSED_IDS = ["", "nul\x00byte", "lone \ud800 surrogate", "x" * 10_000, None, 42]


@pytest.mark.parametrize("odd", ODD_IDS, ids=range(len(ODD_IDS)))
async def test_odd_ids_are_plain_data(make_store: Any, backend: Any, odd: str) -> None:
    store = make_store()
    agent = chat_agent()
    async with pm.Session("bystander", store=store):
        await agent("I stay")
    async with pm.Session(odd, store=store):
        await agent("first")
    async with pm.Session(odd, store=store):
        reply = await agent("second")
    assert reply.content == "seen: first | second"
    assert await store.list_sessions() == sorted(["bystander", odd])
    assert await store.delete(odd) is True
    assert backend.leftovers(odd) == 0
    assert await store.list_sessions() == ["bystander"]
    assert len(await store.load_turns("bystander")) == 1


@pytest.mark.parametrize("bad", REFUSED_IDS, ids=range(len(REFUSED_IDS)))
async def test_ids_a_store_cannot_keep_are_refused_by_name(
    make_store: Any, backend: Any, bad: Any
) -> None:
    store = make_store()
    async with pm.Session("bystander", store=store):
        await chat_agent()("I stay")
    with pytest.raises(InvalidSessionId):
        pm.Session(bad, store=store)
    for call in (store.load_turns(bad), store.append_turn(bad, "{}"), store.delete(bad)):
        with pytest.raises(InvalidSessionId):
            await call
    assert await store.list_sessions() == ["bystander"]
    assert backend.leftovers("bystander") > 0


# --- failures ------------------------------------------------------------------------------------


async def test_a_failed_write_leaves_the_turn_unanswered(make_store: Any, backend: Any) -> None:
    store = make_store(busy_timeout=0.2) if backend.kind == "sqlite" else make_store()
    agent = chat_agent()
    async with pm.Session("pat", store=store):
        await agent("kept")
    with backend.failing_writes(), pytest.raises(SessionStoreError) as failure:
        async with pm.Session("pat", store=store):
            await agent("lost")
    assert repr(store) in str(failure.value)
    expected = {"sqlite": "Unavailable", "postgres": "Error", "redis": "Full"}[backend.kind]
    assert type(failure.value).__name__ == f"SessionStore{expected}"
    async with pm.Session("pat", store=store):
        reply = await agent("after")
    assert reply.content == "seen: kept | after"  # the failed turn was never remembered


async def test_a_turn_that_cannot_be_read_is_a_named_error(make_store: Any) -> None:
    store = make_store()
    async with pm.Session("quinn", store=store):
        await chat_agent()("fine")
    await store.append_turn("quinn", "this is not a turn")
    with pytest.raises(SessionStoreCorrupt, match=r"turn 2 of session 'quinn'") as failure:
        async with pm.Session("quinn", store=store):
            await chat_agent()("next")
    assert repr(store) in str(failure.value)


# --- the same stores back the response cache and the resume ledger -----------------------------


async def test_cached_llm_uses_the_store_as_its_cache(make_store: Any) -> None:
    first = S(["cached answer"])
    question = [Message(role=MessageRole.USER, content="2+2?")]
    await CachedLLM(first, make_store()).achat(question, temperature=0)
    other_worker = CachedLLM(S([]), make_store())  # a second process: its own store object
    reply = await other_worker.achat(question, temperature=0)
    assert reply.content == "cached answer" and other_worker.hits == 1


async def test_a_paused_run_resumes_once_across_workers(make_store: Any) -> None:
    from promptimus.agents.resume_ledger import set_resume_ledger

    refunds: list[int] = []

    @pm.tools.Tool.decorate(requires_approval=True)
    def refund(amount: int) -> str:
        """Refund money."""
        refunds.append(amount)
        return "refunded"

    def agent(*replies: Any) -> OpenaiToolCallingAgent:
        return OpenaiToolCallingAgent("You help.", tools=[refund]).with_llm(S(list(replies)))

    paused = await agent(S.tool_call("refund", {"amount": 5}, id="r1")).run("refund me")
    previous = set_resume_ledger(make_store())
    try:
        done = await agent("Done.").run(resume=paused.state, approvals={"r1": True})
        set_resume_ledger(make_store())  # another worker, same database
        with pytest.raises(pm.errors.RunStateConsumed):
            await agent("Done.").run(resume=paused.state, approvals={"r1": True})
    finally:
        set_resume_ledger(previous)
    assert done.output.content == "Done." and refunds == [5]


async def test_a_store_closes_as_a_context_manager_and_reopens_on_use(backend: Any) -> None:
    async with backend.make() as store, pm.Session("sam", store=store):
        await chat_agent()("hello")
    assert await store.list_sessions() == ["sam"]  # a later use opens new connections
    await store.aclose()


def test_store_takes_only_a_session_store() -> None:
    with pytest.raises(pm.errors.InvalidArgument, match="session store"):
        pm.Session("uma", store="sqlite:///app.db")  # type: ignore[arg-type]
