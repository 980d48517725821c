"""Tools offered to one agent's runs for the length of a block (`offering`): the model of that
agent is offered them and its calls run them; an agent nested in the run, and runs outside the
block, never see them; the agent's own tool of the same name wins."""

from __future__ import annotations

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.run_state import agent_fingerprint
from promptimus.agents.run_tools import offering
from promptimus.llms import ScriptedLLM
from promptimus.tools import Tool

S = ScriptedLLM


def offered(llm: ScriptedLLM, request: int) -> list[str]:
    return [t["function"]["name"] for t in llm.requests[request][1].get("tools", [])]


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def own_weather(city: str) -> str:
    """The agent's own weather tool."""
    return f"rainy in {city}"


async def test_an_offered_tool_is_offered_and_run_only_inside_the_block() -> None:
    llm = S([S.tool_call("weather", {"city": "Oslo"}, id="w1"), "Done.", "Plain."])
    agent = OpenaiToolCallingAgent("You help.").with_llm(llm)
    before = agent_fingerprint(agent)
    with offering(agent, [Tool(weather)]):
        assert str(await agent("weather?")) == "Done."
    assert offered(llm, 0) == ["weather"]
    assert llm.requests[1][0][-1].content == "sunny in Oslo"
    assert str(await agent("again")) == "Plain."
    assert offered(llm, 2) == []
    assert agent_fingerprint(agent) == before


async def test_a_nested_agent_does_not_see_its_parents_offer() -> None:
    inner_llm = S(["inner answer"])
    inner = OpenaiToolCallingAgent("You research.").with_llm(inner_llm)
    outer_llm = S([S.tool_call("researcher", {"request": "x"}, id="r1"), "Outer."])
    outer = OpenaiToolCallingAgent(
        "You answer.", [Tool.from_module(inner, name="researcher")]
    ).with_llm(outer_llm)
    with offering(outer, [Tool(weather)]):
        assert str(await outer("go")) == "Outer."
    assert sorted(offered(outer_llm, 0)) == ["researcher", "weather"]
    assert offered(inner_llm, 0) == []


async def test_the_agents_own_tool_wins_over_an_offered_one() -> None:
    llm = S([S.tool_call("weather", {"city": "Bergen"}), "Done."])
    agent = OpenaiToolCallingAgent("You help.", [Tool(own_weather, name="weather")])
    agent.with_llm(llm)
    with offering(agent, [Tool(weather)]):
        await agent("weather?")
    assert offered(llm, 0) == ["weather"]
    assert llm.requests[1][0][-1].content == "rainy in Bergen"
