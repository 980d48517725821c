"""Code written for the original promptimus 0.1 (its README, SKILL.md and tutorials), run on this
package: the same module tree has the same checkpoint keys, and the original's constructor
arguments, calling conventions and exceptions keep working (issue 8).

`tests/support/fixtures/original/assistant_0_1_26.toml` was written by promptimus 0.1.26 itself
(`save()` of the tree `assistant()` builds below, with a few values tuned after construction)."""

from __future__ import annotations

import math

import pytest
from locations import FIXTURES
from pydantic import BaseModel, Field, ValidationError

import promptimus as pm
from promptimus.embedders import HashingEmbedder
from promptimus.errors import InvalidArgument, ProviderUnavailable, ToolArgumentsError
from promptimus.llms import ScriptedLLM
from promptimus.modules.memory import Memory
from promptimus.rerankers import OpenAILikeReranker, RRFReranker
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.vector_stores import InMemoryVectorStore, SearchHit

ORIGINAL = FIXTURES / "original"


class Answer(BaseModel):
    reasoning: str
    value: float = Field(description="The result.")


def power(a: float, b: float) -> float:
    """Calculates `a` to the power of `b`"""
    return a**b


def factorial(a: int) -> int:
    """Calculates the factorial of `a`"""
    return math.factorial(a)


class Researcher(pm.Module):
    """Answers research questions from the conversation."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = pm.modules.MemoryModule(memory_size=20, system_prompt="You research.")

    async def forward(
        self, history: list[pm.Message] | pm.Message | str, **kwargs: object
    ) -> pm.Message:
        return await self.memory.forward(history, **kwargs)


class Assistant(pm.Module):
    """Every prebuilt module of the original, built with the original's arguments."""

    def __init__(self) -> None:
        super().__init__()
        shared = Memory(30)
        self.style = pm.Parameter("Answer briefly.")
        self.top_k = pm.Parameter(3)
        self.threshold = pm.Parameter(0.5)
        self.router = pm.modules.StructuralOutput(Answer, retry_message_role=pm.MessageRole.USER)
        self.planner = pm.modules.StructuralOutput(Answer, native=False)
        self.chat = pm.modules.MemoryModule(
            memory_size=5, system_prompt="You are a helpful assistant.", shared_memory=shared
        )
        self.greeter = pm.Prompt("Greet {name}.", role=pm.MessageRole.USER)
        self.react = pm.modules.ToolCallingAgent(
            [power, pm.modules.Tool.decorate(factorial)],
            observation_role=pm.MessageRole.USER,
            shared_memory=shared,
        )
        research = pm.modules.Tool.from_module(
            Researcher(),
            name="research",
            description="Delegate research.",
            handoff_history=True,
        )
        self.native = pm.modules.OpenaiToolCallingAgent(
            "Use tools.", [power, factorial, research], structural_output=Answer
        )
        store = InMemoryVectorStore()
        self.retrieval = pm.modules.RetrievalModule(vector_store=store, text_store=store)
        self.rag = pm.modules.RAGModule(vector_store=store)

    async def forward(self) -> None:
        return None


ORIGINAL_KEYS = {
    "style",
    "top_k",
    "threshold",
    "router.model_json_schema",
    "router.retry_template",
    "router.predictor.prompt",
    "router.predictor.role",
    "planner.model_json_schema",
    "planner.retry_template",
    "planner.predictor.prompt",
    "planner.predictor.role",
    "chat.prompt.prompt",
    "chat.prompt.role",
    "greeter.prompt",
    "greeter.role",
    "react.tools.power.description",
    "react.tools.factorial.description",
    "react.predictor.prompt.prompt",
    "react.predictor.prompt.role",
    "native.tools.power.description",
    "native.tools.factorial.description",
    "native.tools.research.description",
    "native.tools.research.module.memory.prompt.prompt",
    "native.tools.research.module.memory.prompt.role",
    "native.predictor.prompt.prompt",
    "native.predictor.prompt.role",
    "rag.query_template",
    "rag.memory_module.prompt.prompt",
    "rag.memory_module.prompt.role",
}


# ------------------------------------------------------------------- checkpoint keys


def test_the_same_tree_has_the_originals_checkpoint_keys() -> None:
    assert set(Assistant().state_dict()) == ORIGINAL_KEYS


