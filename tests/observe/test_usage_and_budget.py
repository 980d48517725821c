"""`pm.track_usage` and `pm.budget`: usage and cost per module path, limits checked before a
request is sent — through the real SDK against the fake server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import InvalidArgument, PromptimusError
from promptimus.llms import OpenAILike
from promptimus.modules import Prompt, RAGModule
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import Tool
from promptimus.vector_stores import InMemoryVectorStore

PRICING = {"fake-model": (2.0, 10.0, 0.5), "fake-embedding": (0.1, 0.0)}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def llm(srv: FakeOpenAIServer, model: str = "fake-model") -> OpenAILike:
    return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url)


def usage(prompt: int, completion: int, cached: int = 0) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": cached}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_usage_and_cost_per_module_path_with_a_sub_agent(server: FakeOpenAIServer) -> None:
    server.chat.script(
        Reply(tool_calls=[ToolCall("helper", {"request": "2+3"})], usage=usage(100, 10, 40)),
        Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})], usage=usage(50, 5)),  # sub-agent
        Reply("5", usage=usage(60, 1)),  # sub-agent
        Reply("It is 5.", usage=usage(120, 4)),
    )
    inner = OpenaiToolCallingAgent("You add.", [add])
    outer = OpenaiToolCallingAgent("You delegate.", [Tool.from_module(inner, name="helper")])
    outer.with_llm(llm(server))

    with pm.track_usage(pricing=PRICING) as report:
        await outer("2+3?")

    top = report.by_path["root.predictor.prompt"]
    sub = report.by_path["root.tools.helper.module.predictor.prompt"]
    assert set(report.by_path) == {
        "root.predictor.prompt",
        "root.tools.helper.module.predictor.prompt",
    }
    assert (top.requests, top.prompt_tokens, top.completion_tokens, top.cached_tokens) == (
        2,
        220,
        14,
        40,
    )
    assert (sub.requests, sub.prompt_tokens, sub.completion_tokens) == (2, 110, 6)
    assert report.total.requests == 4
    assert report.total.total_tokens == 220 + 14 + 110 + 6
    # cost: cached input at its own price
    assert top.cost == pytest.approx(((220 - 40) * 2.0 + 40 * 0.5 + 14 * 10.0) / 1e6)
    assert sub.cost == pytest.approx((110 * 2.0 + 6 * 10.0) / 1e6)
    assert report.cost == pytest.approx(top.cost + sub.cost)
    assert top.requests_by_kind == {"llm": 2} and top.requests_by_model == {"fake-model": 2}
    assert "root.predictor.prompt" in report.table()


async def test_an_unknown_models_cost_is_none_not_zero(server: FakeOpenAIServer) -> None:
    server.chat.script(Reply("a", usage=usage(10, 1)), Reply("b", usage=usage(10, 1)))
    known = Prompt("p").with_llm(llm(server))
    unknown = Prompt("q").with_llm(llm(server, "mystery-model"))
    holder = pm.ModuleList([known, unknown])  # type: ignore[attr-defined]

    with pm.track_usage(pricing=PRICING) as report:
        await holder[0]()
        await holder[1]()

    assert report.by_path["root.0"].cost == pytest.approx((10 * 2.0 + 10.0) / 1e6)
    assert report.by_path["root.1"].cost is None
    assert report.cost is None
    assert report.unpriced_models() == {"mystery-model"}
    assert report.total.total_tokens == 22


async def test_without_pricing_the_cost_is_unknown(server: FakeOpenAIServer) -> None:
    with pm.track_usage() as report:
        await Prompt("p").with_llm(llm(server))()
    assert report.total.requests == 1 and report.cost is None


async def test_embedding_usage_is_attributed_to_the_retrieval_module(
    server: FakeOpenAIServer,
) -> None:
    embedder = OpenAILikeEmbedder(
        "fake-embedding", api_key=server.api_key, base_url=server.base_url, batch_size=2
    )
    rag = RAGModule(
        vector_store=InMemoryVectorStore(), embedder=embedder, n_text=0, n_after_rerank=1
    ).with_llm(llm(server))
    with pm.track_usage(pricing=PRICING) as report:
        await rag.retrieval.insert(["one fact", "two facts here", "three"])
        await rag("which fact?")

    retrieval = report.by_path["root.retrieval"]
    assert retrieval.requests == 3  # two insert batches and the query
    assert retrieval.requests_by_kind == {"embedding": 3}
    assert retrieval.prompt_tokens == embedder.usage.prompt_tokens > 0
    assert report.by_path["root.memory_module.prompt"].requests == 1


async def test_concurrent_blocks_see_only_their_own_calls_and_gather_inside_counts(
    server: FakeOpenAIServer,
) -> None:
    server.chat.respond_with(lambda body: Reply("ok", usage=usage(7, 1)))
    prompt = Prompt("p").with_llm(llm(server))

    async def run(n: int) -> pm.tracing.UsageReport:  # type: ignore[name-defined]
        with pm.track_usage() as report:
            await asyncio.gather(*(prompt() for _ in range(n)))
            return report

    first, second = await asyncio.wait_for(asyncio.gather(run(3), run(5)), 30)
    assert first.total.requests == 3 and first.total.prompt_tokens == 21
    assert second.total.requests == 5 and second.total.prompt_tokens == 35


async def test_budget_stops_the_next_request_before_it_is_sent(server: FakeOpenAIServer) -> None:
    server.chat.respond_with(lambda body: Reply("ok", usage=usage(30, 10)))
    prompt = Prompt("p").with_llm(llm(server))

    with pm.budget(max_tokens=100) as spend:
        for _ in range(3):
            await prompt()  # 40 tokens each: 120 after the third
        with pytest.raises(pm.BudgetExceeded) as caught:
            await prompt()
    assert isinstance(caught.value, PromptimusError)
    assert "120 of 100" in str(caught.value)
    assert len(server.chat.requests) == 3  # the fourth was never sent
    assert spend.tokens == 120
    await prompt()  # outside the block: no limit
    assert len(server.chat.requests) == 4


async def test_cost_budget_and_an_unpriced_model(server: FakeOpenAIServer) -> None:
    server.chat.respond_with(lambda body: Reply("ok", usage=usage(1000, 100)))
    prompt = Prompt("p").with_llm(llm(server))
    with pm.budget(max_cost=0.005, pricing=PRICING) as spend:
        await prompt()  # 0.003
        await prompt()  # 0.006
        with pytest.raises(pm.BudgetExceeded, match="Cost budget reached"):
            await prompt()
    assert spend.cost == pytest.approx(0.006)
    assert len(server.chat.requests) == 2

    other = Prompt("p").with_llm(llm(server, "mystery-model"))
    with (
        pm.budget(max_cost=1.0, pricing=PRICING),
        pytest.raises(pm.BudgetExceeded, match="no price"),
    ):
        await other()
    assert len(server.chat.requests) == 2


async def test_budget_inside_a_tool_call_stops_the_whole_run(server: FakeOpenAIServer) -> None:
    server.chat.respond_with(
        lambda body: Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 1})], usage=usage(50, 5))
    )
    agent = OpenaiToolCallingAgent("loop", [add], max_steps=10).with_llm(llm(server))
    with pm.budget(max_tokens=120), pytest.raises(pm.BudgetExceeded):
        await agent("go")
    assert len(server.chat.requests) == 3
    assert agent.memory.as_list() == []  # a failed run leaves the memory as it was


def test_budget_arguments_are_checked() -> None:
    with pytest.raises(InvalidArgument), pm.budget():
        pass
    with pytest.raises(InvalidArgument, match="pricing"), pm.budget(max_cost=1.0):
        pass
    with pytest.raises(InvalidArgument, match="per million"), pm.track_usage(pricing={"m": (1,)}):  # type: ignore[dict-item]
        pass


@pytest.mark.parametrize(
    "arguments",
    [
        {"max_tokens": float("nan")},
        {"max_tokens": "100"},
        {"max_tokens": 1.5},
        {"max_tokens": 100.0},
        {"max_tokens": True},
        {"max_tokens": 0},
        {"max_tokens": -1},
        {"max_cost": float("nan"), "pricing": PRICING},
        {"max_cost": float("inf"), "pricing": PRICING},
        {"max_cost": "1", "pricing": PRICING},
        {"max_cost": 0, "pricing": PRICING},
        {"max_cost": True, "pricing": PRICING},
    ],
    ids=repr,
)
async def test_a_budget_that_cannot_limit_anything_is_refused_before_any_request(
    server: FakeOpenAIServer, arguments: dict[str, object]
) -> None:
    server.chat.respond_with(lambda body: Reply("ok", usage=usage(50, 2)))
    prompt = Prompt("p").with_llm(llm(server))
    with pytest.raises(InvalidArgument, match="max_"), pm.budget(**arguments):  # type: ignore[arg-type]
        for _ in range(5):
            await prompt()
    assert server.chat.requests == []


@pytest.mark.parametrize(
    "price",
    [
        (float("nan"), 1.0),
        (1.0, float("inf")),
        ("0.15", 0.6),
        (1.0, -2.0),
        (True, 1.0),
        (1, 2, "x"),
    ],
    ids=repr,
)
def test_every_price_is_a_finite_number_at_least_zero(price: tuple[object, ...]) -> None:
    for limit in (pm.track_usage, pm.budget):
        kwargs = {"max_cost": 1.0} if limit is pm.budget else {}
        with (
            pytest.raises(InvalidArgument, match=r"pricing\['m'\]"),
            limit(
                pricing={"m": price},  # type: ignore[dict-item]
                **kwargs,
            ),
        ):
            pass


def test_integral_and_real_numbers_of_other_types_are_accepted() -> None:
    import numpy as np

    pricing = {"m": (np.float64(1), 2)}
    with pm.budget(max_tokens=np.int64(100), max_cost=np.float32(0.5), pricing=pricing) as spend:
        assert spend.max_tokens == 100 and type(spend.max_tokens) is int
        assert spend.usage.pricing == {"m": (1.0, 2.0, 1.0)}
