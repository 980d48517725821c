"""`Reflective(merge=True)`: two front candidates that each fixed a different module are merged
(each changed parameter from the candidate that changed it), scored on validation, kept when
better and reverted when worse; the history names the parents and what came from which, and a
resumed run rebuilds the merge.

The program: `a` answers first, then `b`, shown `a`'s answer. The deterministic student reads
each stage's system prompt: `a` answers x-words right only with "fixA" (marking them "ok*"),
and that breaks z-words; `b` answers y-words right only with "fixB", and its strict variant
refuses an answer `a` marked. The scripted teacher proposes "fixA" for `a` and "fixB" (or the
strict variant) for `b`. Step 1 fixes `a` (from the baseline), step 2 fixes `b` from the
baseline again (seed 1 draws the baseline from the front), so the two fixes live in sibling
candidates, and step 3 merges them."""

from __future__ import annotations

import json
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


async def test_a_merge_that_combines_two_modules_fixes_is_kept(tmp_path: Path) -> None:
    program, result = await train(B1, BUDGET, tmp_path)
    _, fixed_a, fixed_b, merged = result.history
    # the two fixes were found from the baseline, each on its own module
    assert (fixed_a["parent"], fixed_a["path"], fixed_a["val_score"]) == (0, "a.prompt", 2 / 6)
    assert (fixed_b["parent"], fixed_b["path"], fixed_b["val_score"]) == (0, "b.prompt", 4 / 6)
    assert merged["merge"] == {
        "parents": [2, 1],
        "ancestor": 0,
        "took": {"a.prompt": 1, "b.prompt": 2},
    }
    assert merged["candidate"] == 3 and merged["parent"] == 2
    assert merged["changes"] == {"a.prompt": A1}
    assert merged["accepted"] and merged["reason"] == "beats best"
    assert merged["val_score"] == 5 / 6 and result.best_score == 5 / 6
    assert (program.a.prompt.value, program.b.prompt.value) == (A1, B1)
    assert result.best_values == {"a.prompt": A1, "b.prompt": B1}
    assert result.calls == BUDGET
    saved = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert saved[-1]["merge"] == merged["merge"]


async def test_a_merge_that_does_worse_is_reverted() -> None:
    program, result = await train(B_STRICT, BUDGET)
    merged = result.history[-1]
    assert merged["merge"]["took"] == {"a.prompt": 1, "b.prompt": 2}
    assert merged["val_score"] == 3 / 6 and not merged["accepted"]
    assert merged["reason"] == "merge not better on validation: 0.5 <= best 0.666667"
    # the module holds the best candidate (the `b` fix alone), not the merge
    assert result.best_score == 4 / 6
    assert (program.a.prompt.value, program.b.prompt.value) == (A0, B_STRICT)


async def test_a_resumed_run_rebuilds_the_merge_and_does_not_try_it_again(tmp_path: Path) -> None:
    await train(B1, BUDGET, tmp_path)
    # nothing left to spend: the module ends holding the merge, rebuilt from the history
    program, result = await train(B1, BUDGET, tmp_path, resume=True)
    assert result.calls == BUDGET and "merge" in result.history[-1]
    assert (program.a.prompt.value, program.b.prompt.value) == (A1, B1)
    _, longer = await train(B1, BUDGET + 6 + 18, tmp_path, resume=True)
    later = longer.history[4:]
    assert later and all(entry.get("merge", {}).get("parents") != [2, 1] for entry in later)
