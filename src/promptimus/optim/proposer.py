"""What a proposer is asked (`ProposalRequest`) and the default proposer, a teacher LLM."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import Module, Parameter
from ..dto import Message, MessageRole
from ..prompts.template import format_template


@dataclass(frozen=True)
class ProposalRequest:
    """`path`: the parameter's path (relative to the trained module); `current`: its value;
    `rows`: evaluation rows it did worst on (inputs, expected, output, score, feedback, error);
    `traces`: for each row, the calls of the module that owns the parameter within that row's
    run (each call's path, inputs and output), trimmed to a token budget ("" when unknown)."""

    path: str
    current: str
    rows: list[Any]
    traces: list[str] = field(default_factory=list)


ProposeFn = Callable[[ProposalRequest], Awaitable[str] | str]

DEFAULT_META_PROMPT = """\
You improve one instruction of a program that calls a language model.
The instruction is the parameter `{path}`. Its current text:

```
{current}
```

With it, the program did badly on these examples (worst first):

{rows}

Write an improved text for `{path}` that fixes these failures and keeps what works. Infer the \
rules the expected outputs and the feedback reveal, and state them plainly. Keep every \
placeholder in curly braces exactly as it is, and add none. Reply with the new text only, \
inside one fenced code block."""

_FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n(.*?)\n?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def extract_value(reply: str) -> str:
    """The content of the reply's first fenced code block, or the whole reply if it has none."""
    match = _FENCE.search(reply)
    return match.group(2) if match else reply.strip()


def _output_text(output: Any) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    content = getattr(output, "content", None)
    if isinstance(content, str):
        return content
    dump = getattr(output, "model_dump_json", None)
    return dump() if callable(dump) else str(output)


def format_rows(rows: list[Any], traces: list[str] | None = None) -> str:
    blocks = []
    traces = traces or []
    for number, row in enumerate(rows, 1):
        lines = [f"Example {number}:", f"  inputs: {getattr(row, 'inputs', {})!r}"]
        error = getattr(row, "error", None)
        if error:
            lines.append(f"  error: {error}")
        else:
            lines.append(f"  output: {_output_text(getattr(row, 'output', None))!r}")
        lines.append(f"  expected: {getattr(row, 'expected', None)!r}")
        lines.append(f"  score: {getattr(row, 'score', 0.0)}")
        feedback = getattr(row, "feedback", "")
        if feedback:
            lines.append(f"  feedback: {feedback}")
        trace = traces[number - 1] if number <= len(traces) else ""
        if trace:
            lines.append("  calls inside the run:")
            lines.extend(f"    {line}" for line in trace.splitlines())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or "(none)"


class TeacherProposer(Module):
    """Asks its LLM (the teacher) for a better value. The meta-prompt is a `Parameter`, so it
    is checkpointed with the proposer and could be trained in turn."""

    def __init__(self, meta_prompt: str = DEFAULT_META_PROMPT) -> None:
        super().__init__()
        self.meta_prompt = Parameter(meta_prompt)
        self._last_usage: Any = None

    async def forward(self, request: ProposalRequest) -> str:
        text = format_template(
            self.meta_prompt.value,
            {
                "path": request.path,
                "current": request.current,
                "rows": format_rows(request.rows, request.traces),
            },
            where=f"TeacherProposer {self.path!r}",
        )
        reply = await self.llm.achat([Message(role=MessageRole.USER, content=text)])
        self._last_usage = reply.usage
        return extract_value(reply.content)
