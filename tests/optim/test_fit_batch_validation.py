"""fit(batch_validation=...) scores the validation set through the Batch API (on the fake
server, with the real openai SDK) and trains to the same result as the direct path."""

from __future__ import annotations

import json
from typing import Any

from optim_task import GOOD, Task, dataset, fence, metric

from promptimus.evals import BatchOptions
from promptimus.llms.openai import OpenAILike
from promptimus.optim import Reflective, fit
from promptimus.testing import FakeOpenAIServer


def answer(body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"]
    if body["model"] == "teacher":
        return fence(GOOD) if "answers must be uppercase" in text else "no idea"
    word = text.rsplit(":", 1)[-1].strip()
    return word.upper() if "uppercase" in text else word


async def _train(srv: FakeOpenAIServer, **batch: Any) -> tuple[Any, Task]:
    def llm(model: str) -> OpenAILike:
        return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)

    async def no_wait(seconds: float) -> None:
        return None

    task = Task(llm("student"))
    data = dataset()
    if batch:
        batch = {"batch_validation": BatchOptions(poll_interval=1.0, sleep=no_wait)}
    result = await fit(
        task,
        data[:4],
        metric,
        optimizer=Reflective(teacher=llm("teacher"), minibatch_size=4),
        valset=data[4:8],
        budget=16,
        progress=False,
        **batch,
    )
    return result, task


def _words(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"].rsplit(":", 1)[-1].strip())


async def test_validation_goes_in_batches_and_training_ends_the_same() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.respond_with(answer)
        direct, _ = await _train(srv)
        assert not srv.batches.batches
        srv.clear()
        srv.chat.respond_with(answer)
        batched, task = await _train(srv, batch_validation=True)

        assert (batched.baseline_score, batched.best_score) == (0.5, 1.0)  # EEL, HEN right
        assert (direct.baseline_score, direct.best_score) == (0.5, 1.0)
        assert [(h["val_scores"], h["accepted"]) for h in batched.history] == [
            (h["val_scores"], h["accepted"]) for h in direct.history
        ]
        assert batched.calls == direct.calls
        assert task.instr.prompt.value == GOOD
        # the baseline and the kept candidate's validation: two batches of the 4 validation
        # examples; the minibatches of the training set went directly
        assert len(srv.batches.batches) == 2
        val = {e.inputs["text"] for e in dataset()[4:8]}
        batched_words: list[str] = []
        for file in srv.batches.files.values():
            if file.purpose == "batch":
                lines = file.content.decode().splitlines()
                batched_words += [_words(json.loads(line)["body"]) for line in lines]
        assert sorted(batched_words) == sorted(list(val) * 2)
        assert batched.usage.total_tokens == direct.usage.total_tokens
