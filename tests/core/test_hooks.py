"""The call path: `await m(...)`, `await m.forward(...)`, hooks, interceptors and `run_sync`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus import Module
from promptimus.core import register_module_call_interceptor
from promptimus.errors import SyncCallInLoop


class Echo(Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        await asyncio.sleep(0)
        return (args, kwargs)


class Loud(Echo):
    """Overrides forward and calls `super().forward()`: hooks must still run once per call."""

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        args_, kwargs_ = await super().forward(*args, **kwargs)
        return ("loud", args_, kwargs_)


class Louder(Loud):
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        return ("louder", await super().forward(*args, **kwargs))


class Countdown(Module):
    """Calls itself: every level is a real module call and goes through the hooks."""

    async def forward(self, n: int) -> int:
        if n == 0:
            return 0
        return 1 + await self(n - 1)


class Parent(Module):
    def __init__(self) -> None:
        super().__init__()
        self.child = Echo()

    async def forward(self, x: int) -> Any:
        return await self.child.forward(x + 1)


def counting_hooks(module: Module) -> dict[str, int]:
    counts = {"pre": 0, "post": 0}

    def pre(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        counts["pre"] += 1

    def post(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        counts["post"] += 1

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)
    return counts


@pytest.fixture
def trace() -> Iterator[list[str]]:
    """Records `enter:<Type>` / `exit:<Type>` for every module call while the test runs."""
    events: list[str] = []

    async def interceptor(
        module: Module, call_next: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        events.append(f"enter:{type(module).__name__}")
        try:
            return await call_next(args, kwargs)
        finally:
            events.append(f"exit:{type(module).__name__}")

    with register_module_call_interceptor(interceptor):
        yield events


# ---------------------------------------------------------------------------------- call paths


async def test_call_and_forward_are_the_same_path() -> None:
    module = Echo()
    counts = counting_hooks(module)
    assert await module(1, a=2) == await module.forward(1, a=2) == ((1,), {"a": 2})
    assert counts == {"pre": 2, "post": 2}
    assert module.calls == 2


async def test_pre_hook_can_replace_args_and_kwargs() -> None:
    module = Echo()

    def rewrite(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        assert m is module
        return ((*args, "added"), {**kwargs, "k": "v"})

    module.register_forward_pre_hook(rewrite)
    assert await module("x") == (("x", "added"), {"k": "v"})


async def test_forward_hook_can_replace_output_and_none_keeps_it() -> None:
    module = Echo()
    seen: list[Any] = []

    def observe(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        seen.append(out)

    async def replace(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        await asyncio.sleep(0)
        return {"wrapped": out}

    module.register_forward_hook(observe)
    module.register_forward_hook(replace)
    assert await module(3) == {"wrapped": ((3,), {})}
    assert seen == [((3,), {})]


async def test_hooks_run_in_registration_order_sync_and_async() -> None:
    module = Echo()
    order: list[str] = []

    def first(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        order.append("first")
        return ((*args, 1), kwargs)

    async def second(m: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        order.append("second")
        return ((*args, 2), kwargs)

    def post_a(m: Module, a: Any, kw: Any, out: Any) -> Any:
        order.append("post_a")
        return [out, "a"]

    async def post_b(m: Module, a: Any, kw: Any, out: Any) -> Any:
        order.append("post_b")
        return [out, "b"]

    module.register_forward_pre_hook(first)
    module.register_forward_pre_hook(second)
    module.register_forward_hook(post_a)
    module.register_forward_hook(post_b)
    assert await module() == [[((1, 2), {}), "a"], "b"]
    assert order == ["first", "second", "post_a", "post_b"]


async def test_post_hook_sees_rewritten_args() -> None:
    module = Echo()
    module.register_forward_pre_hook(lambda m, a, kw: (("new",), {}))
    seen: list[Any] = []
    module.register_forward_hook(lambda m, a, kw, out: seen.append(a))
    await module("old")
    assert seen == [("new",)]


async def test_handle_remove_and_context_manager() -> None:
    module = Echo()
    counts = {"n": 0}

    def hook(m: Module, args: Any, kwargs: Any) -> None:
        counts["n"] += 1

    handle = module.register_forward_pre_hook(hook)
    await module()
    handle.remove()
    handle.remove()  # idempotent
    await module()
    assert counts["n"] == 1
    with module.register_forward_hook(lambda m, a, kw, out: "hooked"):
        assert await module() == "hooked"
    assert await module() == ((), {})


async def test_super_forward_does_not_run_hooks_twice() -> None:
    module = Louder()
    counts = counting_hooks(module)
    assert await module(7) == ("louder", ("loud", (7,), {}))
    assert counts == {"pre": 1, "post": 1}
    assert await module.forward(7) == ("louder", ("loud", (7,), {}))
    assert counts == {"pre": 2, "post": 2}
    assert module.calls == 2


async def test_super_forward_under_concurrency_runs_hooks_once_per_call() -> None:
    module = Loud()
    counts = counting_hooks(module)
    results = await asyncio.gather(*(module(i) for i in range(25)))
    assert results == [("loud", (i,), {}) for i in range(25)]
    assert counts == {"pre": 25, "post": 25}


async def test_recursive_self_call_runs_hooks_each_time() -> None:
    module = Countdown()
    counts = counting_hooks(module)
    assert await module(3) == 3
    assert counts == {"pre": 4, "post": 4}


async def test_hooks_on_a_subclass_without_its_own_forward() -> None:
    class Plain(Echo):
        pass

    module = Plain()
    counts = counting_hooks(module)
    await module()
    assert counts == {"pre": 1, "post": 1}


async def test_child_hooks_run_when_parent_calls_child_forward() -> None:
    parent = Parent()
    child_counts = counting_hooks(parent.child)
    parent_counts = counting_hooks(parent)
    assert await parent(1) == ((2,), {})
    assert child_counts == parent_counts == {"pre": 1, "post": 1}


async def test_hooks_of_one_instance_do_not_fire_for_another() -> None:
    a, b = Echo(), Echo()
    counts = counting_hooks(a)
    await b()
    assert counts == {"pre": 0, "post": 0}


async def test_errors_propagate_and_skip_post_hooks() -> None:
    class Boom(Module):
        async def forward(self) -> None:
            raise ValueError("boom")

    module = Boom()
    counts = counting_hooks(module)
    with pytest.raises(ValueError, match="boom"):
        await module()
    assert counts == {"pre": 1, "post": 0}


# ---------------------------------------------------------------------------------- interceptors


async def test_interceptor_wraps_every_call_nested(trace: list[str]) -> None:
    parent = Parent()
    await parent(1)
    assert trace == ["enter:Parent", "enter:Echo", "exit:Echo", "exit:Parent"]


async def test_interceptors_first_registered_is_outermost() -> None:
    events: list[str] = []

    def make(label: str) -> Any:
        async def interceptor(module: Module, call_next: Any, args: Any, kwargs: Any) -> Any:
            events.append(f"{label}>")
            out = await call_next(args, kwargs)
            events.append(f"<{label}")
            return out

        return interceptor

    module = Echo()
    module.register_forward_pre_hook(lambda m, a, kw: events.append("pre"))
    with (
        register_module_call_interceptor(make("outer")),
        register_module_call_interceptor(make("inner")),
    ):
        await module()
    assert events == ["outer>", "inner>", "pre", "<inner", "<outer"]
    events.clear()
    await module()  # interceptors are gone after their handles are removed
    assert events == ["pre"]


async def test_interceptor_can_rewrite_arguments_and_result() -> None:
    async def interceptor(module: Module, call_next: Any, args: Any, kwargs: Any) -> Any:
        out = await call_next(("intercepted",), {"by": "interceptor"})
        return ("result", out)

    with register_module_call_interceptor(interceptor):
        assert await Echo()("ignored") == ("result", (("intercepted",), {"by": "interceptor"}))


async def test_interceptor_sees_super_forward_once_and_recursion_each_time(
    trace: list[str],
) -> None:
    await Louder()()
    assert trace == ["enter:Louder", "exit:Louder"]
    trace.clear()
    await Countdown()(2)
    assert trace == ["enter:Countdown"] * 3 + ["exit:Countdown"] * 3


# ---------------------------------------------------------------------------------- run_sync


def test_run_sync_from_sync_code() -> None:
    module = Echo()
    counts = counting_hooks(module)
    assert module.run_sync(1, k=2) == ((1,), {"k": 2})
    assert counts == {"pre": 1, "post": 1}


async def test_run_sync_inside_a_loop_is_refused() -> None:
    module = Echo()
    with pytest.raises(SyncCallInLoop, match="await"):
        module.run_sync()
    assert module.calls == 0
