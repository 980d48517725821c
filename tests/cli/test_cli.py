"""The `promptimus` command line, driven in subprocesses as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import promptimus as pm
from promptimus.modules import Prompt

SCRIPT = Path(sys.executable).parent / "promptimus"

TARGETS = '''
import promptimus as pm
from promptimus.modules import OpenaiToolCallingAgent, Tool


@Tool.decorate
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


agent = OpenaiToolCallingAgent("You are terse.", [add])


class Echo(pm.Module):
    """Answers with its prefix and the request: shows which checkpoint was applied."""

    def __init__(self):
        super().__init__()
        self.prefix = pm.Parameter("plain")

    async def forward(self, text):
        return f"{self.prefix.value}: {text}"


def make_echo():
    return Echo()


def broken_factory():
    raise ValueError("the factory needs a config file")


class Crashing(pm.Module):
    async def forward(self, text):
        raise RuntimeError("forward exploded")


not_a_module = 42
'''


def promptimus(
    *args: str, cwd: Path, stdin: str = "", console_script: bool = False, **env: str
) -> subprocess.CompletedProcess[str]:
    command = [str(SCRIPT)] if console_script else [sys.executable, "-m", "promptimus"]
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.pop("NO_COLOR", None)
    environ.update(env)
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )


def fails(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("promptimus: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for text in expected:
        assert text in result.stderr


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "targets.py").write_text(TARGETS)
    return tmp_path


class Tree(pm.Module):
    async def forward(self) -> None:
        return None


def save_prompt(path: Path, text: str) -> Prompt:
    prompt = Prompt(text)
    prompt.save(path)
    return prompt


# ------------------------------------------------------------------------------------ show


def test_show_prints_the_tree_the_prompts_as_text_and_the_digest(work: Path) -> None:
    agent = Tree()
    agent.planner = Prompt("Plan the work.\nThen list the steps.\n  Indented line.")
    agent.planner.temperature = pm.Parameter(0.25)
    agent.name = pm.Parameter('say "hi"')
    agent.save(work / "agent.toml")

    for console_script in (False, True):
        result = promptimus("show", "agent.toml", cwd=work, console_script=console_script)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"agent.toml  digest {agent.digest()}"
        assert '  name = "say \\"hi\\""' in lines
        assert "  planner" in lines
        assert "      │ Then list the steps." in lines
        assert "      │   Indented line." in lines
        assert "    temperature = 0.25" in lines
        assert "\033[" not in result.stdout  # not a terminal: no colour


def test_show_folds_a_long_prompt_unless_full(work: Path) -> None:
    text = "\n".join(f"rule {i}" for i in range(40))
    save_prompt(work / "long.toml", text)
    folded = promptimus("show", "long.toml", cwd=work)
    assert folded.returncode == 0, folded.stderr
    assert "rule 11" in folded.stdout and "rule 12" not in folded.stdout
    assert "28 more lines" in folded.stdout
    full = promptimus("show", "--full", "long.toml", cwd=work)
    assert "rule 39" in full.stdout and "more lines" not in full.stdout


def test_show_resolves_file_references_without_the_module_class(work: Path) -> None:
    (work / "system.txt").write_text("From a file.\nSecond line.\n")
    (work / "ref.toml").write_text('prompt = "${file:system.txt}"\nrole = "system"\n')
    result = promptimus("show", "ref.toml", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "│ From a file." in result.stdout and "│ Second line." in result.stdout
    assert Prompt("x").load(work / "ref.toml").digest() in result.stdout


def test_show_reports_a_missing_file_and_a_malformed_checkpoint_with_its_line(work: Path) -> None:
    fails(promptimus("show", "nowhere.toml", cwd=work), "nowhere.toml: no such file")
    (work / "bad.toml").write_text('prompt = """\nok\n"""\nrole = = "x"\n')
    fails(promptimus("show", "bad.toml", cwd=work), "bad.toml is not valid TOML", "line 4")


# ------------------------------------------------------------------------------------ diff


def test_diff_exits_0_for_equal_checkpoints(work: Path) -> None:
    save_prompt(work / "a.toml", "Same.\nText.")
    save_prompt(work / "b.toml", "Same.\nText.")
    result = promptimus("diff", "a.toml", "b.toml", cwd=work, console_script=True)
    assert result.returncode == 0, result.stderr
    assert "same parameters" in result.stdout


def test_diff_lists_added_removed_changed_with_a_unified_diff(work: Path) -> None:
    before = Tree()
    before.system = Prompt("Be brief.\nAnswer in English.")
    before.old = pm.Parameter(1)
    before.limit = pm.Parameter(3)
    before.save(work / "a.toml")
    after = Tree()
    after.system = Prompt("Be brief.\nAnswer in French.\nCite sources.")
    after.limit = pm.Parameter(5)
    after.new = pm.Parameter([1, 2])
    after.save(work / "b.toml")

    result = promptimus("diff", "a.toml", "b.toml", cwd=work)
    assert result.returncode == 1, result.stderr
    out = result.stdout.splitlines()
    assert "- removed old = 1" in out
    assert "+ added   new = [1, 2]" in out
    assert "~ changed limit: 3 -> 5" in out
    assert "~ changed system.prompt" in out
    assert "    -Answer in English." in out
    assert "    +Answer in French." in out
    assert "    +Cite sources." in out
    assert "     Be brief." in out
    assert "system.role" not in result.stdout  # unchanged parameters are not listed


def test_diff_reports_bad_inputs(work: Path) -> None:
    save_prompt(work / "a.toml", "x")
    fails(promptimus("diff", "a.toml", "gone.toml", cwd=work), "gone.toml: no such file")
    (work / "bad.toml").write_text("[unclosed\n")
    fails(promptimus("diff", "a.toml", "bad.toml", cwd=work), "line 1")


# ------------------------------------------------------------------------------------- run


def test_run_with_the_fake_model_answers_offline(work: Path) -> None:
    for console_script in (False, True):
        result = promptimus(
            "run", "targets.py:agent", "--model", "fake", "Hello there",
            cwd=work, console_script=console_script,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("[OFFLINE fake model] You said: 'Hello there'.")
        # the run's summary, as `print(result)` shows it, goes to stderr: stdout stays the answer
        assert result.stderr.startswith("[completed: 2 steps, 1 tool call, "), result.stderr
        assert result.stderr.count("\n") == 1 and " tokens (" in result.stderr


def test_run_applies_the_checkpoint_to_a_class_or_factory(work: Path) -> None:
    (work / "echo.toml").write_text('prefix = """\nloaded\n"""\n')
    for target in ("targets.py:Echo", "targets.py:make_echo"):
        plain = promptimus("run", target, "hi", cwd=work)
        assert plain.stdout == "plain: hi\n", plain.stderr
        loaded = promptimus("run", target, "--load", "echo.toml", "hi", cwd=work)
        assert loaded.stdout == "loaded: hi\n", loaded.stderr
    from_stdin = promptimus("run", "targets.py:Echo", "-", cwd=work, stdin="piped text")
    assert from_stdin.stdout == "plain: piped text\n"


def test_run_stream_prints_the_answer_as_it_arrives(work: Path) -> None:
    result = promptimus(
        "run", "targets.py:agent", "--model", "fake", "--stream", "streamed please", cwd=work
    )
    assert result.returncode == 0, result.stderr
    called, answered = result.stdout.split("<- add: 2\n")
    assert called.startswith("[OFFLINE fake model] Calling the tool 'add'")
    assert '-> add({"a": 1, "b": 1})' in called
    assert answered.startswith("[OFFLINE fake model] You said: 'streamed please'.")
    # a module without events still answers, and says why it did not stream
    plain = promptimus("run", "targets.py:Echo", "--stream", "x", cwd=work)
    assert plain.stdout == "plain: x\n"
    assert "no event stream" in plain.stderr


def test_run_json_prints_the_run_record(work: Path) -> None:
    result = promptimus("run", "targets.py:agent", "--model", "fake", "--json", "hi", cwd=work)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["output"]["content"].startswith("[OFFLINE fake model]")
    assert len(record["steps"]) == 2  # the fake model calls the agent's tool, then answers
    assert [call["name"] for call in record["steps"][0]["tool_calls"]] == ["add"]
    assert record["steps"][0]["request"][-1] == {"role": "user", "content": "hi"} | {
        k: v for k, v in record["steps"][0]["request"][-1].items() if k not in ("role", "content")
    }
    assert record["usage"]["total_tokens"] > 0


def test_run_reports_each_bad_input_without_a_traceback(work: Path) -> None:
    (work / "bad.toml").write_text('prefix = """\nx\n"""\nprefix2 = \n')

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return promptimus("run", *args, "hi", cwd=work, **env)

    fails(run("missing.py:agent"), "missing.py: no such file")
    fails(run("targets.py"), "path/to/file.py:object")
    fails(run("targets.py:nothing"), "defines no 'nothing'")
    fails(run("targets.py:not_a_module"), "not a promptimus Module (it is a int)")
    fails(run("targets.py:broken_factory"), "broken_factory() from targets.py failed",
          "ValueError: the factory needs a config file")  # fmt: skip
    fails(run("targets.py:Echo", "--load", "nope.toml"), "nope.toml: no such file")
    fails(run("targets.py:Echo", "--load", "bad.toml"), "not valid TOML", "line 4")
    (work / "other.toml").write_text("unknown_key = 1\n")
    fails(run("targets.py:Echo", "--load", "other.toml"), "unknown_key")
    fails(
        run("targets.py:agent", "--model", "nosuch:model"),
        "Unknown provider 'nosuch'",
        "--model fake",
    )
    fails(run("targets.py:agent", "--model", "openai:gpt-4o-mini"), "OPENAI_API_KEY")
    fails(run("targets.py:agent"), "needs an LLM", "pass --model MODEL", "--model fake")
    fails(run("targets.py:Crashing"), "the run failed: RuntimeError: forward exploded")
    (work / "syntax.py").write_text("def broken(:\n")
    fails(run("syntax.py:x"), "Importing syntax.py failed: SyntaxError")


# ------------------------------------------------------------------------------------ chat


def test_chat_keeps_memory_resets_saves_and_exits(work: Path) -> None:
    turns = "first\nsecond\n/reset\nthird\n/save saved.toml\n/undo\n/exit\nnever answered\n"
    result = promptimus("chat", "targets.py:agent", "--model", "fake", cwd=work, stdin=turns)
    assert result.returncode == 0, result.stderr
    answers = [line for line in result.stdout.splitlines() if line.startswith("[OFFLINE")]
    # system + user + the tool call and its result, then the first exchange (4 messages)
    # remembered, then a fresh conversation
    answers = [a for a in answers if "You said" in a]
    assert [a.split("I saw ")[1].split(" ")[0] for a in answers] == ["4", "8", "4"]
    assert "'third'" in answers[2] and "never answered" not in result.stdout
    assert "(memory cleared)" in result.stdout
    assert "unknown command /undo" in result.stderr and "/undo" not in result.stdout
    saved = work / "saved.toml"
    assert saved.exists()
    shown = promptimus("show", "saved.toml", cwd=work)
    assert 'prompt = "You are terse."' in shown.stdout
    digest = shown.stdout.splitlines()[0].split("digest ")[1]
    assert f"digest {digest})" in result.stdout  # the digest /save reported


def test_chat_ends_at_end_of_input_and_reports_bad_input(work: Path) -> None:
    result = promptimus("chat", "targets.py:Echo", cwd=work, stdin="one\ntwo", console_script=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "plain: one\nplain: two\n"
    fails(promptimus("chat", "targets.py:not_a_module", cwd=work), "not a promptimus Module")
    fails(
        promptimus("chat", "targets.py:agent", "--model", "openai:x", cwd=work, stdin="hi\n"),
        "OPENAI_API_KEY",
    )


# ---------------------------------------------------------------------------------- colour


def _on_a_terminal(work: Path, **env: str) -> str:
    import pty

    save_prompt(work / "a.toml", "x")
    primary, secondary = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | env
    try:
        process = subprocess.run(
            [sys.executable, "-m", "promptimus", "show", "a.toml"],
            cwd=work, stdout=secondary, stderr=subprocess.PIPE, timeout=120, env=environ,
        )  # fmt: skip
        assert process.returncode == 0, process.stderr
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(primary)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_colour_only_on_a_terminal_and_never_with_no_color(work: Path) -> None:
    assert "\033[" in _on_a_terminal(work)
    plain = _on_a_terminal(work, NO_COLOR="1")
    assert "\033[" not in plain and "digest" in plain


def test_usage_errors_exit_2(work: Path) -> None:
    result = promptimus(cwd=work)
    assert result.returncode == 2 and "usage: promptimus" in result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------ closed streams, one-line errors


def with_closed(redirect: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command run by a shell with `redirect` (`<&-`, `>&-`, `2>&-`): that descriptor is
    closed when promptimus starts, not redirected to /dev/null."""
    return subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m", "promptimus", *args],
        cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def fails_in_one_line(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    fails(result, *expected)
    assert len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["chat", "targets.py:agent", "--model", "fake"],
        ["run", "targets.py:agent", "--model", "fake", "-"],
    ],
    ids=["chat", "run -"],
)
def test_a_closed_stdin_is_named_in_one_line(work: Path, args: list[str]) -> None:
    fails_in_one_line(with_closed("<&-", *args, cwd=work), "stdin is closed")


