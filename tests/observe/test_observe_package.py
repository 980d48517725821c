"""What `promptimus.observe` itself exports: the process-wide provider-call observer the
documentation names, imported from the package and watching a real call."""

from __future__ import annotations

import promptimus as pm
from promptimus.llms import ScriptedLLM


async def test_a_provider_call_observer_registers_from_the_package() -> None:
    from promptimus.observe import ProviderCall, register_provider_call_observer

    seen: list[ProviderCall] = []

    class Watcher:
        def on_start(self, call: ProviderCall) -> None:
            pass

        def on_end(self, call: ProviderCall) -> None:
            seen.append(call)

    handle = register_provider_call_observer(Watcher())
    try:
        prompt = pm.Prompt("You answer.").with_llm(ScriptedLLM(["yes", "still"]))
        await prompt.forward([pm.Message(role=pm.MessageRole.USER, content="ok?")])
    finally:
        handle.remove()
    assert [call.kind for call in seen] == ["llm"]
    assert isinstance(seen[0], ProviderCall)
    await prompt.forward([pm.Message(role=pm.MessageRole.USER, content="again?")])
    assert len(seen) == 1  # removed: no longer told
