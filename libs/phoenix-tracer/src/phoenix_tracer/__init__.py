"""Send promptimus traces to Arize Phoenix.

    from phoenix_tracer import trace

    provider = trace(agent, "assistant", project_name="my-app")   # the original's spelling
    await agent("hi")
    provider.force_flush(); provider.shutdown()

`register(...)` sets up the exporter and instrumentation without naming a tree.
"""

from .tracer import DEFAULT_ENDPOINT, register, trace

__all__ = ["DEFAULT_ENDPOINT", "register", "trace"]
