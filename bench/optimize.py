"""Prompt training on a generated task: baseline vs `fit(Reflective)` on held-out test examples.

    uv run python bench/optimize.py                    # offline, on the fake OpenAI server
    uv run python bench/optimize.py --model ollama:llama3.2:3b [--teacher openai:gpt-4o-mini]

The task (generated here, no download): label a support ticket BILLING, BUG or ACCOUNT and answer
exactly `LABEL: <CATEGORY>`. The starting prompt states neither the answer format nor two
labelling rules (refund requests are BILLING, slowness is BUG); only the metric's feedback — the
expected answer next to the one given — reveals them. Split into train / val / test.

Offline, the fake server plays both models: the student follows its system prompt literally (it
answers in the format, and applies a rule, only when the prompt states it); the teacher adds to
the prompt the rules it can infer from the failing rows it is shown. Printed: baseline and
optimized test scores, module calls spent by evaluation (the budget), tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
from typing import Any

from promptimus import Module
from promptimus.evals import Example, Score, evaluate
from promptimus.modules.prompt import Prompt
from promptimus.optim import Reflective, fit

START = "Classify this support ticket as billing, bug or account.\nTicket: {ticket}"

SUBJECTS = {
    "BILLING": ["my invoice is wrong", "I was charged twice", "the charge on my card is odd"],
    "BUG": ["the app crashes on start", "I get an error when saving", "the export is broken"],
    "ACCOUNT": ["I forgot my password", "I cannot login", "please change my email"],
}
HIDDEN = {  # what only the feedback reveals
    "BILLING": ["I want a refund for last month", "refund my order please"],
    "BUG": ["the dashboard is very slow", "search is slow since Monday"],
}


def make_task(n: int, seed: int) -> list[Example]:
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        pool = HIDDEN if i % 2 else SUBJECTS
        label = rng.choice(sorted(pool))
        text = f"{rng.choice(pool[label])} (ticket #{1000 + i})"
        examples.append(Example({"ticket": text}, expected=f"LABEL: {label}"))
    rng.shuffle(examples)
    return examples


def metric(example: Example, output: Any) -> Score:
    text = str(getattr(output, "content", output)).strip()
    if text == example.expected:
        return Score(1.0)
    return Score(0.0, f"expected {example.expected!r}, got {text!r}")


class Triage(Module):
    def __init__(self) -> None:
        super().__init__()
        self.classify = Prompt(START)

    async def forward(self, ticket: str) -> Any:
        return await self.classify(ticket=ticket)


# --- the offline models ----------------------------------------------------------------------

FORMAT_RULE = "Answer exactly 'LABEL: <CATEGORY>', the category in capitals."
RULES = {
    "refund": "Refund requests are BILLING.",
    "slow": "Slowness is a BUG.",
}


def student(system: str) -> str:
    ticket = system.rsplit("Ticket:", 1)[-1].lower()
    prompt = system.lower()
    if "refund" in ticket:
        label = "billing" if "refund" in prompt.split("ticket:")[0] else "account"
    elif "slow" in ticket:
        label = "bug" if "slow" in prompt.split("ticket:")[0] else "account"
    elif any(w in ticket for w in ("invoice", "charge")):
        label = "billing"
    elif any(w in ticket for w in ("crash", "error", "broken")):
        label = "bug"
    else:
        label = "account"
    return f"LABEL: {label.upper()}" if "label:" in prompt else label


def teacher(meta: str) -> str:
    """Reads any reflection prompt (ours or gepa's): the current text is its first fenced block,
    the examples and feedback follow it; it adds the rules those reveal."""
    current = re.search(r"```[^\n]*\n(.*?)\n```", meta, re.S)
    text = current.group(1) if current else START
    rest = meta[current.end() :] if current else meta
    head, _, tail = text.rpartition("Ticket: {ticket}")
    rules = [line for line in head.splitlines() if line.strip()]
    if "LABEL:" in rest and FORMAT_RULE not in rules:
        rules.append(FORMAT_RULE)
    for word, rule in RULES.items():
        if word in rest.lower() and rule not in rules:
            rules.append(rule)
    return "```\n" + "\n".join(rules) + "\nTicket: {ticket}" + tail + "\n```"


def answer(body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"]
    return teacher(text) if body["model"] == "teacher" else student(text)


# --- the run ---------------------------------------------------------------------------------


def split(args: argparse.Namespace) -> tuple[list[Example], list[Example], list[Example]]:
    data = make_task(args.examples, args.seed)
    n = len(data)
    return data[: n // 3], data[n // 3 : 2 * n // 3], data[2 * n // 3 :]


async def run_ours(
    student_llm: Any, teacher_llm: Any, args: argparse.Namespace, budget: int
) -> None:
    train, val, test = split(args)
    task = Triage().with_llm(student_llm)
    before = await evaluate(task, test, metric, progress=False)
    result = await fit(
        task,
        train,
        metric,
        optimizer=Reflective(teacher=teacher_llm, minibatch_size=args.minibatch, seed=args.seed),
        valset=val,
        budget=budget,
        progress=False,
    )
    after = await evaluate(task, test, metric, progress=False)
    accepted = sum(1 for e in result.history[1:] if e["accepted"])
    print(
        f"promptimus Reflective, budget {budget}: test {before.score:.3f} -> {after.score:.3f}; "
        f"{result.calls} module calls, {len(result.history) - 1} steps ({accepted} accepted), "
        f"{result.usage.total_tokens} tokens"
    )
    if args.show_prompt:
        print(task.classify.prompt.value)


async def run_gepa(student_llm: Any, teacher_llm: Any, args: argparse.Namespace) -> int | None:
    """The same task, student, teacher and budget through gepa's optimizer (its default
    reflective proposer and Pareto candidate selection), with gepa's metric-call budget."""
    try:
        import gepa
        from gepa.core.adapter import EvaluationBatch
    except ImportError:
        print("gepa: not installed (uv run --group bench ...); skipped")
        return None
    from promptimus.dto import Message, MessageRole

    train, val, test = split(args)
    task = Triage().with_llm(student_llm)
    loop = asyncio.get_running_loop()

    def on_loop(coro: Any) -> Any:  # gepa is synchronous: it runs in a thread, we on the loop
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=600)

    class Adapter:
        propose_new_texts = None

        def evaluate(
            self, batch: list[Example], candidate: dict[str, str], capture_traces: bool = False
        ) -> Any:
            task.classify.prompt.value = candidate["classify"]
            report = on_loop(evaluate(task, batch, metric, progress=False))
            rows = list(report.rows)
            traces = [
                {
                    "ticket": r.inputs["ticket"],
                    "output": str(getattr(r.output, "content", r.output)),
                    "feedback": r.feedback or "correct",
                }
                for r in rows
            ]
            return EvaluationBatch(
                outputs=[t["output"] for t in traces],
                scores=[float(r.score) for r in rows],
                trajectories=traces if capture_traces else None,
            )

        def make_reflective_dataset(
            self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
        ) -> dict[str, list[dict[str, Any]]]:
            records = [
                {"Inputs": t["ticket"], "Generated Outputs": t["output"], "Feedback": t["feedback"]}
                for t in eval_batch.trajectories or []
            ]
            return {name: records for name in components_to_update}

    def reflect(prompt: Any) -> str:
        text = prompt if isinstance(prompt, str) else str(prompt)
        reply = on_loop(teacher_llm.achat([Message(role=MessageRole.USER, content=text)]))
        return str(reply.content)

    before = await evaluate(task, test, metric, progress=False)
    result = await asyncio.to_thread(
        gepa.optimize,
        seed_candidate={"classify": START},
        trainset=train,
        valset=val,
        adapter=Adapter(),
        reflection_lm=reflect,
        reflection_minibatch_size=args.minibatch,
        max_metric_calls=args.budget,
        seed=args.seed,
        display_progress_bar=False,
        logger=_Quiet(),
    )
    best = result.best_candidate
    task.classify.prompt.value = best["classify"] if isinstance(best, dict) else best
    after = await evaluate(task, test, metric, progress=False)
    spent = int(result.total_metric_calls or 0)
    print(
        f"gepa, max_metric_calls {args.budget}: test {before.score:.3f} -> {after.score:.3f}; "
        f"{spent} metric calls (gepa checks its budget between iterations, so it may pass it)"
    )
    if args.show_prompt:
        print(task.classify.prompt.value)
    return spent


