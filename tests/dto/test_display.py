"""Results a person can read: `str(message)` is its text, `Usage` and `RunRecord` print short
summaries (the full data one attribute away) and render as escaped HTML tables in Jupyter."""

from __future__ import annotations

from promptimus.dto import (
    Message,
    RunRecord,
    StepRecord,
    ToolCallRecord,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.dto.display import clip, html_table, short_text


def reply(text: str, **usage: int) -> Message:
    return Message(role="assistant", content=text, usage=Usage(**usage), model_name="m")


def test_str_of_a_message_is_its_text_and_repr_keeps_the_fields() -> None:
    message = reply("Paris is the capital.", prompt_tokens=3, completion_tokens=4, total_tokens=7)
    assert str(message) == "Paris is the capital."
    assert f"{message}" == "Paris is the capital."
    assert "role=" in repr(message) and "model_name='m'" in repr(message)
    assert str(Message(role="user", content="")) == ""


def test_usage_prints_as_a_sentence_and_reprs_its_nonzero_counts() -> None:
    usage = Usage(prompt_tokens=6, completion_tokens=3, total_tokens=9, reasoning_tokens=2)
    assert str(usage) == "9 tokens (6 in, 3 out, 2 reasoning)"
    assert repr(usage) == (
        "Usage(prompt_tokens=6, completion_tokens=3, total_tokens=9, reasoning_tokens=2)"
    )
    assert repr(Usage()) == "Usage(total_tokens=0)"
    assert str(Usage(cache_hit=True)) == "cache hit (no tokens)"
    assert usage.model_dump()["cached_tokens"] == 0  # the data is whole
    page = usage._repr_html_()
    assert "<table>" in page and "<td>reasoning_tokens</td><td>2</td>" in page


def record(error: str | None = None) -> RunRecord:
    call = ToolCallRecord(
        id="call_1", name="get_weather", arguments='{"city": "<Paris>"}', result="18 degrees",
        error=error,
    )  # fmt: skip
    ask = Message(
        role="assistant",
        tool_calls=[ToolRequest(id="call_1", function=ToolFunction(name="get_weather"))],
    )
    steps = [
        StepRecord(0, [], ask, [call], Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7)),
        StepRecord(1, [], reply("18 degrees & rain"), [], Usage(prompt_tokens=8, total_tokens=8)),
    ]
    return RunRecord(steps, output=reply("18 degrees & rain"))


def test_a_run_record_prints_a_summary_and_each_tool_call() -> None:
    run = record()
    assert repr(run) == (
        "<RunRecord: 2 steps, 1 tool call, 15 tokens (13 in, 2 out); output '18 degrees & rain'>"
    )
    assert str(run).splitlines() == [
        "RunRecord: 2 steps, 1 tool call, 15 tokens (13 in, 2 out)",
        '  step 0: get_weather({"city": "<Paris>"})',
        "    -> 18 degrees",
        "  output: 18 degrees & rain",
    ]
    assert "1 failed" in str(record(error="boom")) and "failed: boom" in str(record(error="boom"))
    assert len(run.steps) == 2 and run.to_dict()["steps"][0]["tool_calls"][0]["result"]


def test_a_step_prints_on_one_line() -> None:
    first, answer = record().steps
    assert repr(first) == (
        "<StepRecord 0: 0 messages sent, 1 tool call (get_weather), 7 tokens; reply '[calls "
        "get_weather]'>"
    )
    assert repr(answer) == (
        "<StepRecord 1: 0 messages sent, 0 tool calls, 8 tokens; reply '18 degrees & rain'>"
    )
    assert first.request == [] and first.tool_calls[0].result == "18 degrees"


def test_a_run_record_renders_an_escaped_table() -> None:
    page = record()._repr_html_()
    assert "<td>get_weather</td>" in page and "<td>(answer)</td>" in page
    assert "18 degrees &amp; rain" in page and "& rain" not in page
    assert "<Paris>" not in page


def test_the_helpers_cut_and_escape() -> None:
    assert clip("a  b\nc") == "a b c"
    assert clip("x" * 100, 10) == "x" * 9 + "…"
    assert short_text(Message(role="assistant", tool_calls=[])) == ""
    ask = Message(role="assistant", tool_calls=[ToolRequest(function=ToolFunction(name="f"))])
    assert short_text(ask) == "[calls f]"
    assert short_text({"a": 1}) == '{"a": 1}' and short_text(None) == ""
    page = html_table("<b>t</b>", ["<h>"], [["<script>x</script>"]])
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;h&gt;" in page
