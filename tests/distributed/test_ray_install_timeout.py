"""A worker start that times out says so once: the abandoned calls to the workers leave no
"exception was never retrieved" behind the `WorkersUnavailable` (Ray itself is stood in for at
its edge: the calls to the workers never answer)."""

from __future__ import annotations

import asyncio
import gc
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from promptimus.distributed import ray_runner
from promptimus.distributed.ray_runner import RayRunner
from promptimus.errors import WorkersUnavailable


class _SilentRay:
    """The parts of `ray` `_install` uses; the workers' `install` calls never finish."""

    def __init__(self) -> None:
        self.killed = 0

    def put(self, value: Any) -> Any:
        return value

    def available_resources(self) -> dict[str, float]:
        return {"CPU": 0.0}

    def kill(self, actor: Any) -> None:
        self.killed += 1


def _slot() -> Any:
    never = asyncio.get_running_loop().create_future()
    actor = SimpleNamespace(install=SimpleNamespace(remote=lambda *parts: never))
    return SimpleNamespace(actor=actor, alive=True)


async def test_a_start_timeout_leaves_no_unretrieved_exception(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = _SilentRay()
    monkeypatch.setattr(ray_runner, "_ray", lambda: fake)
    monkeypatch.setattr(ray_runner.StartWatch, "begin", classmethod(lambda cls: None))
    runner = RayRunner(num_workers=2, start_timeout=0.05)
    shipment = SimpleNamespace(payload=[b"job", None])
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(WorkersUnavailable, match=r"within 0\.05 s"):
            await runner._install([_slot(), _slot()], shipment)  # type: ignore[arg-type]
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()
    assert fake.killed == 2
    assert "never retrieved" not in caplog.text
