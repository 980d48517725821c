"""Quick start: a tool-calling agent with memory, a run record and a checkpoint, end to end.

    python3 -m uv run --no-dev examples/quickstart.py            # offline demo model
    python3 -m uv run --no-dev examples/quickstart.py --model openai:gpt-4o-mini  # needs a key

By default the agent talks to promptimus's built-in fake OpenAI server on 127.0.0.1 — over real
HTTP with the real `openai` SDK — whose replies come from a tiny rule-based "OFFLINE DEMO MODEL"
defined below. It is not a language model; it exists so that you can watch the whole machinery
(tool calls, memory, usage, checkpoints) without an API key.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import promptimus as pm
from promptimus.llms import OpenAILike, resolve
from promptimus.modules import OpenaiToolCallingAgent, Tool
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

FORECASTS = {"paris": (18, "light rain"), "tokyo": (24, "clear skies"), "oslo": (7, "snow")}


@Tool.decorate
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Today's weather for a city.

    Args:
        city: The city name, e.g. "Paris".
        unit: Temperature unit.
    """
    temperature, sky = FORECASTS.get(city.lower(), (20, "unknown"))
    if unit == "fahrenheit":
        temperature = round(temperature * 9 / 5 + 32)
    return {"city": city, "temperature": temperature, "unit": unit, "sky": sky}


@Tool.decorate
def packing_tip(sky: str) -> str:
    """Suggest one item to pack for the given sky conditions."""
    tips = {"rain": "an umbrella", "snow": "warm boots", "clear": "sunglasses"}
    return next((item for word, item in tips.items() if word in sky), "a light jacket")


def offline_demo_model(body: dict[str, Any]) -> Any:
    """The OFFLINE DEMO MODEL: asks for the weather, then for a packing tip, then answers."""
    messages = body["messages"]
    turn = messages[max(i for i, m in enumerate(messages) if m["role"] == "user") :]
    results = [m["content"] for m in turn if m["role"] == "tool"]
    question = turn[0]["content"] if isinstance(turn[0]["content"], str) else ""
    cities = [city for city in FORECASTS if city in question.lower()]
    if not body.get("tools") or not cities:
        return f"[OFFLINE DEMO MODEL] I only know the weather in {', '.join(FORECASTS)}."
    if not results:
        return Reply(tool_calls=[ToolCall("get_weather", {"city": cities[0].title()})])
    weather = json.loads(results[0])
    if len(results) == 1:
        return Reply(tool_calls=[ToolCall("packing_tip", {"sky": weather["sky"]})])
    return (
        f"[OFFLINE DEMO MODEL] {weather['city']}: {weather['temperature']} degrees "
        f"{weather['unit']}, {weather['sky']}. Pack {results[1]}."
    )


@contextlib.contextmanager
def language_model(spec: str) -> Iterator[Any]:
    if spec != "offline":
        yield resolve(spec)
        return
    with FakeOpenAIServer() as server:
        server.chat.respond_with(offline_demo_model)
        yield OpenAILike("offline-demo", api_key=server.api_key, base_url=server.base_url)


async def main(spec: str) -> None:
    agent = OpenaiToolCallingAgent(
        "You are a concise travel assistant. Check the weather before giving advice.",
        [get_weather, packing_tip],
        max_steps=4,
    )
    with language_model(spec) as llm:
        agent.with_llm(llm)
        print(f"model: {spec} ({llm!r})\n")
        with pm.Session("traveller"):
            for question in ["What's the weather in Paris today?", "And what about Tokyo?"]:
                result = await agent.run(question)
                print(f"user:  {question}")
                print(f"agent: {result.output.content}")
                for step in result.record.steps:
                    for call in step.tool_calls:
                        print(
                            f"       step {step.index}: {call.name}({call.arguments}) -> ", end=""
                        )
                        print(call.result if call.error is None else f"error: {call.error}")
                usage = result.record.usage
                print(f"       tokens: {usage.prompt_tokens} in, {usage.completion_tokens} out\n")
            print(f"memory holds {len(agent.memory)} messages for this session\n")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "travel_agent.toml"
        agent.save(path)
        print(f"checkpoint ({path.name}):\n{path.read_text()}")
        restored = OpenaiToolCallingAgent("placeholder", [get_weather, packing_tip]).load(path)
        same = restored.digest() == agent.digest()
        print(f"reloaded into a fresh agent: digests {'match' if same else 'DIFFER'}")
        if not same:
            raise SystemExit(1)
        del restored  # the fresh agent now holds the same prompts as the one we ran


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="promptimus quick start")
    parser.add_argument(
        "--model",
        default="offline",
        help='"offline" (default: the built-in demo model) or a model string such as '
        "openai:gpt-4o-mini, ollama:llama3.2 or <provider>:<model> with <PROVIDER>_API_KEY "
        "and <PROVIDER>_API_BASE set",
    )
    arguments = parser.parse_args()
    asyncio.run(main(arguments.model))
