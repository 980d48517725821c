"""`promptimus run` and `chat` with what a real module needs: template variables from `--var`,
and agents with `structural_output=` under the offline `--model fake`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from promptimus.cli import main
from promptimus.cli.offline_model import MARKER

TARGETS = '''
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.modules import StructuralOutput
from promptimus.tools import Tool


class Place(BaseModel):
    name: str


class Forecast(BaseModel):
    place: Place
    degrees: int
    sky: str = "clear"


@Tool.decorate
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21 C"


plain = OpenaiToolCallingAgent("You forecast.", structural_output=StructuralOutput(Forecast))
with_tools = OpenaiToolCallingAgent(
    "You forecast for {company}.", [weather], structural_output=StructuralOutput(Forecast)
)


class Greeter(pm.Module):
    async def forward(self, text, company, tone="plain"):
        return f"{company} ({tone}): {text}"
'''


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "targets.py").write_text(TARGETS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.usefixtures("work")
def test_the_fake_model_answers_a_structural_output_agent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(capsys, "run", "targets.py:plain", "--model", "fake", "Paris")
    assert status == 0, err
    answer = json.loads(out)
    assert answer["place"]["name"].startswith(MARKER)  # a nested model, through its $ref
    assert answer["degrees"] == 1
    assert answer["sky"] == "clear"


@pytest.mark.usefixtures("work")
@pytest.mark.parametrize("stream", [[], ["--stream"]])
def test_the_fake_model_runs_tools_then_answers_structurally(
    capsys: pytest.CaptureFixture[str], stream: list[str]
) -> None:
    status, out, err = run(
        capsys,
        "run",
        "targets.py:with_tools",
        "--model",
        "fake",
        "--var",
        "company=Acme",
        *stream,
        "Paris",
    )
    assert status == 0, err
    assert ("-> weather(" in out) if stream else ("1 tool call" in err)
    assert '"degrees": 1' in out


@pytest.mark.usefixtures("work")
def test_var_fills_the_agents_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys,
        "run",
        "targets.py:with_tools",
        "--model",
        "fake",
        "--var",
        "company=Acme Inc",
        "--json",
        "Paris",
    )
    assert status == 0, err
    system = json.loads(out)["steps"][0]["request"][0]
    assert system == {**system, "role": "system", "content": "You forecast for Acme Inc."}


@pytest.mark.usefixtures("work")
def test_without_var_the_missing_variable_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "run", "targets.py:with_tools", "--model", "fake", "Paris")
    assert status == 2
    assert "company" in err


@pytest.mark.usefixtures("work")
def test_var_reaches_a_plain_modules_forward(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["targets.py:Greeter", "--var", "company=Acme", "--var", "tone=a=b"]
    status, out, err = run(capsys, "run", *argv, "hi")
    assert (status, out) == (0, "Acme (a=b): hi\n"), err


@pytest.mark.usefixtures("work")
def test_var_fills_every_chat_turn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("hi\nagain\n"))
    status, out, err = run(capsys, "chat", "targets.py:Greeter", "--var", "company=Acme")
    assert (status, out) == (0, "Acme (plain): hi\nAcme (plain): again\n"), err


@pytest.mark.usefixtures("work")
@pytest.mark.parametrize(
    ("var", "expected"),
    [
        ("company", "give NAME=VALUE"),
        ("=Acme", "give NAME=VALUE"),
        ("two words=x", "give NAME=VALUE"),
        ("deps=x", "an argument of the run"),
    ],
)
def test_a_malformed_var_is_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], var: str, expected: str
) -> None:
    status, out, err = run(capsys, "run", "targets.py:Greeter", "--var", var, "hi")
    assert status == 2 and out == ""
    assert err.startswith("promptimus: error: --var") and expected in err


@pytest.mark.usefixtures("work")
def test_a_var_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["targets.py:Greeter", "--var", "company=A", "--var", "company=B", "hi"]
    status, _, err = run(capsys, "run", *argv)
    assert status == 2 and "given twice" in err