@pytest.mark.parametrize(
    "args",
    [
        ["run", "targets.py:agent", "--model", "fake", "hi"],
        ["run", "targets.py:Echo", "--json", "hi"],
        ["chat", "targets.py:Echo"],
        ["show", "a.toml"],
        ["diff", "a.toml", "a.toml"],
    ],
    ids=["run", "run --json", "chat", "show", "diff"],
)
def test_a_closed_stdout_is_named_in_one_line_before_anything_runs(
    work: Path, args: list[str]
) -> None:
    save_prompt(work / "a.toml", "x")
    (work / "targets.py").write_text(
        TARGETS + "\nimport pathlib\npathlib.Path('imported').touch()\n"
    )
    fails_in_one_line(with_closed(">&-", *args, cwd=work), "stdout is closed")
    assert not (work / "imported").exists() or args[0] in ("show", "diff")


def test_with_stderr_closed_an_error_still_exits_2_and_never_lands_on_stdout(work: Path) -> None:
    result = with_closed("2>&-", "run", "missing.py:agent", "hi", cwd=work)
    assert result.returncode == 2 and result.stdout == ""


def test_a_mismatched_checkpoint_is_one_error_line(work: Path) -> None:
    (work / "other.toml").write_text("unknown_key = 1\nother = 2\n")
    result = promptimus("run", "targets.py:Echo", "--load", "other.toml", "hi", cwd=work)
    fails_in_one_line(result, "unknown keys", "root.unknown_key, root.other", "missing keys")