def test_a_checkpoint_written_by_the_original_loads_strictly() -> None:
    root = Assistant().load(ORIGINAL / "assistant_0_1_26.toml")  # strict by default
    # read with 0.1's rule: the newline its tomlkit adds after the opening quotes is not kept
    assert root.style.value == "Answer in one sentence."
    assert (root.top_k.value, root.threshold.value) == (5, 0.25)
    assert root.chat.prompt.prompt.value == "You are a tuned assistant.\nBe kind."
    assert root.rag.query_template.value == "Context:\n{context}\n\nQ: {query}"
    assert root.router.retry_template.value == "Wrong: {error_message}"
    assert root.react.predictor.prompt.role.value == "system"
    research = root.native.tools["research"].description.value
    assert research == "Hand the conversation to the researcher."


async def test_the_originals_react_prompt_runs_after_loading() -> None:
    root = Assistant().load(ORIGINAL / "assistant_0_1_26.toml")
    llm = ScriptedLLM(
        [
            'Thought: use power\nAction: power\nAction Input: {"a": 2, "b": 3}',
            "Thought: done\nAnswer: 8",
        ]
    )
    reply = await root.react.with_llm(llm).forward("What is 2 to the power of 3?")
    assert reply.content == "8"
    system = llm.requests[0][0][0].content
    assert "Names: ['power', 'factorial']" in system or "Names: power, factorial" in system
    assert "Observation: 8.0" in llm.requests[1][0][-1].content


async def test_structural_output_from_a_model_class_adds_no_keys_but_still_validates() -> None:
    agent = pm.modules.OpenaiToolCallingAgent("p", [], structural_output=Answer)
    assert set(agent.state_dict()) == {"predictor.prompt.prompt", "predictor.prompt.role"}
    assert agent.structural_output_model is Answer
    llm = ScriptedLLM(['{"reasoning": "r"}', '{"reasoning": "r", "value": 3}'])
    assert await agent.with_llm(llm).forward("x") == Answer(reasoning="r", value=3)
    assert llm.requests[0][1]["response_format"]["type"] == "json_schema"
    # a StructuralOutput instance is a tunable submodule, as before
    tuned = pm.modules.OpenaiToolCallingAgent(
        "p", [], structural_output=pm.modules.StructuralOutput(Answer)
    )
    assert "structural_output.retry_template" in tuned.state_dict()
    assert tuned.structural_output_model is Answer


def test_retrieval_counts_are_plain_ints_as_in_the_original() -> None:
    retrieval = pm.modules.RetrievalModule(n_semantic=4, n_text=2, n_after_rerank=3)
    assert (retrieval.n_semantic, retrieval.n_text, retrieval.n_after_rerank) == (4, 2, 3)
    assert retrieval.state_dict() == {}


# ------------------------------------------------------------------- providers


async def test_openai_like_takes_the_originals_retry_and_call_arguments(
    fake_openai_env: FakeOpenAIServer,
) -> None:
    srv = fake_openai_env
    srv.chat.script(Fault.status(500), Fault.status(500), "too late")
    with pytest.warns(DeprecationWarning, match=r"n_retries=N.*max_retries=1"):
        llm = pm.llms.OpenAILike(
            model_name="m",
            call_kwargs={"temperature": 0},
            max_concurrency=10,
            n_retries=2,  # 0.1 counted attempts: two requests in all
            base_wait=0.0,
        )
    with pytest.raises(ProviderUnavailable):
        await llm.achat([pm.Message(role=pm.MessageRole.USER, content="hi")])
    assert len(srv.chat.requests) == 2
    assert srv.chat.requests[0]["temperature"] == 0
    assert llm.retry.base_delay == 0.0


async def test_the_embedder_takes_the_originals_embed_kwargs(
    fake_openai_env: FakeOpenAIServer,
) -> None:
    with pytest.warns(DeprecationWarning, match="embed_kwargs=.*call_kwargs="):
        embedder = pm.embedders.OpenAILikeEmbedder(
            model_name="e", embed_kwargs={"dimensions": 8}, n_retries=5, base_wait=3.0
        )
    vectors = await embedder.aembed_batch(["Hello world", "How are you?"])
    assert len(vectors) == 2
    assert fake_openai_env.embeddings.requests[0]["dimensions"] == 8
    assert embedder.retry.max_retries == 4


def test_a_bad_original_retry_count_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="n_retries"):
        pm.llms.OpenAILike(model_name="m", api_key="k", n_retries=0)


# ------------------------------------------------------------------- tools


async def test_bad_tool_arguments_are_the_pydantic_validation_error_the_original_raised() -> None:
    @pm.modules.Tool.decorate
    def power(a: float, b: float) -> float:
        """Calculates the `a` in the power of `b`"""
        return a**b

    assert await power.forward('{"a": 2, "b": 8}') == 256
    with pytest.raises(ValidationError) as caught:  # the tutorial's `except ValidationError`
        await power.forward('{"a": 2, "c": 8}')
    assert isinstance(caught.value, ToolArgumentsError)  # and still ours
    assert {e["type"] for e in caught.value.errors()} == {"missing", "extra_forbidden"}
    assert "power" in str(caught.value) and "b: missing" in str(caught.value)
    with pytest.raises(ValidationError):
        await power.forward('{"a": 2, "b": ')  # cut-off JSON