class _Quiet:
    def log(self, *args: Any, **kwargs: Any) -> None:
        pass


async def run(student_llm: Any, teacher_llm: Any, args: argparse.Namespace) -> None:
    train, val, test = split(args)
    print(f"task: {len(train)} train / {len(val)} val / {len(test)} test, budget {args.budget}")
    await run_ours(student_llm, teacher_llm, args, args.budget)
    spent = await run_gepa(student_llm, teacher_llm, args)
    if spent is not None and spent > args.budget:  # compare at what gepa actually spent too
        await run_ours(student_llm, teacher_llm, args, spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="student model, provider:name (default: fake server)")
    parser.add_argument("--teacher", help="teacher model (default: the student model)")
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--minibatch", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-prompt", action="store_true", help="print the trained prompts")
    args = parser.parse_args()
    if args.model:
        from promptimus.llms.resolve import resolve

        asyncio.run(run(resolve(args.model), resolve(args.teacher or args.model), args))
        return
    from promptimus.llms.openai import OpenAILike
    from promptimus.testing import FakeOpenAIServer

    with FakeOpenAIServer() as srv:
        srv.chat.respond_with(answer)

        def llm(name: str) -> OpenAILike:
            return OpenAILike(name, api_key=srv.api_key, base_url=srv.base_url)

        asyncio.run(run(llm("student"), llm("teacher"), args))


if __name__ == "__main__":
    main()
