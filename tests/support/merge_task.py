"""The merge task of the optimizer and command-line tests.

The program: `a` answers first, then `b`, shown `a`'s answer. The deterministic student reads
each stage's system prompt: `a` answers x-words right only with "fixA" (marking them "ok*"),
and that breaks z-words; `b` answers y-words right only with "fixB", and its strict variant
refuses an answer `a` marked. The scripted teacher proposes "fixA" for `a` and "fixB" (or the
strict variant) for `b`. Step 1 fixes `a` (from the baseline), step 2 fixes `b` from the
baseline again (seed 1 draws the baseline from the front), so the two fixes live in sibling
candidates, and step 3 merges them: with "fixB" the merge scores 5/6 (kept), with the strict
variant 3/6 (reverted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promptimus import Module
from promptimus.dto import Message
from promptimus.evals import Example, Score
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt
from promptimus.optim import ProposalRequest, Reflective, TrainResult, fit

A0, A1 = "A: {text}", "A fixA: {text}"
B0, B1, B_STRICT = (
    "B: {before} / {text}",
    "B fixB: {before} / {text}",
    "B fixB-strict: {before} / {text}",
)
WORDS = ["x1", "x2", "y1", "y2", "y3", "z1"]
SEED = 1


def student(history: list[Message], kwargs: dict[str, Any]) -> str:
    system = history[0].content
    if system.startswith("A"):
        word = system.rsplit(":", 1)[-1].strip()
        fixed = "fixA" in system
        if word.startswith("x"):
            return "ok*" if fixed else "bad"
        if word.startswith("z"):
            return "bad" if fixed else "ok"
        return "ok"
    before, word = (part.strip() for part in system.split(":", 1)[1].split("/"))
    if "fixB-strict" in system and before == "ok*":
        return "bad"
    if word.startswith("y"):
        return "ok" if "fixB" in system else "bad"
    return "ok"


class Duo(Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = Prompt(A0)
        self.b = Prompt(B0)
        self.with_llm(ScriptedLLM(student, model_name="student"))

    async def forward(self, text: str) -> str:
        first = await self.a(text=text)
        second = await self.b(text=text, before=first.content)
        return f"{first.content}|{second.content}"


def metric(example: Example, output: str) -> Score:
    if output in ("ok|ok", "ok*|ok"):
        return Score(1.0)
    return Score(0.0, f"got {output!r}; both stages must answer ok")


def teacher(b_fix: str) -> Any:
    def propose(request: ProposalRequest) -> str:
        return A1 if request.path == "a.prompt" else b_fix

    return propose


async def train(
    b_fix: str, budget: int, folder: Path | None = None, **kw: Any
) -> tuple[Duo, TrainResult]:
    program = Duo()
    data = [Example({"text": word}, "ok") for word in WORDS]
    optimizer = Reflective(propose=teacher(b_fix), minibatch_size=6, seed=SEED, merge=True)
    result = await fit(
        program,
        data,
        metric,
        optimizer=optimizer,
        budget=budget,
        checkpoint_dir=folder,
        progress=False,
        **kw,
    )
    return program, result


# the baseline (6), two proposal steps (6 + 6 + 6 each), one merge (6)
BUDGET = 6 + 2 * 18 + 6
