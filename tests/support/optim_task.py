"""A tiny task for the optimizer tests: repeat a word, in uppercase. The scripted student does
what its system prompt says: it writes uppercase only when the prompt mentions "uppercase" (or
"capitals", then only for words of up to three letters), and writes nothing when the prompt
says "silent". The baseline prompt mentions neither."""

from __future__ import annotations

from typing import Any

from promptimus import Module, Parameter
from promptimus.dto import Message
from promptimus.evals import Example, Score
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt

BASELINE = "Repeat the word: {text}"
GOOD = "Repeat the word in uppercase: {text}"
SILENT = "Stay silent about: {text}"
PARTIAL = "Repeat short words in capitals: {text}"
SECRET = "FROZEN-SECRET-NOTE"


def student_reply(history: list[Message], kwargs: dict[str, Any]) -> str:
    system = history[0].content
    word = system.rsplit(":", 1)[-1].strip()
    if "silent" in system:
        return ""
    if "uppercase" in system or ("capitals" in system and len(word) <= 3):
        return word.upper()
    return word


def make_student() -> ScriptedLLM:
    return ScriptedLLM(student_reply, model_name="student")


class Task(Module):
    def __init__(self, llm: Any) -> None:
        super().__init__()
        self.note = Parameter(SECRET, frozen=True)
        self.instr = Prompt(BASELINE)
        self.with_llm(llm)

    async def forward(self, text: str) -> Message:
        return await self.instr(text=text)  # type: ignore[no-any-return]


def metric(example: Example, output: Message) -> Score:
    if output.content == example.expected:
        return Score(1.0)
    return Score(
        0.0, f"expected {example.expected!r}, got {output.content!r}: answers must be uppercase"
    )


WORDS = ["apple", "Bird", "CAT", "dog", "EEL", "fig", "goat", "HEN", "ink", "jam", "KIT", "log"]


def dataset(words: list[str] = WORDS) -> list[Example]:
    return [Example({"text": w}, expected=w.upper()) for w in words]


def fence(text: str) -> str:
    return f"Here you go:\n```text\n{text}\n```\nHope it helps."
