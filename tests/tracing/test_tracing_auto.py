"""A configured global tracer provider gets spans without `tracing.instrument()` (issue 9):
checked in fresh interpreters, since the global provider can be set once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    import promptimus as pm
    from promptimus.llms.scripted import ScriptedLLM
    from promptimus.modules import Prompt

    class Outer(pm.Module):
        def __init__(self):
            super().__init__()
            self.inner = Prompt("Be brief.")

        async def forward(self, text):
            return await self.inner([pm.Message(role="user", content=text)])

    async def main():
        agent = Outer().with_llm(ScriptedLLM(["hi"] * 4))
        await agent("before any provider")  # OpenTelemetry not even imported yet
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        await agent("imported, no provider yet")
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        await agent("traced")
        names = sorted({s.name for s in exporter.get_finished_spans()})
        print("SPANS", names)
        roots = {s.context.trace_id for s in exporter.get_finished_spans()}
        print("TRACES", len(roots))

    asyncio.run(main())
    """
)


def run(env_extra: dict[str, str]) -> str:
    import os

    env = {**os.environ, **env_extra}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_setting_a_global_tracer_provider_is_enough_for_spans() -> None:
    out = run({})
    spans = next(line for line in out.splitlines() if line.startswith("SPANS"))
    assert "'root'" in spans and "'root.inner'" in spans  # named by module path
    assert "TRACES 1" in out  # only the call made after the provider was set


def test_automatic_tracing_can_be_switched_off() -> None:
    out = run({"PROMPTIMUS_AUTO_TRACING": "0"})
    assert "SPANS []" in out