async def test_handoff_to_a_module_whose_forward_takes_an_unannotated_history() -> None:
    class ResearchAgent(pm.Module):
        """Performs deep research on a topic."""

        def __init__(self) -> None:
            super().__init__()
            self.memory = pm.modules.MemoryModule(memory_size=20, system_prompt="Research.")

        async def forward(self, history, **kwargs):  # type: ignore[no-untyped-def]  # as in 0.1 code
            return await self.memory.forward(history, **kwargs)

    research = pm.modules.Tool.from_module(
        ResearchAgent(), name="research", description="Delegate.", handoff_history=True
    )
    llm = ScriptedLLM(
        [ScriptedLLM.tool_call("research", {}), "Python began in 1991.", "It began in 1991."]
    )
    orchestrator = pm.modules.OpenaiToolCallingAgent("Route.", [research]).with_llm(llm)
    with pm.modules.ResetMemoryContext(orchestrator):
        reply = await orchestrator.forward("Research the history of Python.")
    assert reply.content == "It began in 1991."
    sub_request = llm.requests[1][0]
    assert sub_request[0].content == "Research."
    assert [m.content for m in sub_request[1:]] == ["Research the history of Python."]


# ------------------------------------------------------------------- early 0.1 spellings


async def test_the_early_tutorials_with_provider_and_prompt_provider() -> None:
    llm = ScriptedLLM(["My name is Henry.", "Arr, Henry here."])
    with pytest.warns(DeprecationWarning, match=r"with_llm\(\)"):
        assistant = pm.modules.MemoryModule(system_prompt="Act as an assistant").with_provider(llm)
    assert (await assistant.forward("What is your name?")).content == "My name is Henry."
    with pytest.warns(DeprecationWarning, match="with_llm"):
        prompt = pm.Prompt("You are an AI assistant with name Henry", provider=llm)
    reply = await prompt.forward([pm.Message(role=pm.MessageRole.USER, content="Name?")])
    assert reply.content == "Arr, Henry here."
    assert llm.requests[1][0][0].content == "You are an AI assistant with name Henry"


async def test_the_react_tutorials_predicor_is_the_predictor() -> None:
    agent = pm.modules.ToolCallingAgent([power]).with_llm(ScriptedLLM(["Thought: t\nAnswer: 1"]))
    await agent.forward("hi")
    with pytest.warns(DeprecationWarning, match=r"agent\.predictor"):
        memory = agent.predicor.memory
    assert memory is agent.predictor.memory
    assert memory.as_list()[0].content == "hi"
    with pytest.warns(DeprecationWarning):
        agent.predicor.memory.reset()
    assert agent.predictor.memory.as_list() == []


def test_the_skill_docs_n_results_sets_every_count() -> None:
    with pytest.warns(DeprecationWarning, match="n_semantic=N"):
        retrieval = pm.modules.RetrievalModule(n_results=3)
    assert (retrieval.n_semantic, retrieval.n_text, retrieval.n_after_rerank) == (3, 3, 3)
    with pytest.warns(DeprecationWarning, match="RAGModule"):
        rag = pm.modules.RAGModule(n_results=5, memory_size=10)
    assert (rag.retrieval.n_semantic, rag.retrieval.n_after_rerank) == (5, 5)


# ------------------------------------------------------------------- data and containers


def test_message_prettify_and_module_dict_objects_map() -> None:
    assert pm.Message(role=pm.MessageRole.USER, content="hi").prettify() == "user: hi"
    agent = pm.modules.ToolCallingAgent([power, factorial])
    with pytest.warns(DeprecationWarning, match="ModuleDict itself"):
        entries = agent.tools.objects_map
    assert list(entries) == ["power", "factorial"]
    assert entries["power"] is agent.tools["power"]


# ------------------------------------------------------------------- rerankers