def test_a_multi_line_failure_of_the_users_module_is_one_error_line(work: Path) -> None:
    (work / "multi.py").write_text(
        "import promptimus as pm\n\n"
        "class Multi(pm.Module):\n"
        "    async def forward(self, text):\n"
        "        raise RuntimeError('first line\\nsecond line')\n"
    )
    fails_in_one_line(
        promptimus("run", "multi.py:Multi", "hi", cwd=work), "first line", "second line"
    )


def test_a_folder_before_the_colon_is_named_a_folder(work: Path) -> None:
    (work / "adir").mkdir()
    fails_in_one_line(
        promptimus("run", "adir:obj", "hi", cwd=work), "adir is a folder", "file.py:object"
    )


# --------------------------------------------------------------- the flags in the hints, tools


REACT_TARGET = """
from promptimus.agents import ToolCallingAgent


def shout(text: str, times: int = 2) -> str:
    \"\"\"Repeat the text in capitals.\"\"\"
    return text.upper() * times


agent = ToolCallingAgent("You shout.", [shout])
"""


def test_the_fake_model_calls_the_modules_tools_in_both_protocols(work: Path) -> None:
    (work / "react.py").write_text(REACT_TARGET)
    native = promptimus("run", "targets.py:agent", "--model", "fake", "--json", "hi", cwd=work)
    react = promptimus("run", "react.py:agent", "--model", "fake", "--json", "hey", cwd=work)
    for result, name, arguments, returned in (
        (native, "add", {"a": 1, "b": 1}, "2"),
        (react, "shout", {"text": "hey"}, "HEYHEY"),
    ):
        assert result.returncode == 0, result.stderr
        record = json.loads(result.stdout)
        calls = record["steps"][0]["tool_calls"]
        assert [(c["name"], json.loads(c["arguments"]), c["result"]) for c in calls] == [
            (name, arguments, returned)
        ]
        assert record["output"]["content"].startswith("[OFFLINE fake model]")
        assert record["output"]["content"].endswith(f"The tool returned: {returned}")


def test_hints_name_the_command_lines_flags_not_python_calls(work: Path) -> None:
    (work / "other.toml").write_text('unknown_key = 1\nprefix = """\nloaded\n"""\n')
    mismatch = promptimus("run", "targets.py:Echo", "--load", "other.toml", "hi", cwd=work)
    fails(mismatch, "unknown keys", "Pass --partial to load the matching keys")
    no_model = promptimus("run", "targets.py:agent", "hi", cwd=work)
    fails(no_model, "pass --model MODEL")
    in_chat = promptimus("chat", "targets.py:agent", cwd=work, stdin="hi\nagain\n")
    fails(in_chat, "pass --model MODEL")
    for result in (mismatch, no_model, in_chat):
        assert "strict=False" not in result.stderr and ".with_llm" not in result.stderr
    partial = promptimus(
        "run", "targets.py:Echo", "--load", "other.toml", "--partial", "hi", cwd=work
    )
    assert (partial.returncode, partial.stdout) == (0, "loaded: hi\n"), partial.stderr
