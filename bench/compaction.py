"""What compaction does to a long tool-using conversation: a 300-turn conversation, each turn a
user message stating a fact (``fact-N``), one reply calling ``lookup`` twice (about 150 words
each), the two results and an answer, against the fake OpenAI server with an 8k-token context
window (one token a word, as the fake counts) and its orphan check (a tool result without its
call, or a call without its results, is refused with a 400).

    uv run python bench/compaction.py [--turns 300] [--window 8000]

Four ways to keep the conversation:

- ``none``: the whole conversation, no compaction. Run against the fake without a window, so
  every turn goes through and its requests' sizes are what the conversation really grows to;
  the requests over the window are those an 8k server would refuse.
- ``window``: the old way, a memory that keeps the last 60 messages (no compactor).
- ``clear``: ``Compactor(ClearToolResults(), ClearThinking())``, the cheap steps only.
- ``summarize``: ``Compactor()``, the cheap steps then ``Summarize``.

Both compactors fire at 75 % of the window (``trigger_fraction=0.75``, ``context_window=``).
Printed for each: overflows (requests the server refused as too large), orphan rejections,
the largest request and the mean request per block of 50 turns (in the fake's tokens), the
compaction's own tokens (its summary requests) against the tokens it saved (what the same
requests carried in ``none`` minus what they carried here), and, once the conversation is
over, how many of the first 50 facts a probe request still carries to the model (none when the
server refuses the probe).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from long_conversation import lookup, openai_responder, turn_text

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import ContextWindowExceeded, PromptimusError
from promptimus.llms import OpenAILike
from promptimus.modules import ClearThinking, ClearToolResults, Compactor
from promptimus.testing import FakeOpenAIServer
from promptimus.transport import RetryPolicy

EARLY = 50
BLOCK = 50
PROBE = "Probe: which facts do you remember?"


@dataclass
class Outcome:
    name: str
    overflows: int = 0
    rejections: int = 0
    other: list[str] = field(default_factory=list)
    turn_tokens: list[int] = field(default_factory=list)  # prompt tokens sent per turn (0: failed)
    largest: int = 0
    over_window: int = 0
    compactions: int = 0
    compaction_tokens: int = 0
    early_found: int = 0


def agent_for(srv: FakeOpenAIServer, kind: str, window: int) -> OpenaiToolCallingAgent:
    llm = OpenAILike(
        "fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    compactor = None
    trigger: dict[str, Any] = {"trigger_fraction": 0.75, "context_window": window}
    if kind == "clear":
        compactor = Compactor(ClearToolResults(), ClearThinking(), **trigger)
    elif kind == "summarize":
        compactor = Compactor(**trigger)
    memory = 60 if kind == "window" else 1_000_000
    agent = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=memory, compactor=compactor
    )
    return agent.with_llm(llm)


async def play(kind: str, turns: int, window: int) -> Outcome:
    outcome = Outcome(kind)
    # "none" goes through a server without a window: its requests' real sizes are the baseline
    with FakeOpenAIServer(
        context_window=None if kind == "none" else window, record=kind != "none"
    ) as srv:
        srv.chat.respond_with(openai_responder)
        agent = agent_for(srv, kind, window)
        for n in range(1, turns + 1):
            try:
                result = await agent.run(turn_text(n))
            except ContextWindowExceeded:
                outcome.overflows += 1
                outcome.turn_tokens.append(0)
                continue
            except PromptimusError as exc:
                if "tool" in str(exc).lower():
                    outcome.rejections += 1
                else:
                    outcome.other.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                outcome.turn_tokens.append(0)
                continue
            record = result.record
            sizes = [step.usage.prompt_tokens for step in record.steps if step.usage]
            outcome.largest = max([outcome.largest, *sizes])
            outcome.over_window += sum(size > window for size in sizes)
            outcome.turn_tokens.append(sum(sizes))
            outcome.compactions += len(record.compactions)
            outcome.compaction_tokens += sum(c.usage.total_tokens for c in record.compactions)
        if kind != "none":
            sent = len(srv.chat.requests)
            try:
                await agent.run(PROBE)
                answered = True
            except PromptimusError:  # a refused probe carries nothing to the model
                answered = False
            tools = [body for body in srv.chat.requests[sent:] if "tools" in body]
            if answered and tools:
                text = " ".join(str(m.get("content")) for m in tools[0]["messages"])
                found = {int(f) for f in re.findall(r"fact-(\d+)", text)}
                outcome.early_found = len({f for f in found if f <= EARLY})
    return outcome


def blocks(tokens: list[int]) -> str:
    parts = []
    for start in range(0, len(tokens), BLOCK):
        chunk = [t for t in tokens[start : start + BLOCK] if t]
        mean = sum(chunk) // len(chunk) if chunk else 0
        parts.append(f"{mean:,}")
    return " / ".join(parts)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=8000)
    args = parser.parse_args()
    outcomes = {}
    for kind in ("none", "window", "clear", "summarize"):
        outcomes[kind] = await play(kind, args.turns, args.window)
        print(f"{kind}: done", file=sys.stderr, flush=True)
    baseline = outcomes["none"].turn_tokens
    print(f"{args.turns} turns, 2 tool calls each, {args.window:,}-token window")
    print(f"tokens sent per turn: mean of each block of {BLOCK} turns (turns that went through)")
    for kind, out in outcomes.items():
        print(f"\n[{kind}]")
        if kind == "none":
            print(f"  requests over the window: {out.over_window} (an 8k server refuses them)")
        else:
            print(f"  overflows: {out.overflows}   orphan rejections: {out.rejections}")
        if out.other:
            print(f"  other errors: {len(out.other)}, first: {out.other[0]}")
        print(f"  largest request: {out.largest:,} tokens")
        print(f"  per turn: {blocks(out.turn_tokens)}")
        if kind in ("clear", "summarize"):
            saved = sum(
                base - sent for base, sent in zip(baseline, out.turn_tokens, strict=True) if sent
            )
            print(
                f"  compactions: {out.compactions}, their own tokens: {out.compaction_tokens:,}; "
                f"tokens saved on the turns that went through: {saved:,}"
            )
        if kind != "none":
            print(f"  early facts (1-{EARLY}) the probe still carries: {out.early_found}")


if __name__ == "__main__":
    asyncio.run(main())