class FirstListReranker:
    """A reranker written to promptimus 0.1's protocol: `forward(query, result_lists)`."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    async def forward(self, query: str, result_lists: list[list[SearchHit]], **kwargs: object):  # type: ignore[no-untyped-def]
        self.seen.append((query, len(result_lists)))
        return list(reversed([r for results in result_lists for r in results]))


async def test_retrieval_uses_a_reranker_written_to_the_originals_protocol() -> None:
    store = InMemoryVectorStore()
    reranker = FirstListReranker()
    retrieval = pm.modules.RetrievalModule(
        vector_store=store, text_store=store, n_semantic=2, n_text=2, n_after_rerank=1
    ).with_embedder(HashingEmbedder(32))
    retrieval.with_reranker(reranker)
    await retrieval.insert(["apples are red", "bananas are yellow", "cherries are red"])
    hits = await retrieval.forward("red apples")
    assert reranker.seen == [("red apples", 2)]  # both rankings, unfused, as in 0.1
    assert len(hits) == 1 and hits[0].content in {"apples are red", "cherries are red"}


async def test_rrf_forward_takes_the_originals_query_first_form() -> None:
    a = SearchHit("a", "A", 1.0)
    b = SearchHit("b", "B", 0.5)
    ours = await RRFReranker().forward([[a, b], [b]])
    original = await RRFReranker().forward("any query", [[a, b], [b]])
    assert [h.idx for h in original] == [h.idx for h in ours] == ["b", "a"]


async def test_the_cross_encoder_takes_the_originals_arguments_and_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    with pytest.warns(DeprecationWarning, match="rerank_kwargs=.*call_kwargs="):
        reranker = OpenAILikeReranker(
            "rr", base_url=fake_openai.base_url, rerank_kwargs={"return_documents": False}
        )
    hits = [SearchHit("1", "bananas are yellow", 0.0), SearchHit("2", "red apples", 0.0)]
    ranked = await reranker.forward("red apples", [hits, hits[:1]])
    assert [h.idx for h in ranked] == ["2", "1"]
    assert fake_openai.rerank.requests[0]["return_documents"] is False
    assert len(fake_openai.rerank.requests[0]["documents"]) == 2  # the union, once each
    with pytest.raises(TypeError, match="n_result"):
        OpenAILikeReranker("rr", base_url=fake_openai.base_url, n_result=3)


async def test_claude_keeps_0_1_arguments_on_the_native_messages_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from promptimus.llms import Anthropic, Claude
    from promptimus.testing import FakeAnthropicServer

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # must not redirect Claude
    assert isinstance(Claude("claude-sonnet"), Anthropic)
    assert Claude("claude-sonnet").base_url is None  # the SDK's own: Anthropic's API
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAnthropicServer() as srv:
        srv.messages.script(Fault.status(500), "Hello from Claude")
        # 0.1's positional order: call_kwargs, max_tokens, max_concurrency, n_retries, base_wait
        llm = Claude("claude-sonnet", {"temperature": 0}, 1024, 10, 2, 0.0, base_url=srv.base_url)
        assert (llm.retry.max_retries, llm.max_concurrency) == (1, 10)
        reply = await llm.achat([pm.Message(role=pm.MessageRole.USER, content="Hi")])
        assert reply.content == "Hello from Claude"
        sent = srv.messages.requests
        assert len(sent) == 2 and sent[1]["max_tokens"] == 1024 and sent[1]["temperature"] == 0
        assert srv.requests[-1].headers.get("x-api-key") == "sk-ant-test"


async def test_positional_call_kwargs_and_concurrency_as_in_0_1(
    fake_openai_env: FakeOpenAIServer,
) -> None:
    with pytest.warns(DeprecationWarning, match="call_kwargs="):
        llm = pm.llms.OpenAILike("m", {"temperature": 0.5}, 3)
    assert llm.max_concurrency == 3
    await llm.achat([pm.Message(role=pm.MessageRole.USER, content="hi")])
    assert fake_openai_env.chat.requests[0]["temperature"] == 0.5
    with pytest.warns(DeprecationWarning, match="OpenAILikeEmbedder"):
        embedder = pm.embedders.OpenAILikeEmbedder("e", {"dimensions": 4})
    await embedder.aembed("x")
    assert fake_openai_env.embeddings.requests[0]["dimensions"] == 4


def test_rag_takes_its_stores_first_as_in_0_1() -> None:
    vectors, texts = InMemoryVectorStore(), InMemoryVectorStore()
    with pytest.warns(DeprecationWarning, match="vector_store=..., text_store=..."):
        rag = pm.modules.RAGModule(vectors, texts)
    assert rag.retrieval.vector_store is vectors and rag.retrieval.text_store is texts
    with pytest.raises(InvalidArgument, match="pass stores by keyword"):
        pm.modules.RAGModule("ten")  # type: ignore[arg-type]


def test_a_role_outside_the_four_is_a_named_error() -> None:
    with pytest.raises(InvalidArgument, match="'system', 'user', 'assistant', 'tool'"):
        pm.Prompt("x", role="developer")
    assert pm.Prompt("x", role="user").role.value == "user"
