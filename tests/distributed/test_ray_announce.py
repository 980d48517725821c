"""The line a RayRunner prints before waiting for Ray: what it waits for, on stderr, once."""

from __future__ import annotations

import io
import sys

import pytest

from promptimus.distributed.announce import announce_ray_start, ray_start_line


def test_the_line_names_a_local_start_or_the_cluster() -> None:
    assert "starting a local Ray" in ray_start_line(None)
    assert "30 s" in ray_start_line(None)
    assert ray_start_line("10.0.0.5:6379") == (
        "promptimus: connecting RayRunner to the Ray cluster at 10.0.0.5:6379"
    )


def test_it_goes_to_stderr_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    announce_ray_start("auto")
    out, err = capsys.readouterr()
    assert out == "" and err == "promptimus: connecting RayRunner to the Ray cluster at auto\n"


def test_a_closed_stderr_loses_only_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    announce_ray_start(None)  # no exception
    monkeypatch.setattr(sys, "stderr", None)
    announce_ray_start(None)
