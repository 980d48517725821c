"""`LLMJudge`: a metric that asks an LLM to grade an output against a rubric.

    judge = LLMJudge("Full marks only if the answer names the city and the country.")
    judge.with_llm(llm)
    report = await evaluate(agent, data, judge)

The rubric is a `Parameter` (saved in checkpoints, trainable like any prompt); the judge's
instructions are its `verdict.predictor.prompt`. The model answers with JSON
`{"score": 0..1, "feedback": "..."}`, validated (and sent back once more with the errors when it
does not fit) by `StructuralOutput`; the judge returns a `Score` with that feedback.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..core import Module, Parameter
from ..modules.structural import StructuralOutput
from .example import Example
from .output_text import output_text
from .score import Score

__all__ = ["LLMJudge", "Verdict"]

DEFAULT_RUBRIC = (
    "Score 1 when the output answers the request correctly and completely (agreeing with the "
    "expected answer when one is given), 0 when it is wrong or missing, and in between for a "
    "partly correct answer."
)

JUDGE_INSTRUCTIONS = (
    "You grade the output of an AI system. Follow this rubric:\n{rubric}\n\n"
    'Reply with one JSON object: {{"score": <a number from 0 to 1>, "feedback": "<one or two '
    'sentences: what is wrong or missing, and what would make it right>"}}.'
)


class Verdict(BaseModel):
    score: float = Field(ge=0.0, le=1.0)
    feedback: str = ""


def _block(label: str, value: Any) -> str:
    return f"## {label}\n{output_text(value)}"


class LLMJudge(Module):
    """A metric module: `await judge(example, output) -> Score`."""

    def __init__(
        self,
        rubric: str = DEFAULT_RUBRIC,
        *,
        instructions: str = JUDGE_INSTRUCTIONS,
        n_retries: int = 1,
        native: bool = True,
    ) -> None:
        super().__init__()
        self.rubric = Parameter(rubric)
        self.verdict = StructuralOutput(
            Verdict, n_retries=n_retries, system_prompt=instructions, native=native
        )

    def request(self, example: Example, output: Any) -> str:
        """The message the judge sends: the inputs, the expected answer (if any), the output."""
        inputs = "\n".join(f"{key}: {output_text(value)}" for key, value in example.inputs.items())
        parts = [_block("Inputs", inputs)]
        if example.expected is not None:
            parts.append(_block("Expected", example.expected))
        parts.append(_block("Output", output))
        return "\n\n".join(parts)

    async def forward(self, example: Example, output: Any) -> Score:
        verdict = await self.verdict(self.request(example, output), rubric=self.rubric.value)
        return Score(verdict.score, verdict.feedback)
