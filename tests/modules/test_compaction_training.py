"""`Summarize`'s prompt is trained like any parameter: a metric asks about a fact from early in
a long conversation, answered after compaction replaced that part by a summary; `fit` with a
scripted teacher improves the summary prompt, and the saved checkpoint shows the trained one.

The model behind the fake OpenAI server is scripted: as a summarizer it keeps the order
numbers of a transcript only when its instruction asks for order numbers (otherwise it writes
what a terse summary would: who wrote and how often); as the assistant it answers with the
first order number it can see."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import promptimus as pm
from promptimus import Module
from promptimus.dto import Message
from promptimus.evals import Example, Score
from promptimus.llms import OpenAILike
from promptimus.modules import Compactor, MemoryModule, Summarize
from promptimus.optim import Reflective, fit
from promptimus.optim.proposer import ProposalRequest
from promptimus.testing import FakeOpenAIServer, Reply
from promptimus.transport import RetryPolicy

WEAK = "Summarize the transcript in one short sentence."
TRAINED = "Summarize the transcript; keep every order number the user gave, verbatim."
QUESTION = "Which order number did I give first?"
SUMMARY_KEY = "chat.compactor.summarize.prompt.prompt"


def model(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    last = str(messages[-1]["content"])
    if last.startswith("Transcript:"):  # a summary request
        if "order number" in system:
            return Reply(content="Order numbers given: " + ", ".join(re.findall(r"#\d+", last)))
        return Reply(content=f"The user wrote {last.count('user:')} messages about orders.")
    seen = re.findall(r"#\d+", " ".join(str(m["content"]) for m in messages[1:]))
    return Reply(content=seen[0] if seen else "I do not know.")


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.chat.respond_with(model)
        yield server


class Support(Module):
    """A chat whose conversation is compacted once it has more than six messages: each
    example's earlier turns, then its question, in a conversation of its own."""

    def __init__(self, llm: Any) -> None:
        super().__init__()
        compactor = Compactor(Summarize(WEAK), trigger_messages=6, keep_last=1)
        self.chat = MemoryModule(100, system_prompt="You help with orders.", compactor=compactor)
        self.with_llm(llm)

    async def forward(self, orders: list[str], question: str) -> Message:
        with pm.Session():
            for order in orders:
                await self.chat(f"My order number is {order}.")
            return await self.chat(question)  # type: ignore[no-any-return]


def recall(example: Example, output: Message) -> Score:
    if output.content == example.expected:
        return Score(1.0)
    return Score(
        0.0,
        f"asked for the first order number ({example.expected}), got {output.content!r}: the "
        "order number was lost when the conversation was compacted",
    )


def examples() -> list[Example]:
    return [
        Example({"orders": [f"#{n}{k}" for k in range(1, 6)], "question": QUESTION}, f"#{n}1")
        for n in range(1, 5)
    ]


async def teacher(request: ProposalRequest) -> str:
    """Asks for what the failing rows' feedback says went missing."""
    feedback = " ".join(str(row.feedback) for row in request.rows)
    if request.path.endswith("summarize.prompt.prompt") and "order number" in feedback:
        return TRAINED
    return request.current


async def test_fit_trains_the_summary_prompt_to_keep_early_facts(
    srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm = OpenAILike(
        "fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    support = Support(llm)
    support.requires_grad_(False)
    support.chat.compactor.summarize.requires_grad_(True)  # type: ignore[union-attr]
    assert SUMMARY_KEY in support.state_dict()

    result = await fit(
        support,
        examples(),
        recall,
        optimizer=Reflective(propose=teacher),
        budget=40,
        checkpoint_dir=tmp_path,
        progress=False,
        concurrency=2,
    )

    assert result.baseline_score == 0.0
    assert result.best_score == 1.0
    assert support.state_dict()[SUMMARY_KEY] == TRAINED
    assert TRAINED[:40] in str(support)  # print(module) shows the trained text
    assert result.checkpoint_path is not None
    assert TRAINED in result.checkpoint_path.read_text()
    fresh = Support(llm)
    assert fresh.state_dict()[SUMMARY_KEY] == WEAK
    fresh.load(result.checkpoint_path)
    assert fresh.state_dict()[SUMMARY_KEY] == TRAINED
    summaries = [b for b in srv.chat.requests if str(b["messages"][-1]["content"]).startswith("T")]
    assert summaries  # the answers really went through compaction
    assert all("tools" not in body for body in summaries)
